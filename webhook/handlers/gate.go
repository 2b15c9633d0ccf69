package handlers

import (
	"slices"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// compose composes every pod the reconciler would create for the service
// under decision d (merge.ComposeService: each component of the topology,
// each role of its groups, on the reconciler's skeleton pod, exactly as
// the pod webhook will), and returns the roles with the errors. What fails
// here (a template key the service lacks, in the runtime's fields or the
// service's own, a profile that does not exist) would otherwise fail only
// when the pods are admitted, after the service was accepted. Each error
// appears once. Each component is composed with its own class and view of
// the service (see choice). ServingPolicies check the roles (policy.go).
func (h *InferenceServices) compose(isvc *v1beta1.InferenceService, d *choice) ([]merge.ComposedRole, []string) {
	roles, errs := merge.ComposeService(h.serviceInput(isvc, d))
	var out []string
	for _, err := range errs {
		if msg := err.Error(); !slices.Contains(out, msg) {
			out = append(out, msg)
		}
	}
	return roles, out
}

// serviceInput is decision d for the whole service, as merge composes it.
func (h *InferenceServices) serviceInput(isvc *v1beta1.InferenceService, d *choice) merge.ServiceInput {
	return merge.ServiceInput{
		Service: isvc, RuntimeKind: d.Runtime.Kind, RuntimeName: d.Runtime.Name, Runtime: d.Runtime.Spec,
		ClassFor: d.classFor, Profiles: profileMap(h.Profiles), Model: modelMount(d.Model),
	}
}

// profileMap snapshots the cached profiles by name.
func profileMap(l listers.ClusterEngineRuntimeProfileLister) map[string]*v1beta1.ClusterEngineRuntimeProfile {
	out := map[string]*v1beta1.ClusterEngineRuntimeProfile{}
	if l == nil {
		return out
	}
	all, _ := l.List(everything)
	for _, p := range all {
		out[p.Name] = p
	}
	return out
}
