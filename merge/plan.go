package merge

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Plan is what composes the pods of one component and group role, built
// once from an Input and applied to many pods. Building it (reading the
// layers, rendering templates, choosing profiles and the model's mount) is
// most of ComposePod's cost; a caller that knows its inputs did not change
// (the pod webhook keys it by the objects' versions) builds it once per
// revision. Compose(pod, g) gives exactly what ComposePod gives for the
// Input the plan was built from with Group g.
type Plan struct {
	p *plan
}

// NewPlan builds the plan of in.Component for in.Group.Role and
// in.Group.Pairing (what {{.Pairing}} renders); the rest of in.Group is
// not read.
func NewPlan(in Input) (*Plan, error) {
	p, err := buildPlan(in, in.Group.Role)
	if err != nil {
		return nil, err
	}
	return &Plan{p: p}, nil
}

// Warnings are the plan's warnings (template keys a KServe-shaped layer
// refers to that the service lacks).
func (pl *Plan) Warnings() []string { return pl.p.Warnings }

// Compose completes pod in place as ComposePod does. g must have the role
// and pairing the plan was built for. The plan is never changed: Compose lays a copy
// of its layers over the pod, so plans may be shared between goroutines.
func (pl *Plan) Compose(pod *corev1.Pod, g GroupIdentity) error {
	if pod == nil {
		return errNoPod
	}
	if g.Role != pl.p.Role {
		return fmt.Errorf("merge: a plan for group role %q cannot compose a pod of role %q", pl.p.Role, g.Role)
	}
	if g.Pairing != pl.p.Pairing {
		return fmt.Errorf("merge: a plan for pairing %q cannot compose a pod of pairing %q", pl.p.Pairing, g.Pairing)
	}
	pl.p.clone().apply(pod, g)
	return nil
}

// clone copies everything apply may lay into a pod, so that nothing the
// pod later has changed in place aliases the plan.
func (p *plan) clone() *plan {
	c := *p
	c.Layers = make([]layer, len(p.Layers))
	for i, l := range p.Layers {
		l.Pod = l.Pod.DeepCopy()
		l.Runner = l.Runner.DeepCopy()
		c.Layers[i] = l // Labels and Annotations are only read (mergeMetadata copies)
	}
	if p.Profiles != nil {
		c.Profiles = make([]profileUse, len(p.Profiles))
		for i, u := range p.Profiles {
			if u.Overrides != nil {
				o := make([]corev1.Container, len(u.Overrides))
				for j := range u.Overrides {
					u.Overrides[j].DeepCopyInto(&o[j])
				}
				u.Overrides = o
			}
			c.Profiles[i] = u // spec is only read: its containers are deep-copied on use
		}
	}
	if p.Model != nil {
		m := *p.Model
		m.Affinity = m.Affinity.DeepCopy() // MergeAffinity may return it as the pod's
		c.Model = &m                       // Volume, Mount and Downloader are copied on use
	}
	return &c
}
