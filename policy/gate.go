package policy

import (
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// Gate is the policy as selection sees it while choosing (it implements
// selection.Gate). Only policies whose actions include Deny take part:
// a Warn or Audit policy never changes what is chosen, it only reports
// on the result (CheckService). The gate of an exempt namespace, or of a
// nil Set, allows everything.
func (s *Set) Gate(sub Subject, svc *v1beta1.InferenceService, inUse map[corev1.ResourceName]int64) selection.Gate {
	if svc != nil && sub.ServiceLabels == nil {
		sub.ServiceLabels = svc.Labels
		if sub.ServiceLabels == nil {
			sub.ServiceLabels = noLabels
		}
	}
	g := &gate{namespace: sub.Namespace, inUse: inUse}
	// Filtered in place: the gate keeps the Deny policies with a rule it
	// decides on.
	pols := s.applicable(sub)
	g.pols = pols[:0]
	for _, c := range pols {
		if c.deny && (c.classes != nil || c.runtimes != nil || c.maxSvc != nil || c.maxNS != nil || c.maxCost != nil) {
			g.pols = append(g.pols, c)
		}
	}
	return g
}

// noLabels is the labels of a service that has none; never written.
var noLabels = map[string]string{}

type gate struct {
	namespace string
	inUse     map[corev1.ResourceName]int64
	pols      []*compiled
}

// Runtime: the first policy (by name) whose runtimes rule forbids it.
func (g *gate) Runtime(kind, name string, labels map[string]string) (string, string) {
	for _, c := range g.pols {
		if why := c.runtimes.check(name, labels); why != "" {
			return c.ref, why
		}
	}
	return "", ""
}

// Class: the first policy (by name) whose acceleratorClasses rule forbids
// the class, or whose budgets or cost the engine would break on it.
func (g *gate) Class(cl *v1beta1.AcceleratorClass, use selection.ClassUse) (string, string) {
	if cl == nil {
		return "", ""
	}
	n := use.Accelerators()
	for _, c := range g.pols {
		if why := c.classes.check(cl.Name, cl.Labels); why != "" {
			return c.ref, why
		}
		if c.maxSvc != nil && n > *c.maxSvc {
			return c.ref, "would use " + itoa(n) + " " + string(use.Resource) + ", above the maximum of " + itoa(*c.maxSvc) + " per service"
		}
		if c.maxNS != nil {
			if why := namespaceOver(g.namespace, use.Resource, g.inUse[use.Resource], n, *c.maxNS); why != "" {
				return c.ref, why
			}
		}
		if c.maxCost != nil {
			rate := perHourMilli(cl)
			if max := c.maxCostMilli; n*rate > max {
				return c.ref, "would cost " + formatMilli(n*rate) + "/hour (" + itoa(n) + " × " + formatMilli(rate) + "/hour), above the maximum of " + formatMilli(max) + "/hour"
			}
		}
	}
	return "", ""
}
