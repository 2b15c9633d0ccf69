package handlers

import (
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/admission"
)

// A pin never moves without the user. While the pinned runtime or
// AcceleratorClass is deleted, an UPDATE that keeps the pin and every
// input of the decision (a label, a server-side re-apply, a GitOps sync)
// is admitted keeping the pin, with a warning (keepGone); the reconciler
// reports the service Degraded (RuntimeDeleted, AcceleratorClassDeleted)
// and keeps its pods. berth decides again only when the user asks: by
// changing an input of the decision, by removing annotation
// ome.io/resolved-runtime, or by setting annotation ome.io/repin to a new
// value (repinAsked; `berth repin` sets it to the time).

// repinAsked says whether an UPDATE asks for a new decision: annotation
// ome.io/repin is set and differs from the stored object's.
func repinAsked(isvc, old *v1beta1.InferenceService) bool {
	if old == nil {
		return false
	}
	v := isvc.Annotations[v1beta1.AnnotationRepin]
	return v != "" && v != old.Annotations[v1beta1.AnnotationRepin]
}

// repinNote is the warning of an UPDATE that asked for a new decision.
func repinNote(isvc *v1beta1.InferenceService, was pinned) string {
	return fmt.Sprintf("annotation %s=%q asks for a new decision: berth decided again (the pin was %s)",
		v1beta1.AnnotationRepin, isvc.Annotations[v1beta1.AnnotationRepin], was.describe())
}

func (p pinned) describe() string {
	s := p.runtime
	if p.class != "" {
		s += " on AcceleratorClass " + p.class
	}
	if p.decoder != "" {
		s += ", decoder on AcceleratorClass " + p.decoder
	}
	return s
}

// gonePin names what of pin p no longer exists ("" when everything does):
// the runtime, the engine's class or the decoder's class.
func (h *InferenceServices) gonePin(isvc *v1beta1.InferenceService, p pinned) string {
	kind, name, ok := strings.Cut(p.runtime, "/")
	if !ok {
		return ""
	}
	var gone []string
	if _, err := h.Index.Resolve(isvc, kind, name, ""); selection.Code(err) == selection.CodePinnedObjectMissing {
		gone = append(gone, "runtime "+p.runtime)
	}
	if _, ok := h.Index.AcceleratorClass(p.class); p.class != "" && !ok {
		gone = append(gone, "AcceleratorClass "+p.class)
	}
	if _, ok := h.Index.AcceleratorClass(p.decoder); p.decoder != "" && !ok {
		gone = append(gone, "decoder AcceleratorClass "+p.decoder)
	}
	return strings.Join(gone, " and ")
}

// heldWhileGone says whether an UPDATE keeps a pin whose runtime or class
// is gone: same pin, same inputs, no repin asked, and something of the pin
// missing. Both handlers ask it: the mutating one keeps the pin, the
// validating one admits what it cannot compose.
func (h *InferenceServices) heldWhileGone(isvc, old *v1beta1.InferenceService) (string, bool) {
	cur := pinOf(isvc)
	if old == nil || cur.runtime == "" || cur != pinOf(old) || repinAsked(isvc, old) || inputDigest(isvc) != inputDigest(old) {
		return "", false
	}
	gone := h.gonePin(isvc, cur)
	return gone, gone != ""
}

// keepGone keeps the stored pin of a service whose pinned runtime or class
// is gone, restores the decision annotations from the stored object, and
// says so.
func (h *InferenceServices) keepGone(isvc, old *v1beta1.InferenceService, gone, digest string) []string {
	isvc.Annotations[v1beta1.AnnotationResolvedInputs] = digest
	if text, ok := old.Annotations[AnnotationDecision]; ok {
		isvc.Annotations[AnnotationDecision] = text
	} else {
		delete(isvc.Annotations, AnnotationDecision)
	}
	h.holdDownloader(isvc, old)
	return []string{fmt.Sprintf("the pinned %s no longer exists; the service keeps its pin and its running pods (berth never moves a service on its own), "+
		"but no new pod can be created until it is recreated. To let berth decide again, set annotation %s to a new value (berth repin %s -n %s)",
		gone, v1beta1.AnnotationRepin, isvc.Name, isvc.Namespace)}
}

// validateHeld admits an UPDATE that keeps a pin whose runtime or class is
// gone (nil when the update does not): the pods cannot be composed without
// them, so only what needs neither is checked (the gang policy's
// transition rule and the group shape); the rest is checked when they
// return, by the pod webhook as each pod is created. The mutating handler
// has warned.
func (h *InferenceServices) validateHeld(req *admissionv1.AdmissionRequest, isvc, old *v1beta1.InferenceService, warnings []string) *admissionv1.AdmissionResponse {
	if _, held := h.heldWhileGone(isvc, old); !held {
		return nil
	}
	if errs := validation.ValidateGangPolicyUpdate(&old.Spec, &isvc.Spec); len(errs) > 0 {
		return admission.Invalid("InferenceService", isvc.Name, errs)
	}
	if msg := shapeChange(old, isvc); msg != "" {
		return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("InferenceService %s: %s", objectName(req), msg))
	}
	return admission.Allowed(warnings...)
}
