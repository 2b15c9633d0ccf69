package selection

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size units are decimal, as model cards write them: 7B is 7,000,000,000
// parameters. They are case-insensitive because a peer silently read "9b"
// and "500K" as 0 and so placed models on the wrong runtime.
var sizeUnits = map[byte]int64{
	'k': 1_000,
	'm': 1_000_000,
	'b': 1_000_000_000,
	't': 1_000_000_000_000,
}

// ParseSize reads a parameter count such as 500M, 7B, 7.6B, 1.5T or 500K (any
// case, surrounding spaces allowed) or a plain integer. The result is exact:
// the fraction is parsed as decimal digits, never through a float, so 7.6B is
// 7,600,000,000 and not 7,599,999,999. Digits beyond the unit's precision
// (7.0000000001B) are an error rather than a silent truncation.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("size %q is empty; write a count such as 500M, 7B, 7.6B or 1.5T", s)
	}
	unit := int64(1)
	last := t[len(t)-1]
	if last >= 'A' && last <= 'Z' {
		last += 'a' - 'A'
	}
	if u, ok := sizeUnits[last]; ok {
		unit = u
		t = strings.TrimSpace(t[:len(t)-1])
	}
	intPart, fracPart, hasDot := strings.Cut(t, ".")
	if intPart == "" || !allDigits(intPart) || (hasDot && (fracPart == "" || !allDigits(fracPart))) {
		return 0, fmt.Errorf("size %q is not a number with an optional K, M, B or T suffix (e.g. 500M, 7B, 7.6B, 1.5T)", s)
	}
	whole, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || whole > math.MaxInt64/unit {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	n := whole * unit
	if hasDot {
		// Each fraction digit is worth unit/10^i; a digit below one
		// parameter cannot be represented.
		place := unit
		for i := 0; i < len(fracPart); i++ {
			d := int64(fracPart[i] - '0')
			place /= 10
			if place == 0 {
				if d != 0 {
					return 0, fmt.Errorf("size %q has more decimals than its unit allows", s)
				}
				continue
			}
			if n > math.MaxInt64-d*place {
				return 0, fmt.Errorf("size %q is too large", s)
			}
			n += d * place
		}
	}
	return n, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatSize writes a parameter count the way users write it: the largest
// unit that keeps the number at least 1, with an exact decimal fraction and
// no trailing zeros (7600000000 → "7.6B", 500000 → "500K", 12 → "12").
// ParseSize(FormatSize(n)) == n for every n ≥ 0.
func FormatSize(n int64) string {
	if n < 0 {
		return strconv.FormatInt(n, 10)
	}
	for _, u := range []struct {
		suffix string
		value  int64
	}{{"T", 1_000_000_000_000}, {"B", 1_000_000_000}, {"M", 1_000_000}, {"K", 1_000}} {
		if n < u.value {
			continue
		}
		whole, rest := n/u.value, n%u.value
		if rest == 0 {
			return strconv.FormatInt(whole, 10) + u.suffix
		}
		width := len(strconv.FormatInt(u.value, 10)) - 1
		frac := strings.TrimRight(fmt.Sprintf("%0*d", width, rest), "0")
		return strconv.FormatInt(whole, 10) + "." + frac + u.suffix
	}
	return strconv.FormatInt(n, 10)
}

// sizeRange is a parsed modelSizeRange; a nil bound is open.
type sizeRange struct {
	min, max *int64
}

func (r sizeRange) set() bool { return r.min != nil || r.max != nil }

func (r sizeRange) contains(n int64) bool {
	return (r.min == nil || n >= *r.min) && (r.max == nil || n <= *r.max)
}

// overlaps reports whether some size lies in both ranges (bounds inclusive).
func (r sizeRange) overlaps(o sizeRange) bool {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	for _, b := range []*int64{r.min, o.min} {
		if b != nil && *b > lo {
			lo = *b
		}
	}
	for _, b := range []*int64{r.max, o.max} {
		if b != nil && *b < hi {
			hi = *b
		}
	}
	return lo <= hi
}

// closeness ranks ranges for "the range closest to the model size": fewer
// open bounds first, then the smaller sum of distances from the size to the
// bounds (for a size inside a two-sided range that is its width, so the
// tightest fitting runtime wins). A runtime without a range ranks last.
func (r sizeRange) closeness(n int64) (open int, dist uint64) {
	for _, b := range []*int64{r.min, r.max} {
		if b == nil {
			open++
			continue
		}
		if *b > n {
			dist += uint64(*b - n)
		} else {
			dist += uint64(n - *b)
		}
	}
	return open, dist
}

func (r sizeRange) String() string {
	bound := func(b *int64) string {
		if b == nil {
			return "unbounded"
		}
		return FormatSize(*b)
	}
	switch {
	case r.min != nil && r.max != nil:
		return "[" + bound(r.min) + ", " + bound(r.max) + "]"
	case r.min != nil:
		return "at least " + bound(r.min)
	case r.max != nil:
		return "at most " + bound(r.max)
	}
	return "any size"
}
