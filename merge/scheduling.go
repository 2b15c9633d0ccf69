package merge

import (
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// MergeNodeSelector sets over's keys on base (later layers win per key).
func MergeNodeSelector(base, over map[string]string) map[string]string {
	if len(over) == 0 {
		return base
	}
	if base == nil {
		base = make(map[string]string, len(over))
	}
	for k, v := range over {
		base[k] = v
	}
	return base
}

// MergeTolerations unions tolerations, keeping base's order and dropping
// exact duplicates.
func MergeTolerations(base, over []corev1.Toleration) []corev1.Toleration {
	for _, t := range over {
		if !slices.ContainsFunc(base, func(b corev1.Toleration) bool { return reflect.DeepEqual(b, t) }) {
			base = append(base, *t.DeepCopy())
		}
	}
	return base
}

// MergeAffinity ANDs two affinities. Kubernetes ORs the terms of a required
// node selector, so AND is the cross product of the terms with their
// requirements concatenated; a term that is a superset of another one is
// dropped (it adds nothing to an OR), which also keeps the merge idempotent.
// Preferred terms and pod (anti-)affinity terms, which Kubernetes already
// ANDs or sums, are unioned.
func MergeAffinity(base, over *corev1.Affinity) *corev1.Affinity {
	if over == nil {
		return base
	}
	if base == nil {
		return over.DeepCopy()
	}
	out := base.DeepCopy()
	if over.NodeAffinity != nil {
		if out.NodeAffinity == nil {
			out.NodeAffinity = &corev1.NodeAffinity{}
		}
		na, o := out.NodeAffinity, over.NodeAffinity
		na.RequiredDuringSchedulingIgnoredDuringExecution = AndNodeSelectors(na.RequiredDuringSchedulingIgnoredDuringExecution, o.RequiredDuringSchedulingIgnoredDuringExecution)
		na.PreferredDuringSchedulingIgnoredDuringExecution = unionDeep(na.PreferredDuringSchedulingIgnoredDuringExecution, o.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if over.PodAffinity != nil {
		if out.PodAffinity == nil {
			out.PodAffinity = &corev1.PodAffinity{}
		}
		pa, o := out.PodAffinity, over.PodAffinity
		pa.RequiredDuringSchedulingIgnoredDuringExecution = unionDeep(pa.RequiredDuringSchedulingIgnoredDuringExecution, o.RequiredDuringSchedulingIgnoredDuringExecution)
		pa.PreferredDuringSchedulingIgnoredDuringExecution = unionDeep(pa.PreferredDuringSchedulingIgnoredDuringExecution, o.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if over.PodAntiAffinity != nil {
		if out.PodAntiAffinity == nil {
			out.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		pa, o := out.PodAntiAffinity, over.PodAntiAffinity
		pa.RequiredDuringSchedulingIgnoredDuringExecution = unionDeep(pa.RequiredDuringSchedulingIgnoredDuringExecution, o.RequiredDuringSchedulingIgnoredDuringExecution)
		pa.PreferredDuringSchedulingIgnoredDuringExecution = unionDeep(pa.PreferredDuringSchedulingIgnoredDuringExecution, o.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}

// AndNodeSelectors returns a node selector that matches the nodes both a and
// b match. A nil or term-less selector places no constraint.
func AndNodeSelectors(a, b *corev1.NodeSelector) *corev1.NodeSelector {
	if b == nil || len(b.NodeSelectorTerms) == 0 {
		return a
	}
	if a == nil || len(a.NodeSelectorTerms) == 0 {
		return &corev1.NodeSelector{NodeSelectorTerms: simplifyTerms(b.DeepCopy().NodeSelectorTerms)}
	}
	terms := make([]corev1.NodeSelectorTerm, 0, len(a.NodeSelectorTerms)*len(b.NodeSelectorTerms))
	for _, ta := range a.NodeSelectorTerms {
		for _, tb := range b.NodeSelectorTerms {
			t := ta.DeepCopy()
			for _, r := range tb.MatchExpressions {
				if !slices.ContainsFunc(t.MatchExpressions, sameRequirement(r)) {
					t.MatchExpressions = append(t.MatchExpressions, *r.DeepCopy())
				}
			}
			for _, r := range tb.MatchFields {
				if !slices.ContainsFunc(t.MatchFields, sameRequirement(r)) {
					t.MatchFields = append(t.MatchFields, *r.DeepCopy())
				}
			}
			terms = append(terms, *t)
		}
	}
	return &corev1.NodeSelector{NodeSelectorTerms: simplifyTerms(terms)}
}

// requirementKey is a canonical form of a requirement: values as a set.
func requirementKey(r corev1.NodeSelectorRequirement) string {
	vals := slices.Clone(r.Values)
	slices.Sort(vals)
	vals = slices.Compact(vals)
	return r.Key + "\x00" + string(r.Operator) + "\x00" + strings.Join(vals, "\x00")
}

func sameRequirement(r corev1.NodeSelectorRequirement) func(corev1.NodeSelectorRequirement) bool {
	k := requirementKey(r)
	return func(o corev1.NodeSelectorRequirement) bool { return requirementKey(o) == k }
}

// termSet is a term's requirements as a set, expressions and fields apart.
func termSet(t corev1.NodeSelectorTerm) map[string]bool {
	s := make(map[string]bool, len(t.MatchExpressions)+len(t.MatchFields))
	for _, r := range t.MatchExpressions {
		s["e"+requirementKey(r)] = true
	}
	for _, r := range t.MatchFields {
		s["f"+requirementKey(r)] = true
	}
	return s
}

// simplifyTerms drops terms implied by another (supersets and duplicates),
// keeping the first of equal terms and the original order.
func simplifyTerms(terms []corev1.NodeSelectorTerm) []corev1.NodeSelectorTerm {
	sets := make([]map[string]bool, len(terms))
	for i, t := range terms {
		sets[i] = termSet(t)
	}
	subset := func(a, b map[string]bool) bool { // a ⊆ b
		for k := range a {
			if !b[k] {
				return false
			}
		}
		return true
	}
	out := terms[:0:0]
	for i := range terms {
		redundant := false
		for j := range terms {
			if i == j || !subset(sets[j], sets[i]) {
				continue
			}
			// j is at most as strict as i; drop i unless they are equal and
			// i comes first.
			if len(sets[j]) < len(sets[i]) || j < i {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, terms[i])
		}
	}
	return out
}

// unionDeep appends over's items that base lacks (deep equality).
func unionDeep[T any](base, over []T) []T {
	for _, item := range over {
		if !slices.ContainsFunc(base, func(b T) bool { return reflect.DeepEqual(b, item) }) {
			base = append(base, item)
		}
	}
	return base
}

// ClassPlacement is where an AcceleratorClass's discovery lets a pod run,
// by the rule selection uses to find the class's nodes: the nodeSelector
// pattern (discovery.nodeSelector with the spec.nodeSelector shorthand,
// ANDed) and each discovery.nodeSelectorTerm are alternatives, so a node of
// the class matches any one of them (OEP-0003 calls the terms "alternative
// discovery patterns"). Without terms the pattern is a plain nodeSelector.
// With terms the whole rule is the class's required node affinity: the
// pattern becomes one more term, left out when a term already admits every
// node the pattern matches. A key the two selectors give different values
// matches no node, as in selection. Other layers are ANDed with the result.
func ClassPlacement(spec *v1beta1.AcceleratorClassSpec) (map[string]string, *corev1.Affinity) {
	pattern, conflict := classPattern(spec)
	terms := spec.Discovery.NodeSelectorTerms
	if len(terms) == 0 && !conflict {
		if len(pattern) == 0 {
			return nil, nil
		}
		ns := make(map[string]string, len(pattern))
		for _, r := range pattern {
			ns[r.Key] = r.Values[0]
		}
		return ns, nil
	}
	var out []corev1.NodeSelectorTerm
	if len(pattern) > 0 && !slices.ContainsFunc(terms, func(t corev1.NodeSelectorTerm) bool { return impliedBy(t, pattern) }) {
		out = append(out, corev1.NodeSelectorTerm{MatchExpressions: pattern})
	}
	out = append(out, cloneTerms(terms)...)
	return nil, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: out},
	}}
}

// classPattern is the class's nodeSelector pattern as In requirements
// sorted by key; conflict reports a key with two different values.
func classPattern(spec *v1beta1.AcceleratorClassSpec) ([]corev1.NodeSelectorRequirement, bool) {
	var reqs []corev1.NodeSelectorRequirement
	conflict := false
	for _, m := range []map[string]string{spec.Discovery.NodeSelector, spec.NodeSelector} {
		for k, v := range m {
			i := slices.IndexFunc(reqs, func(r corev1.NodeSelectorRequirement) bool { return r.Key == k })
			switch {
			case i < 0:
				reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}})
			case reqs[i].Values[0] != v:
				conflict = true
				reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}})
			}
		}
	}
	slices.SortStableFunc(reqs, func(a, b corev1.NodeSelectorRequirement) int {
		return strings.Compare(a.Key+"\x00"+a.Values[0], b.Key+"\x00"+b.Values[0])
	})
	return reqs, conflict
}

// impliedBy reports whether every node the pattern matches also matches t.
func impliedBy(t corev1.NodeSelectorTerm, pattern []corev1.NodeSelectorRequirement) bool {
	if len(t.MatchFields) > 0 || len(t.MatchExpressions) == 0 {
		return false
	}
	value := func(k string) (string, bool) {
		i := slices.IndexFunc(pattern, func(r corev1.NodeSelectorRequirement) bool { return r.Key == k })
		if i < 0 {
			return "", false
		}
		return pattern[i].Values[0], true
	}
	for _, r := range t.MatchExpressions {
		v, ok := value(r.Key)
		switch {
		case r.Operator == corev1.NodeSelectorOpIn && ok && slices.Contains(r.Values, v):
		case r.Operator == corev1.NodeSelectorOpNotIn && ok && !slices.Contains(r.Values, v):
		case r.Operator == corev1.NodeSelectorOpExists && ok:
		default:
			return false
		}
	}
	return true
}
