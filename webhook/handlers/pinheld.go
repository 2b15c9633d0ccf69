package handlers

import (
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
	"github.com/berthdev/berth/pin"
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
// ome.io/repin is set and differs from the stored object's (pin.RepinAsked).
func repinAsked(isvc, old *v1beta1.InferenceService) bool { return pin.RepinAsked(isvc, old) }

// repinNote is the warning of an UPDATE that asked for a new decision.
func repinNote(isvc *v1beta1.InferenceService, was pin.Pin) string {
	return fmt.Sprintf("annotation %s=%q asks for a new decision: berth decided again (the pin was %s)",
		pin.RepinAnnotation, pin.RepinValue(isvc), was.Describe())
}

// gonePin names what of pin p no longer exists ("" when everything does):
// the runtime, the engine's class or the decoder's class.
func (h *InferenceServices) gonePin(isvc *v1beta1.InferenceService, p pin.Pin) string {
	if _, err := pin.Read(isvc); err != nil {
		return ""
	}
	var gone []string
	if _, err := h.Index.Resolve(isvc, p.RuntimeKind, p.RuntimeName, ""); selection.Code(err) == selection.CodePinnedObjectMissing {
		gone = append(gone, "runtime "+p.Runtime())
	}
	if _, ok := h.Index.AcceleratorClass(p.AcceleratorClass); p.AcceleratorClass != "" && !ok {
		gone = append(gone, "AcceleratorClass "+p.AcceleratorClass)
	}
	if _, ok := h.Index.AcceleratorClass(p.DecoderAcceleratorClass); p.DecoderAcceleratorClass != "" && !ok {
		gone = append(gone, "decoder AcceleratorClass "+p.DecoderAcceleratorClass)
	}
	return strings.Join(gone, " and ")
}

// heldWhileGone says whether an UPDATE keeps a pin whose runtime or class
// is gone: same pin, same inputs, no repin asked, and something of the pin
// missing. Both handlers ask it: the mutating one keeps the pin, the
// validating one admits what it cannot compose.
func (h *InferenceServices) heldWhileGone(isvc, old *v1beta1.InferenceService) (string, bool) {
	cur := pinOf(isvc)
	if old == nil || !pin.Pinned(isvc) || cur != pinOf(old) || repinAsked(isvc, old) || inputDigest(isvc) != inputDigest(old) {
		return "", false
	}
	gone := h.gonePin(isvc, cur)
	return gone, gone != ""
}

// keepGone keeps the stored pin of a service whose pinned runtime or class
// is gone, restores the decision annotations from the stored object, and
// says so.
func (h *InferenceServices) keepGone(isvc, old *v1beta1.InferenceService, gone, digest string) []string {
	pin.SetInputs(isvc, digest)
	if text, ok := old.Annotations[AnnotationDecision]; ok {
		isvc.Annotations[AnnotationDecision] = text
	} else {
		delete(isvc.Annotations, AnnotationDecision)
	}
	h.holdDownloader(isvc, old)
	return []string{fmt.Sprintf("the pinned %s no longer exists; the service keeps its pin and its running pods (berth never moves a service on its own), "+
		"but no new pod can be created until it is recreated. To let berth decide again, set annotation %s to a new value (berth repin %s -n %s)",
		gone, pin.RepinAnnotation, isvc.Name, isvc.Namespace)}
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
