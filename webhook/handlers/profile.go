package handlers

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
)

// ValidateProfile denies profiles whose containers or volumes would clash
// when added to a pod (validation.ValidateProfileSpec).
var ValidateProfile = objectValidator("ClusterEngineRuntimeProfile", func(p *v1beta1.ClusterEngineRuntimeProfile) field.ErrorList {
	return validation.ValidateProfileSpec(&p.Spec, field.NewPath("spec"))
})

// ProfileErrors lists the errors of a profile spec as the denial message
// does, one line each naming the field.
func ProfileErrors(spec *v1beta1.ClusterEngineRuntimeProfileSpec) []string {
	return lines(validation.ValidateProfileSpec(spec, field.NewPath("spec")))
}
