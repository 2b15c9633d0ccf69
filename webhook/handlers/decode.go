// Package handlers holds the admission decisions of the berth webhook: one
// file per kind. Handlers read only the cache (and, for a pod whose
// InferenceService the cache has not seen yet, one live GET); they never
// write, because dry-run requests reach them too.
//
// Denials carry a field.ErrorList: one status cause per error, at its
// path. A service that cannot be resolved is denied with selection's
// errors (unresolved).
//
// Ratcheting, as Kubernetes' validation does it: on UPDATE an error the
// stored object has too, the same finding (type, field, detail and bad
// value: a field changed to another wrong value is checked anew), is a
// warning, not a denial. Runtimes, BaseModels
// and ClusterBaseModels, a service's storage and its composed pods are
// ratcheted this way (ratchet); ServingPolicy violations by policy, rule
// and field (ratchetViolations).
package handlers

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/internal/jsoncodec"
	"github.com/berthdev/berth/webhook/admission"
)

// decodeObject decodes req.Object into out, or returns the denial to send.
func decodeObject(req *admissionv1.AdmissionRequest, out any) *admissionv1.AdmissionResponse {
	return decodeRaw(req, req.Object.Raw, "object", out)
}

func decodeRaw(req *admissionv1.AdmissionRequest, raw []byte, which string, out any) *admissionv1.AdmissionResponse {
	if len(raw) == 0 {
		return admission.Denied(http.StatusBadRequest, fmt.Sprintf("%s %s: the admission request carries no %s", req.Kind.Kind, objectName(req), which))
	}
	if err := jsoncodec.Unmarshal(raw, out); err != nil {
		return admission.Denied(http.StatusBadRequest, fmt.Sprintf("%s %s: cannot decode the %s: %v", req.Kind.Kind, objectName(req), which, err))
	}
	return nil
}

// objectName is namespace/name, or name for cluster objects; generateName
// objects have no name yet.
func objectName(req *admissionv1.AdmissionRequest) string {
	name := req.Name
	if name == "" {
		name = "(generated name)"
	}
	if req.Namespace != "" {
		return req.Namespace + "/" + name
	}
	return name
}

// skip reports operations a handler has nothing to say about.
func skip(req *admissionv1.AdmissionRequest) bool {
	return req.Operation == admissionv1.Delete || req.Operation == admissionv1.Connect
}

// objectValidator is the handler of a kind whose checks need only the
// object itself: decode it, and deny with every error check reports, each
// a cause with its field path.
func objectValidator[T any, PT interface {
	*T
	GetName() string
}](kind string, check func(PT) field.ErrorList) admission.Func {
	return func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if skip(req) {
			return admission.Allowed()
		}
		obj := PT(new(T))
		if deny := decodeObject(req, obj); deny != nil {
			return deny
		}
		if errs := check(obj); len(errs) > 0 {
			return invalid(kind, obj.GetName(), obj.GetName(), errs, nil)
		}
		return admission.Allowed()
	}
}
