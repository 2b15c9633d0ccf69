package handlers

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

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
// when the pods are admitted, after the service was accepted; so would
// what the API server refuses in a composed pod (merge.CheckPod: a
// container without an image, a bad name, port or env name), which is
// checked here too (podErrors). Each error appears once. Each component is
// composed with its own class and view of the service (see choice).
// ServingPolicies check the roles (policy.go).
func (h *InferenceServices) compose(isvc *v1beta1.InferenceService, d *choice) ([]merge.ComposedRole, []string) {
	roles, errs := merge.ComposeService(h.serviceInput(isvc, d))
	var out []string
	for _, err := range errs {
		if msg := err.Error(); !slices.Contains(out, msg) {
			out = append(out, msg)
		}
	}
	for _, msg := range podErrors(roles, d.RuntimeRef()) {
		if !slices.Contains(out, msg) {
			out = append(out, msg)
		}
	}
	return roles, out
}

// podErrors are merge.CheckPod's findings in each composed pod, one line
// each: the pod, the pod's field, what is wrong and, for a missing image,
// where to set one (the service's component, or the runtime's).
func podErrors(roles []merge.ComposedRole, runtime string) []string {
	var out []string
	for _, r := range roles {
		at := r.Topology.Component
		if r.Role != "" {
			at += "." + r.Role
		}
		for _, e := range merge.CheckPod(r.Pod) {
			msg := fmt.Sprintf("%s pod %s: %s", r.Topology.Component, r.Pod.Name, e.Error())
			if e.Type == field.ErrorTypeRequired && strings.HasSuffix(e.Field, ".image") {
				msg += fmt.Sprintf("; set spec.%s.runner.image on this InferenceService, or an image in %s (its %sConfig)", at, runtime, r.Topology.Component)
			}
			out = append(out, msg)
		}
	}
	return out
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
