package policy

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berthdev/berth/api/policy/v1alpha1"
)

// objectRule is a compiled v1alpha1.ObjectRule.
type objectRule struct {
	allowed, denied       []string
	allowedSel, deniedSel labels.Selector // nil when unset
	// The reasons, built once: selection asks about hundreds of classes
	// per decision.
	notAllowed   string   // "not in nvidia-a100-*, labels tier=standard"
	deniedWhy    []string // per denied entry, "denied by <entry>"
	deniedSelWhy string   // "denied by labels <selector>"
}

// compileObjectRule parses the rule's selectors; nil allows everything.
func compileObjectRule(r *v1alpha1.ObjectRule) (*objectRule, error) {
	if r == nil {
		return nil, nil
	}
	o := &objectRule{allowed: r.Allowed, denied: r.Denied}
	var err error
	if r.AllowedSelector != nil {
		if o.allowedSel, err = metav1.LabelSelectorAsSelector(r.AllowedSelector); err != nil {
			return nil, err
		}
	}
	if r.DeniedSelector != nil {
		if o.deniedSel, err = metav1.LabelSelectorAsSelector(r.DeniedSelector); err != nil {
			return nil, err
		}
	}
	parts := append([]string(nil), r.Allowed...)
	if o.allowedSel != nil {
		parts = append(parts, "labels "+o.allowedSel.String())
	}
	o.notAllowed = "not in " + strings.Join(parts, ", ")
	for _, d := range r.Denied {
		o.deniedWhy = append(o.deniedWhy, "denied by "+d)
	}
	if o.deniedSel != nil {
		o.deniedSelWhy = "denied by labels " + o.deniedSel.String()
	}
	return o, nil
}

// check says why the object is not allowed, "" when it is. The reasons
// read after "forbidden by ServingPolicy/<name>: ": "not in
// nvidia-a100-*", "denied by nvidia-h100-*", "denied by labels tier=premium".
func (o *objectRule) check(name string, lbls map[string]string) string {
	if o == nil {
		return ""
	}
	for i, p := range o.denied {
		if nameMatches(p, name) {
			return o.deniedWhy[i]
		}
	}
	if o.deniedSel != nil && o.deniedSel.Matches(labels.Set(lbls)) {
		return o.deniedSelWhy
	}
	if len(o.allowed) == 0 && o.allowedSel == nil {
		return ""
	}
	for _, p := range o.allowed {
		if nameMatches(p, name) {
			return ""
		}
	}
	if o.allowedSel != nil && o.allowedSel.Matches(labels.Set(lbls)) {
		return ""
	}
	return o.notAllowed
}

// nameMatches: a pattern ending in "*" matches every name with the prefix
// before it; any other pattern matches itself.
func nameMatches(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}
