package handlers

import (
	"errors"
	"fmt"
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
// when the pods are admitted, after the service was accepted: such an
// error is the service's component's (spec.engine: ...). So would what the
// API server refuses in a composed pod (merge.CheckPod: a container
// without an image, a bad name, port or env name), which is checked here
// too (podErrors). Each error (errorKey) appears once. Each
// component is composed with its own class and view of the service (see
// choice). ServingPolicies check the roles (policy.go).
func (h *InferenceServices) compose(isvc *v1beta1.InferenceService, d *choice) ([]merge.ComposedRole, field.ErrorList) {
	roles, composeErrs := merge.ComposeService(h.serviceInput(isvc, d))
	var errs field.ErrorList
	for _, err := range composeErrs {
		errs = append(errs, composeError(err))
	}
	errs = append(errs, podErrors(roles, d.RuntimeRef())...)
	return roles, uniqueErrors(errs)
}

// composeError is a role's composition error as the service's: the
// component's field (spec.engine) with merge's message, which names the
// field of the runtime or service it comes from.
func composeError(err error) *field.Error {
	var ce *merge.ComposeError
	if errors.As(err, &ce) {
		return fieldError(field.NewPath("spec", ce.Component), ce.Err.Error())
	}
	return fieldError(field.NewPath("spec"), err.Error())
}

// uniqueErrors is errs without repeats (errorKey), in order.
func uniqueErrors(errs field.ErrorList) field.ErrorList {
	seen := map[errorKey]bool{}
	var out field.ErrorList
	for _, e := range errs {
		if !seen[keyOf(e)] {
			seen[keyOf(e)] = true
			out = append(out, e)
		}
	}
	return out
}

// podErrors are merge.CheckPod's findings in each composed pod, under the
// pod (pods[<name>].spec.containers[0].image) with their type and value;
// a missing image says where to set one (the service's component, or the
// runtime's).
func podErrors(roles []merge.ComposedRole, runtime string) field.ErrorList {
	var out field.ErrorList
	for _, r := range roles {
		at := r.Topology.Component
		if r.Role != "" {
			at += "." + r.Role
		}
		pod := field.NewPath("pods").Key(r.Pod.Name)
		for _, e := range merge.CheckPod(r.Pod) {
			e.Field = pod.String() + "." + e.Field
			if e.Type == field.ErrorTypeRequired && strings.HasSuffix(e.Field, ".image") {
				e.Detail += fmt.Sprintf("; set spec.%s.runner.image on this InferenceService, or an image in %s (its %sConfig)", at, runtime, r.Topology.Component)
			}
			out = append(out, e)
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
