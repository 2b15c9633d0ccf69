package merge

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// ServiceInput is a pinned decision for a whole service: what every pod of
// every component is composed from.
type ServiceInput struct {
	Service     *v1beta1.InferenceService // after predictor migration and defaults
	RuntimeKind string
	RuntimeName string
	Runtime     *v1beta1.ServingRuntimeSpec
	// ClassFor is the class a component's pods are composed with; nil, or
	// a nil result, for none.
	ClassFor func(component string) *v1beta1.AcceleratorClass
	Profiles map[string]*v1beta1.ClusterEngineRuntimeProfile
	Model    *ModelMount
}

// ComposedRole is one kind of pod of a component, composed: the single pod
// of single-pod groups, or the leader, or a worker (all workers of a group
// are composed alike but for their index).
type ComposedRole struct {
	Topology ComponentTopology
	Role     string      // "", RoleLeader or RoleWorker
	Pod      *corev1.Pod // group 0's pod of the role, completed as the pod webhook completes it
	PerGroup int32       // pods of this role in each group
	// Warnings are what composing it tolerated and the user should hear
	// of: keys a KServe-shaped runtime refers to that the service lacks,
	// rendered empty (see RenderTemplate).
	Warnings []string
}

// Pods is how many pods of the role groups groups hold.
func (r ComposedRole) Pods(groups int32) int64 { return int64(groups) * int64(r.PerGroup) }

// MaxGroups is the most groups the role's component may have.
func (r ComposedRole) MaxGroups() int32 { return r.Topology.MaxGroups() }

// ComposeService composes one pod of each role of each component of the
// service (group 0's: the reconciler's skeleton, completed exactly as the
// pod webhook will complete it). It is what admission checks, what policy
// counts and what a PodGroup's minResources sums. A role that fails to
// compose is left out and its error, a *ComposeError naming the
// component, is returned.
func ComposeService(in ServiceInput) ([]ComposedRole, []error) {
	var out []ComposedRole
	var errs []error
	for _, t := range Topology(in.Service, in.Runtime) {
		var class *v1beta1.AcceleratorClass
		if in.ClassFor != nil {
			class = in.ClassFor(t.Component)
		}
		for _, g := range CanonicalRoles(in.Service, t) {
			pod := SkeletonPod(in.Service, t.Component, g)
			warnings, err := composePod(Input{
				Service: in.Service.ForComponent(t.Component), Component: t.Component,
				RuntimeKind: in.RuntimeKind, RuntimeName: in.RuntimeName, Runtime: in.Runtime,
				AcceleratorClass: class, Profiles: in.Profiles, Group: g, Model: in.Model,
			}, pod)
			if err != nil {
				errs = append(errs, &ComposeError{Component: t.Component, Role: g.Role, Err: err})
				continue
			}
			perGroup := int32(1)
			if g.Role == RoleWorker {
				perGroup = t.Workers
			}
			out = append(out, ComposedRole{Topology: t, Role: g.Role, Pod: pod, PerGroup: perGroup, Warnings: warnings})
		}
	}
	return out, errs
}

// CanonicalRoles are the identities of group 0 of a component: one pod,
// or a leader and (with workers) the first worker.
func CanonicalRoles(svc *v1beta1.InferenceService, t ComponentTopology) []GroupIdentity {
	if !t.MultiNode {
		return []GroupIdentity{{}}
	}
	size := t.GroupSize()
	leader := LeaderAddress(svc.Name, svc.Namespace, t.Component, 0)
	out := []GroupIdentity{{Role: RoleLeader, GroupSize: size, LeaderAddress: leader}}
	if t.Workers > 0 {
		out = append(out, GroupIdentity{Role: RoleWorker, WorkerIndex: 1, GroupSize: size, LeaderAddress: leader})
	}
	return out
}

// ComposeError is why a role of a component could not be composed: the
// component (and role) whose pod failed, so that admission can name the
// service's field (spec.<component>) without reading the message.
type ComposeError struct {
	Component string // v1beta1.ComponentEngine, ComponentDecoder or ComponentRouter
	Role      string // "", RoleLeader or RoleWorker
	Err       error
}

// Error is the component, then the error: "engine: ...".
func (e *ComposeError) Error() string { return fmt.Sprintf("%s: %v", e.Component, e.Err) }

// Unwrap is the error composing the role returned.
func (e *ComposeError) Unwrap() error { return e.Err }
