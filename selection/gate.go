package selection

import (
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// CodeForbiddenByPolicy: every candidate runtime or class that could serve
// the service is forbidden by a policy (a Gate), or the runtime or class
// the service names is.
const CodeForbiddenByPolicy = "ForbiddenByPolicy"

// Gate is an admission policy as selection sees it while choosing: a
// runtime or class it forbids loses, with the line "forbidden by
// <policy>: <why>" (policy is how the line names it, e.g.
// "ServingPolicy/team-a"). An empty policy allows. policy.Set.Gate implements
// it; selection knows nothing else of policies.
type Gate interface {
	// Runtime is asked about every runtime that could serve the model
	// (kind is KindServingRuntime or KindClusterServingRuntime), with its
	// spec, so that a rule on what the runtime would put in the pods (its
	// images) can decide too.
	Runtime(kind, name string, labels map[string]string, spec *v1beta1.ServingRuntimeSpec) (policy, why string)
	// Class is asked about every class that qualifies for the service,
	// with what the service would use of it.
	Class(c *v1beta1.AcceleratorClass, use ClassUse) (policy, why string)
}

// ClassUse is what the service's engine would use of a class: PerPod
// accelerators of Resource (the class's own resource name, as merge
// translates it) per pod and Pods pods per group, with the chosen
// Runtime, whose groups (with the service's) say how many groups there
// are at most: selection does not count groups, merge.Topology does, so
// the gate counts them. Other components are not counted here; admission
// counts every component on the composed pods.
type ClassUse struct {
	PerPod   int64
	Pods     int64
	Resource corev1.ResourceName
	Runtime  *v1beta1.ServingRuntimeSpec
}

// SelectOptions change how SelectWith chooses. The zero value is Select.
type SelectOptions struct {
	// Gate, when set, forbids runtimes and classes (a ServingPolicy).
	Gate Gate
}

// forbiddenWhy is the losing reason of a candidate a gate forbids:
// "forbidden by <policy>: <why>".
func forbiddenWhy(policy, why string) string { return string(appendForbidden(nil, policy, why)) }

func appendForbidden(b []byte, policy, why string) []byte {
	b = append(b, "forbidden by "...)
	b = append(b, policy...)
	if why != "" {
		b = append(b, ": "...)
		b = append(b, why...)
	}
	return b
}

// forbiddenBecause is forbiddenWhy as the parts of a runtime's line.
func forbiddenBecause(policy, why string) why {
	if why == "" {
		return because("forbidden by ", policy)
	}
	return because("forbidden by ", policy, ": ", why)
}

// appendUnique appends s unless list has it (a handful of policies).
func appendUnique(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}

// askGate records whether the gate forbids the class, given what the
// engine would use of it.
func (cr *classRequest) askGate(ce *classEval) {
	use := ClassUse{PerPod: ce.perPod, Pods: cr.nd.pods, Resource: ce.c.resourceFor(cr.classNeed(ce)), Runtime: cr.runtime}
	policy, why := cr.gate.Class(ce.c.obj, use)
	if ce.policy != policy || ce.policyWhy != why { // no write barrier when unchanged
		ce.policy, ce.policyWhy = policy, why
	}
}
