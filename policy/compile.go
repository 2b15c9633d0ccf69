package policy

import (
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// KubeSystem is always exempt.
const KubeSystem = "kube-system"

// Options for Compile.
type Options struct {
	// ExemptNamespaces are never subject to any policy; kube-system is
	// always exempt.
	ExemptNamespaces []string
}

// Set is a compiled, immutable set of policies, safe for concurrent use.
// A nil *Set has no policies.
type Set struct {
	policies []*compiled // sorted by name
	exempt   map[string]bool
	// problems: policies whose selectors did not compile (validation
	// refuses them at admission; a stored one matches nothing).
	problems []string
	// byNS caches, per namespace, the policies its labels select.
	byNS sync.Map // namespace → *nsEntry
	size int64    // approximate entries in byNS, guarded by mu
	mu   sync.Mutex
	// classWhy caches, per AcceleratorClass object (selection's objects
	// are immutable; an update is a new object), each policy's
	// acceleratorClasses verdict on it: selection asks about hundreds of
	// classes per decision. Bounded like byNS.
	classWhy  sync.Map // *v1beta1.AcceleratorClass → []string, by policy index
	classSize int64    // guarded by mu
	// withClassRules are the indexes of the policies with an
	// acceleratorClasses rule.
	withClassRules []int
}

// nsEntry is one namespace's cached selection: valid while the namespace's
// labels are the same.
type nsEntry struct {
	labels map[string]string
	pols   []*compiled // the policies the labels select, in name order
	// allServices: every one of pols applies to every service (no
	// serviceSelector), so pols is what applicable returns, shared.
	allServices bool
	// gate is the namespace's gate policies, built by the first Gate.
	gate atomic.Pointer[namespaceGate]
}

// maxCachedNamespaces bounds byNS; past it the cache starts over.
const maxCachedNamespaces = 4096

// compiled is one policy with its selectors parsed once.
type compiled struct {
	index    int // in Set.policies
	name     string
	ref      string // "ServingPolicy/<name>"
	actions  []v1alpha1.ValidationAction
	deny     bool
	nsAll    bool // no namespaceSelector (or an empty one)
	nsSel    labels.Selector
	svcAll   bool
	svcSel   labels.Selector
	classes  *objectRule
	runtimes *objectRule
	images   *imageRule
	maxSvc   *int64
	maxNS    *int64
	maxCost  *resource.Quantity
	// maxCostMilli is maxCost in thousandths, read once.
	maxCostMilli int64
	required     []string
	noCmd        bool
}

// Compile parses the policies' selectors and rules once. A policy whose
// selector does not parse (validation refuses it at admission) applies
// nowhere and is listed by Problems. A policy without validationActions
// (the CRD requires one) is treated as Deny.
func Compile(policies []*v1alpha1.ServingPolicy, opts Options) *Set {
	s := &Set{exempt: map[string]bool{KubeSystem: true}}
	for _, ns := range opts.ExemptNamespaces {
		if ns != "" {
			s.exempt[ns] = true
		}
	}
	for _, p := range policies {
		if p == nil {
			continue
		}
		c, problem := compile(p)
		if problem != "" {
			s.problems = append(s.problems, c.ref+": "+problem)
			continue
		}
		s.policies = append(s.policies, c)
	}
	sort.SliceStable(s.policies, func(i, j int) bool { return s.policies[i].name < s.policies[j].name })
	for i, c := range s.policies {
		c.index = i
		if c.classes != nil {
			s.withClassRules = append(s.withClassRules, i)
		}
	}
	sort.Strings(s.problems)
	return s
}

// classVerdicts is every policy's acceleratorClasses verdict on cl ("" for
// allowed or no rule), by policy index, computed once per class object.
func (s *Set) classVerdicts(cl *v1beta1.AcceleratorClass) []string {
	if v, ok := s.classWhy.Load(cl); ok {
		return v.([]string)
	}
	out := make([]string, len(s.policies))
	for _, i := range s.withClassRules {
		out[i] = s.policies[i].classes.check(cl.Name, cl.Labels)
	}
	s.mu.Lock()
	if s.classSize >= maxCachedNamespaces {
		s.classWhy.Clear()
		s.classSize = 0
	}
	if _, loaded := s.classWhy.Swap(cl, out); !loaded {
		s.classSize++
	}
	s.mu.Unlock()
	return out
}

func compile(p *v1alpha1.ServingPolicy) (*compiled, string) {
	sp := &p.Spec
	c := &compiled{name: p.Name, ref: "ServingPolicy/" + p.Name, actions: append([]v1alpha1.ValidationAction(nil), sp.ValidationActions...)}
	if len(c.actions) == 0 {
		c.actions = []v1alpha1.ValidationAction{v1alpha1.Deny}
	}
	for _, a := range c.actions {
		c.deny = c.deny || a == v1alpha1.Deny
	}
	var err error
	if c.nsAll, c.nsSel, err = selector(sp.NamespaceSelector); err != nil {
		return c, "spec.namespaceSelector: " + err.Error()
	}
	if c.svcAll, c.svcSel, err = selector(sp.ServiceSelector); err != nil {
		return c, "spec.serviceSelector: " + err.Error()
	}
	r := &sp.Rules
	if c.classes, err = compileObjectRule(r.AcceleratorClasses); err != nil {
		return c, "spec.rules.acceleratorClasses: " + err.Error()
	}
	if c.runtimes, err = compileObjectRule(r.Runtimes); err != nil {
		return c, "spec.rules.runtimes: " + err.Error()
	}
	c.images = compileImageRule(r.Images)
	c.maxSvc, c.maxNS = r.MaxAcceleratorsPerService, r.MaxAcceleratorsPerNamespace
	c.maxCost = r.MaxCostPerHour
	if c.maxCost != nil {
		c.maxCostMilli = c.maxCost.MilliValue()
	}
	c.required = append([]string(nil), r.RequiredLabels...)
	c.noCmd = r.AllowCommand != nil && !*r.AllowCommand
	return c, ""
}

// selector compiles a label selector; nil or empty selects everything.
func selector(ls *metav1.LabelSelector) (all bool, sel labels.Selector, err error) {
	if ls == nil || (len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0) {
		return true, nil, nil
	}
	sel, err = metav1.LabelSelectorAsSelector(ls)
	return false, sel, err
}

// Len is the number of policies in force.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.policies)
}

// Problems lists the policies Compile could not use, with why.
func (s *Set) Problems() []string {
	if s == nil {
		return nil
	}
	return s.problems
}

// Exempt reports whether a namespace is never subject to a policy.
func (s *Set) Exempt(namespace string) bool {
	if s == nil {
		return namespace == KubeSystem
	}
	return s.exempt[namespace]
}

// Subject is who a check is about. A Subject with an empty Namespace is
// the cluster as a whole (a ClusterServingRuntime): only policies without
// a namespaceSelector apply to it.
type Subject struct {
	Namespace       string
	NamespaceLabels map[string]string
	ServiceLabels   map[string]string // nil when the check is not about one service
}

// For lists the policies (by name, sorted) that apply to sub.
func (s *Set) For(sub Subject) []string {
	var out []string
	for _, c := range s.applicable(sub) {
		out = append(out, c.name)
	}
	return out
}

// applicable returns the policies that apply to sub, in name order. The
// slice may be shared with other calls: read only.
func (s *Set) applicable(sub Subject) []*compiled {
	e := s.namespaceEntry(sub)
	if e == nil {
		return nil
	}
	if e.allServices {
		return e.pols
	}
	out := make([]*compiled, 0, len(e.pols))
	for _, c := range e.pols {
		if c.svcAll || (sub.ServiceLabels != nil && c.svcSel.Matches(labels.Set(sub.ServiceLabels))) {
			out = append(out, c)
		}
	}
	return out
}

// namespaceEntry is sub's namespaceMatches, nil when no policy can apply
// (no policies, or an exempt namespace).
func (s *Set) namespaceEntry(sub Subject) *nsEntry {
	if s == nil || len(s.policies) == 0 || s.exempt[sub.Namespace] {
		return nil
	}
	return s.namespaceMatches(sub)
}

// namespaceMatches gives the policies whose namespace selector matches
// sub, cached per namespace while its labels stay the same.
func (s *Set) namespaceMatches(sub Subject) *nsEntry {
	if sub.Namespace == "" {
		e := &nsEntry{allServices: true}
		for _, c := range s.policies {
			if c.nsAll {
				e.add(c)
			}
		}
		return e
	}
	if v, ok := s.byNS.Load(sub.Namespace); ok {
		if e := v.(*nsEntry); sameLabels(e.labels, sub.NamespaceLabels) {
			return e
		}
	}
	e := &nsEntry{allServices: true}
	set := labels.Set(sub.NamespaceLabels)
	for _, c := range s.policies {
		if c.nsAll || c.nsSel.Matches(set) {
			e.add(c)
		}
	}
	e.labels = make(map[string]string, len(sub.NamespaceLabels))
	for k, v := range sub.NamespaceLabels {
		e.labels[k] = v
	}
	s.mu.Lock()
	if s.size >= maxCachedNamespaces {
		s.byNS.Clear()
		s.size = 0
	}
	if _, loaded := s.byNS.Swap(sub.Namespace, e); !loaded {
		s.size++
	}
	s.mu.Unlock()
	return e
}

func (e *nsEntry) add(c *compiled) {
	e.pols = append(e.pols, c)
	e.allServices = e.allServices && c.svcAll
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
