package handlers

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
	"github.com/berthdev/berth/selection"
)

// ValidateAcceleratorClass denies classes whose selectors, capabilities or
// resources would make selection or scheduling fail later
// (validation.ValidateAcceleratorClassSpec), and discovery operators that
// node affinity cannot express, with the rewrite (selection.ValidateDiscovery:
// the same rule selection matches nodes by).
var ValidateAcceleratorClass = objectValidator("AcceleratorClass", classErrors)

func classErrors(ac *v1beta1.AcceleratorClass) field.ErrorList {
	errs := validation.ValidateAcceleratorClassSpec(&ac.Spec, field.NewPath("spec"))
	return append(errs, selection.ValidateDiscovery(&ac.Spec)...)
}

// AcceleratorClassErrors lists the errors of a class spec as the denial
// message does, one line each naming the field.
func AcceleratorClassErrors(spec *v1beta1.AcceleratorClassSpec) []string {
	return lines(classErrors(&v1beta1.AcceleratorClass{Spec: *spec}))
}
