package handlers

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
	"github.com/berthdev/berth/webhook/admission"
)

// ValidateBaseModel and ValidateClusterBaseModel deny a model whose
// storage berth cannot use (validation.ValidateBaseModelSpec: an unknown
// URI scheme or form, an invalid claim name, a relative storage.path, an
// unknown downloadPolicy), naming the field. On UPDATE an error the
// stored model already had is a warning (ratchet): a model created before
// berth checked storage stays editable. Status updates do not reach this
// webhook (it matches the resource, not its status subresource).
var (
	ValidateBaseModel        = modelValidator[v1beta1.BaseModel]("BaseModel", func(m *v1beta1.BaseModel) *v1beta1.BaseModelSpec { return &m.Spec })
	ValidateClusterBaseModel = modelValidator[v1beta1.ClusterBaseModel]("ClusterBaseModel", func(m *v1beta1.ClusterBaseModel) *v1beta1.BaseModelSpec { return &m.Spec })
)

func modelValidator[T any, PT interface {
	*T
	GetName() string
}](kind string, spec func(PT) *v1beta1.BaseModelSpec) admission.Func {
	return func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if skip(req) {
			return admission.Allowed()
		}
		obj := PT(new(T))
		if deny := decodeObject(req, obj); deny != nil {
			return deny
		}
		errs := validation.ValidateBaseModelSpec(spec(obj), field.NewPath("spec"))
		var warnings []string
		if req.Operation == admissionv1.Update && len(errs) > 0 {
			old := PT(new(T))
			if deny := decodeRaw(req, req.OldObject.Raw, "old object", old); deny != nil {
				return deny
			}
			var kept field.ErrorList
			errs, kept = ratchet(errs, validation.ValidateBaseModelSpec(spec(old), field.NewPath("spec")))
			warnings = keptWarnings(kept, "services of this model cannot start until it is fixed")
		}
		if len(errs) > 0 {
			return invalid(kind, obj.GetName(), objectName(req), errs, warnings)
		}
		return admission.Allowed(warnings...)
	}
}
