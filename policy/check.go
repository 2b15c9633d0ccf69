package policy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckImages checks image references (a runtime's, from RuntimeImages)
// against the image rules of the policies that apply to sub. A message
// names the field when it is known: "ServingPolicy/registries:
// spec.engineConfig.runner.image: image docker.io/evil/x:1 is not from an
// allowed registry (allowed: registry.example.com)".
func (s *Set) CheckImages(sub Subject, images []Image) []Violation {
	var vs []Violation
	for _, c := range s.applicable(sub) {
		if c.images == nil {
			continue
		}
		for _, im := range images {
			if why := c.images.check(im.Ref); why != "" {
				text := why
				if im.Field != nil {
					text = im.Field.String() + ": " + why
				}
				vs = append(vs, c.violation(RuleImages, im.Field, text))
			}
		}
	}
	return sortViolations(vs)
}

// CheckPod checks the images of all init, regular and ephemeral
// containers of a pod (berth's composed pods, as defence in depth).
func (s *Set) CheckPod(sub Subject, pod *corev1.Pod) []Violation {
	if pod == nil {
		return nil
	}
	var images []Image
	spec := field.NewPath("spec")
	for i, c := range pod.Spec.InitContainers {
		images = append(images, Image{Field: spec.Child("initContainers").Index(i).Child("image"), Ref: c.Image})
	}
	for i, c := range pod.Spec.Containers {
		images = append(images, Image{Field: spec.Child("containers").Index(i).Child("image"), Ref: c.Image})
	}
	for i, c := range pod.Spec.EphemeralContainers {
		images = append(images, Image{Field: spec.Child("ephemeralContainers").Index(i).Child("image"), Ref: c.Image})
	}
	return s.CheckImages(sub, images)
}
