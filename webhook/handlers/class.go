package handlers

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
)

// ValidateAcceleratorClass denies classes whose selectors, capabilities or
// resources would make selection or scheduling fail later
// (validation.ValidateAcceleratorClassSpec).
var ValidateAcceleratorClass = objectValidator("AcceleratorClass", func(ac *v1beta1.AcceleratorClass) field.ErrorList {
	return validation.ValidateAcceleratorClassSpec(&ac.Spec, field.NewPath("spec"))
})

// AcceleratorClassErrors lists the errors of a class spec as the denial
// message does, one line each naming the field.
func AcceleratorClassErrors(spec *v1beta1.AcceleratorClassSpec) []string {
	return lines(validation.ValidateAcceleratorClassSpec(spec, field.NewPath("spec")))
}
