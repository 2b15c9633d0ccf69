package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/policy/v1alpha1/imageref"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateProfileSpec checks what would clash when a profile is added to a
// pod: containers (init ones included, as Kubernetes requires) and volumes
// have unique DNS-label names, containers an image the container runtime
// can read (imageref.Normalize: a placeholder such as "<IMG>" is refused
// here rather than by the kubelet as InvalidImageName on every node), and
// the profile adds at least one container.
func ValidateProfileSpec(spec *v1beta1.ClusterEngineRuntimeProfileSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]*field.Path{}
	check := func(p *field.Path, cs []corev1.Container) {
		for i, c := range cs {
			np := p.Index(i).Child("name")
			if c.Name == "" {
				errs = append(errs, field.Required(np, "a profile container needs a name (it is how pods and overrides refer to it)"))
				continue
			}
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(np, c.Name, msg))
			}
			if first, dup := seen[c.Name]; dup {
				errs = append(errs, withDetail(field.Duplicate(np, c.Name), "also "+first.String()+"; container names must be unique"))
			} else {
				seen[c.Name] = np
			}
			errs = append(errs, validateImage(p.Index(i).Child("image"), c.Image)...)
		}
	}
	check(path.Child("containers"), spec.Containers)
	check(path.Child("initContainers"), spec.InitContainers)
	vols := map[string]*field.Path{}
	for i, v := range spec.Volumes {
		np := path.Child("volumes").Index(i).Child("name")
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(np, v.Name, msg))
		}
		if first, dup := vols[v.Name]; dup {
			errs = append(errs, withDetail(field.Duplicate(np, v.Name), "also "+first.String()+"; volume names must be unique"))
		} else {
			vols[v.Name] = np
		}
	}
	if len(spec.Containers) == 0 && len(spec.InitContainers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a profile must add at least one container"))
	}
	return errs
}

// validateImage: a container's image is required and must be a reference
// the container runtime reads (imageref.Normalize's grammar).
func validateImage(p *field.Path, image string) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if _, _, err := imageref.Normalize(image); err != nil {
		return field.ErrorList{field.Invalid(p, image, err.Error()+"; the container runtime could not pull it")}
	}
	return nil
}
