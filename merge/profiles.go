package merge

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// profileUse is one ClusterEngineRuntimeProfile attached to a component,
// with the component's per-container overrides (KEP-92). Revision hashes
// the JSON of the references to NoUpdate profiles: their name and
// overrides, never their spec.
type profileUse struct {
	Name      string             `json:"name"`
	Overrides []corev1.Container `json:"overrides,omitempty"`
	spec      *v1beta1.ClusterEngineRuntimeProfileSpec
}

// rolling reports whether running pods follow changes of the profile
// (updateStrategy RollingUpdate); NoUpdate, the default, applies a changed
// profile to new pods only.
func (u profileUse) rolling() bool {
	return u.spec.UpdateStrategy == v1beta1.ProfileRollingUpdate
}

// addProfiles resolves the engineRuntimes of the runtime's and the service's
// component, merging references to the same profile (overrides in order).
func (p *plan) addProfiles(in Input, rt, svc *componentView, rtWhere, svcWhere string) error {
	type ref struct {
		where string
		refs  []v1beta1.EngineRuntimeRef
	}
	var refs []ref
	if rt != nil {
		refs = append(refs, ref{rtWhere, rt.runtimes})
	}
	if svc != nil {
		refs = append(refs, ref{svcWhere, svc.runtimes})
	}
	for _, r := range refs {
		for i, er := range r.refs {
			where := fmt.Sprintf("%s.engineRuntimes[%d]", r.where, i)
			prof := in.Profiles[er.ProfileName]
			if prof == nil {
				return fmt.Errorf("%s.profileName: ClusterEngineRuntimeProfile %q not found; create it or remove the reference", where, er.ProfileName)
			}
			names := containerNames(prof.Spec.InitContainers, prof.Spec.Containers)
			for j, o := range er.Containers {
				if !slices.Contains(names, o.Name) {
					return fmt.Errorf("%s.containers[%d].name: %q is not a container of ClusterEngineRuntimeProfile %s (it has: %s); overrides apply only to profile containers",
						where, j, o.Name, er.ProfileName, strings.Join(names, ", "))
				}
			}
			k := slices.IndexFunc(p.Profiles, func(u profileUse) bool { return u.Name == er.ProfileName })
			if k < 0 {
				p.Profiles = append(p.Profiles, profileUse{Name: er.ProfileName, spec: &prof.Spec})
				k = len(p.Profiles) - 1
			}
			for _, o := range er.Containers {
				p.Profiles[k].Overrides = append(p.Profiles[k].Overrides, *o.DeepCopy())
			}
		}
	}
	return nil
}

func containerNames(lists ...[]corev1.Container) []string {
	var names []string
	for _, l := range lists {
		for _, c := range l {
			names = append(names, c.Name)
		}
	}
	return names
}

// applyProfiles adds each profile's init containers, containers and volumes
// that the pod does not already have by name. Overrides append env (by
// name) and args to the profile's container before it is added, so a pod
// that already carries the container (a reinvocation, or the user's own
// version) is left alone: composing twice adds nothing twice.
func applyProfiles(spec *corev1.PodSpec, uses []profileUse) {
	for _, u := range uses {
		build := func(c corev1.Container) corev1.Container {
			c = *c.DeepCopy()
			for _, o := range u.Overrides {
				if o.Name == c.Name {
					c.Env = MergeEnv(c.Env, o.Env)
					c.Args = append(c.Args, o.Args...)
				}
			}
			return c
		}
		for _, c := range u.spec.InitContainers {
			if !slices.ContainsFunc(spec.InitContainers, func(x corev1.Container) bool { return x.Name == c.Name }) {
				spec.InitContainers = append(spec.InitContainers, build(c))
			}
		}
		for _, c := range u.spec.Containers {
			if !slices.ContainsFunc(spec.Containers, func(x corev1.Container) bool { return x.Name == c.Name }) {
				spec.Containers = append(spec.Containers, build(c))
			}
		}
		for _, v := range u.spec.Volumes {
			if !slices.ContainsFunc(spec.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name }) {
				spec.Volumes = append(spec.Volumes, *v.DeepCopy())
			}
		}
	}
}
