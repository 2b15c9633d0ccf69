package policy

import (
	"math"

	"k8s.io/apimachinery/pkg/labels"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
)

// Gate is the policy as selection sees it while choosing (it implements
// selection.Gate). Only policies whose actions include Deny take part:
// a Warn or Audit policy never changes what is chosen, it only reports
// on the result (CheckService). The gate of an exempt namespace, or of a
// nil Set, allows everything.
//
// A class is checked against the acceleratorClasses rules first, then
// maxAcceleratorsPerService, maxAcceleratorsPerNamespace and
// maxCostPerHour; the first policy by name that forbids it by the first
// rule that does is named. Selection asks about every candidate class
// (hundreds), so the budgets are first compared with the tightest one.
func (s *Set) Gate(sub Subject, svc *v1beta1.InferenceService, inUse map[corev1.ResourceName]int64) selection.Gate {
	if svc != nil && sub.ServiceLabels == nil {
		sub.ServiceLabels = svc.Labels
		if sub.ServiceLabels == nil {
			sub.ServiceLabels = noLabels
		}
	}
	g := &gate{set: s, svc: svc, namespace: sub.Namespace, inUse: inUse}
	e := s.namespaceEntry(sub)
	if e == nil {
		g.gateView = &gateView{minSvc: math.MaxInt64, minNS: math.MaxInt64, minCost: math.MaxInt64}
		return g
	}
	// The namespace's gate is sorted out once per namespace entry; only a
	// service that a gate-relevant policy selects by its labels needs its
	// own.
	ng := e.gate.Load()
	if ng == nil {
		ng = newNamespaceGate(e.pols)
		e.gate.Store(ng)
	}
	g.gateView = ng.all
	for _, c := range ng.bySelector {
		if sub.ServiceLabels != nil && c.svcSel.Matches(labels.Set(sub.ServiceLabels)) {
			g.gateView = newGateView(s.applicable(sub))
			break
		}
	}
	return g
}

// namespaceGate is a namespace's gate policies: the view of those that
// apply to every service, and the gate-relevant ones with a
// serviceSelector.
type namespaceGate struct {
	all        *gateView
	bySelector []*compiled
}

func newNamespaceGate(pols []*compiled) *namespaceGate {
	var every []*compiled
	ng := &namespaceGate{}
	for _, c := range pols {
		switch {
		case c.svcAll:
			every = append(every, c)
		case c.gates():
			ng.bySelector = append(ng.bySelector, c)
		}
	}
	ng.all = newGateView(every)
	return ng
}

// gates: the policy takes part in a gate (Deny, with a rule the gate
// decides on).
func (c *compiled) gates() bool {
	return c.deny && (c.classes != nil || c.runtimes != nil || c.images != nil || c.maxSvc != nil || c.maxNS != nil || c.maxCost != nil)
}

// gateView is what a gate decides with: the Deny policies of the subject
// with a rule the gate decides on, and the tightest budgets. Read only
// once built (shared by the gates of a namespace).
type gateView struct {
	pols []*compiled // the Deny policies with a rule the gate decides on, by name
	// classPols are those of pols with an acceleratorClasses rule; min*:
	// the tightest budgets (MaxInt64 when none).
	classPols              []*compiled
	minSvc, minNS, minCost int64
	// hasImages: one of pols has an images rule.
	hasImages bool
}

func newGateView(pols []*compiled) *gateView {
	v := &gateView{minSvc: math.MaxInt64, minNS: math.MaxInt64, minCost: math.MaxInt64}
	for _, c := range pols {
		if !c.gates() {
			continue
		}
		v.pols = append(v.pols, c)
		if c.classes != nil {
			v.classPols = append(v.classPols, c)
		}
		v.hasImages = v.hasImages || c.images != nil
		if c.maxSvc != nil {
			v.minSvc = min(v.minSvc, *c.maxSvc)
		}
		if c.maxNS != nil {
			v.minNS = min(v.minNS, *c.maxNS)
		}
		if c.maxCost != nil {
			v.minCost = min(v.minCost, c.maxCostMilli)
		}
	}
	return v
}

// noLabels is the labels of a service that has none; never written.
var noLabels = map[string]string{}

type gate struct {
	set       *Set
	svc       *v1beta1.InferenceService
	namespace string
	inUse     map[corev1.ResourceName]int64
	*gateView
	// groupsOf is the runtime groups was counted for (selection asks
	// about every class with the same chosen runtime).
	groupsOf *v1beta1.ServingRuntimeSpec
	groups   int64
	imgs     gateImages
}

// engineGroups is the engine's groups at most (merge.Topology's
// MaxGroups) under runtime rt, counted once per runtime.
func (g *gate) engineGroups(rt *v1beta1.ServingRuntimeSpec) int64 {
	if g.groups == 0 || g.groupsOf != rt {
		g.groupsOf, g.groups = rt, int64(merge.Topology(g.svc, rt)[0].MaxGroups())
	}
	return g.groups
}

// Runtime: the first policy (by name) whose runtimes rule forbids it,
// else the first whose images rule forbids an image the runtime would put
// in the service's pods (runtimeImages).
func (g *gate) Runtime(kind, name string, labels map[string]string, spec *v1beta1.ServingRuntimeSpec) (string, string) {
	for _, c := range g.pols {
		if why := c.runtimes.check(name, labels); why != "" {
			return c.ref, why
		}
	}
	if !g.hasImages {
		return "", ""
	}
	images := g.runtimeImages(kind, name, spec)
	for _, c := range g.pols {
		if c.images == nil {
			continue
		}
		for i := range images {
			if why := c.images.checkRef(&images[i]); why != "" {
				return c.ref, why
			}
		}
	}
	return "", ""
}

// Class: see Set.Gate.
func (g *gate) Class(cl *v1beta1.AcceleratorClass, use selection.ClassUse) (string, string) {
	if cl == nil {
		return "", ""
	}
	if len(g.classPols) > 0 {
		verdicts := g.set.classVerdicts(cl)
		for _, c := range g.classPols {
			if why := verdicts[c.index]; why != "" {
				return c.ref, why
			}
		}
	}
	if g.hasImages {
		if ref, why := g.classImages(cl, use.Runtime); ref != "" {
			return ref, why
		}
	}
	if g.minSvc == math.MaxInt64 && g.minNS == math.MaxInt64 && g.minCost == math.MaxInt64 {
		return "", "" // no budget: the service's groups need not be counted
	}
	n := use.PerPod * use.Pods * g.engineGroups(use.Runtime)
	if n > g.minSvc {
		for _, c := range g.pols {
			if c.maxSvc != nil && n > *c.maxSvc {
				return c.ref, "would use " + itoa(n) + " " + string(use.Resource) + ", above the maximum of " + itoa(*c.maxSvc) + " per service"
			}
		}
	}
	if inUse := g.inUse[use.Resource]; n > 0 && inUse+n > g.minNS {
		for _, c := range g.pols {
			if c.maxNS != nil {
				if why := namespaceOver(g.namespace, use.Resource, inUse, n, *c.maxNS); why != "" {
					return c.ref, why
				}
			}
		}
	}
	if g.minCost == math.MaxInt64 || n == 0 {
		return "", ""
	}
	if rate := perHourMilli(cl); n*rate > g.minCost {
		for _, c := range g.pols {
			if c.maxCost != nil && n*rate > c.maxCostMilli {
				return c.ref, "would cost " + formatMilli(n*rate) + "/hour (" + itoa(n) + " × " + formatMilli(rate) + "/hour), above the maximum of " + formatMilli(c.maxCostMilli) + "/hour"
			}
		}
	}
	return "", ""
}
