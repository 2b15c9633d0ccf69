package handlers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateProfile denies profiles whose containers or volumes would clash
// when added to a pod.
var ValidateProfile = objectValidator("ClusterEngineRuntimeProfile", func(p *v1beta1.ClusterEngineRuntimeProfile) []string {
	return ProfileErrors(&p.Spec)
})

// ProfileErrors checks names: containers (init ones included, as Kubernetes
// requires) and volumes must be unique and valid DNS labels.
func ProfileErrors(spec *v1beta1.ClusterEngineRuntimeProfileSpec) []string {
	var errs []string
	seen := map[string]string{}
	check := func(path string, cs []corev1.Container) {
		for i, c := range cs {
			p := fmt.Sprintf("%s[%d].name", path, i)
			if c.Name == "" {
				errs = append(errs, p+": a profile container needs a name (it is how pods and overrides refer to it)")
				continue
			}
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, fmt.Sprintf("%s: %q %s", p, c.Name, msg))
			}
			if first, dup := seen[c.Name]; dup {
				errs = append(errs, fmt.Sprintf("%s: %q is also %s; container names must be unique", p, c.Name, first))
			}
			seen[c.Name] = p
			if c.Image == "" {
				errs = append(errs, fmt.Sprintf("%s[%d].image: required", path, i))
			}
		}
	}
	check("spec.containers", spec.Containers)
	check("spec.initContainers", spec.InitContainers)
	vols := map[string]string{}
	for i, v := range spec.Volumes {
		p := fmt.Sprintf("spec.volumes[%d].name", i)
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, fmt.Sprintf("%s: %q %s", p, v.Name, msg))
		}
		if first, dup := vols[v.Name]; dup {
			errs = append(errs, fmt.Sprintf("%s: %q is also %s; volume names must be unique", p, v.Name, first))
		}
		vols[v.Name] = p
	}
	if len(spec.Containers) == 0 && len(spec.InitContainers) == 0 {
		errs = append(errs, "spec.containers: a profile must add at least one container")
	}
	return errs
}
