package policy

import (
	"strings"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/policy/imageref"
)

// imageRule is a compiled v1alpha1.ImageRule.
type imageRule struct {
	prefixes []string // normalised; malformed entries are dropped
	text     string   // the entries as written, for messages
}

func compileImageRule(r *v1alpha1.ImageRule) *imageRule {
	if r == nil {
		return nil
	}
	ir := &imageRule{text: strings.Join(r.AllowedPrefixes, ", ")}
	for _, p := range r.AllowedPrefixes {
		if n, err := imageref.NormalizePrefix(p); err == nil {
			ir.prefixes = append(ir.prefixes, n)
		}
	}
	return ir
}

// check says why ref is not allowed, "" when it is: "image
// docker.io/evil/x:1 is not from an allowed registry (allowed: ...)".
func (r *imageRule) check(ref string) string {
	if r == nil {
		return ""
	}
	repo, suffix, err := imageref.Normalize(ref)
	if err != nil {
		return "image " + quoteRef(ref) + " is not a valid reference: " + err.Error()
	}
	for _, p := range r.prefixes {
		if imageref.Matches(p, repo) {
			return ""
		}
	}
	return "image " + repo + suffix + " is not from an allowed registry (allowed: " + r.text + ")"
}

func quoteRef(s string) string { return "\"" + s + "\"" }
