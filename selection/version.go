package selection

import (
	"fmt"
	"strconv"
	"strings"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Version is major[.minor[.patch]] with the number of parts written kept as
// Precision, because a runtime that says "1" means "any 1.x.y" while one that
// says "1.0.0" means exactly that release.
type Version struct {
	Parts     [3]int64
	Precision int // 1, 2 or 3
}

// ParseVersion reads "1", "1.3", "4.36.2" or the same with a leading v or V.
// Pre-release and build suffixes are rejected: an unparseable version is a
// validation error, never a silent non-match.
func ParseVersion(s string) (Version, error) {
	t := strings.TrimSpace(s)
	if len(t) > 0 && (t[0] == 'v' || t[0] == 'V') {
		t = t[1:]
	}
	parts := strings.Split(t, ".")
	if t == "" || len(parts) > 3 {
		return Version{}, fmt.Errorf("version %q is not major, major.minor or major.minor.patch (e.g. 1, 1.3, 4.36.2, optional leading v)", s)
	}
	var v Version
	for i, p := range parts {
		if p == "" || !allDigits(p) || len(p) > 18 {
			return Version{}, fmt.Errorf("version %q is not major, major.minor or major.minor.patch (e.g. 1, 1.3, 4.36.2, optional leading v)", s)
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return Version{}, fmt.Errorf("version %q has a part that is too large", s)
		}
		v.Parts[i] = n
	}
	v.Precision = len(parts)
	return v, nil
}

func (v Version) String() string {
	var b strings.Builder
	for i := 0; i < v.Precision; i++ {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.FormatInt(v.Parts[i], 10))
	}
	return b.String()
}

// compareAt compares the first p parts; missing parts count as 0.
func compareAt(a, b Version, p int) int {
	for i := 0; i < p; i++ {
		switch {
		case a.Parts[i] < b.Parts[i]:
			return -1
		case a.Parts[i] > b.Parts[i]:
			return 1
		}
	}
	return 0
}

// versionRule is a runtime's version with its operator, read as
// "runtime OP model" on the runtime's precision: "1" Equal matches 1.3 and
// 1.0.0; "4.36" GreaterThanOrEqual matches 4.36.2 and 4.2 but not 4.37.
type versionRule struct {
	v    Version
	op   v1beta1.RuleOperator
	text string // String(), computed once for explanations
}

func (r versionRule) matches(model Version) bool {
	c := compareAt(r.v, model, r.v.Precision)
	switch r.op {
	case v1beta1.RuleOperatorGreaterThan:
		return c > 0
	case v1beta1.RuleOperatorGreaterThanOrEqual:
		return c >= 0
	default:
		return c == 0
	}
}

func (r versionRule) String() string {
	switch r.op {
	case v1beta1.RuleOperatorGreaterThan:
		return "< " + r.v.String()
	case v1beta1.RuleOperatorGreaterThanOrEqual:
		return "<= " + r.v.String()
	}
	return r.v.String()
}

// compatible reports whether some model version satisfies both rules. The
// models an Equal rule accepts are those with its prefix; the ones a
// GreaterThan(OrEqual) rule accepts are every version up to it. So two
// Equal rules are compatible when their prefixes agree; an Equal and an
// upper-bound rule when the smallest version with the Equal prefix (zeros
// after it) is accepted by the bound; two upper-bound rules always share
// 0.0.0 unless one of them accepts nothing (GreaterThan 0).
func (r versionRule) compatible(o versionRule) bool {
	isEq := func(x versionRule) bool {
		return x.op != v1beta1.RuleOperatorGreaterThan && x.op != v1beta1.RuleOperatorGreaterThanOrEqual
	}
	switch {
	case isEq(r) && isEq(o):
		p := min(r.v.Precision, o.v.Precision)
		return compareAt(r.v, o.v, p) == 0
	case isEq(r):
		return o.matches(r.v)
	case isEq(o):
		return r.matches(o.v)
	}
	zero := Version{Precision: 3}
	return r.matches(zero) && o.matches(zero)
}

func parseOperator(op *v1beta1.RuleOperator) (v1beta1.RuleOperator, error) {
	if op == nil || *op == "" {
		return v1beta1.RuleOperatorEqual, nil
	}
	switch *op {
	case v1beta1.RuleOperatorEqual, v1beta1.RuleOperatorGreaterThan, v1beta1.RuleOperatorGreaterThanOrEqual:
		return *op, nil
	}
	return "", fmt.Errorf("operator %q is not Equal, GreaterThan or GreaterThanOrEqual", string(*op))
}
