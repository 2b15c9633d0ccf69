package handlers

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/api/policy/v1alpha1/validation"
	"github.com/berthdev/berth/webhook/admission"
)

// ValidateServingPolicy admits a ServingPolicy (CREATE and UPDATE): what
// the CRD schema cannot say (a selector that does not parse, Deny with
// Warn, a class pattern that is not a name or a name prefix, an image
// prefix with a tag, a negative budget) is denied with the field named
// (package validation), so a policy in force is always one berth can
// apply. An UPDATE is not denied for an error the stored policy has too.
func ValidateServingPolicy(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	var sp v1alpha1.ServingPolicy
	if deny := decodeObject(req, &sp); deny != nil {
		return deny
	}
	var errs field.ErrorList
	if req.Operation == admissionv1.Update {
		var old v1alpha1.ServingPolicy
		if deny := decodeRaw(req, req.OldObject.Raw, "old object", &old); deny != nil {
			return deny
		}
		errs = validation.ValidateServingPolicyUpdate(&old, &sp)
	} else {
		errs = validation.ValidateServingPolicy(&sp)
	}
	if len(errs) > 0 {
		return invalidIn(v1alpha1.SchemeGroupVersion.Group, "ServingPolicy", sp.Name, sp.Name, errs, nil)
	}
	return admission.Allowed()
}
