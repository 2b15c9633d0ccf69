package handlers

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
)

// A service waits, admitted without a pin, instead of being denied, when
// (`kubectl apply -f dir/` creates files in name order, so the
// service may come before what it names):
//
//   - its model awaits metadata (model.go), or
//   - spec.model.name or spec.runtime.name names a model or runtime that
//     does not exist (selection.Index.Awaited), and the request introduces
//     that reference: a CREATE, an UPDATE of a service stored unpinned
//     (one that waits, nudged by the reconciler), or an UPDATE that
//     changes spec.model, resp. spec.runtime. A pinned service whose model
//     or runtime was deleted is not unpinned by an unrelated update: that
//     is denied as before, and its pin is never dropped.
//
// Anything else still denies: a service that names no model, an unknown
// kind, a runtime that exists but cannot serve the model, a disabled
// model. The warning names what is missing and the field to fix if it is
// a typo; annotation ome.io/decision says the same. The reconciler reports
// the wait (Resolved=False reason ModelNotFound or RuntimeNotFound) and
// nudges the service when the object is created (annotations
// ome.io/model-metadata-revision and ome.io/runtime-revision); the
// webhook decides on that UPDATE (package pin owns that protocol: Nudge).
// Neither nudge annotation is an input of the decision, and a CREATE drops
// both (pin.ClearNudge), so a forged value neither moves a pin nor keeps
// the reconciler from nudging.

// waiting is why an unpinned service waits.
type waiting struct {
	pending *selection.Model  // the model awaits metadata
	missing selection.Awaited // named references that do not exist
}

// waitFor says whether the service waits rather than being denied; old is
// the stored object on UPDATE.
func (h *InferenceServices) waitFor(isvc, old *v1beta1.InferenceService) (waiting, bool) {
	var w waiting
	if m, ok := h.pendingModel(isvc); ok {
		w.pending = &m
	}
	w.missing = h.Index.Awaited(isvc)
	if !introduces(old, func(s *v1beta1.InferenceService) any { return s.Spec.Model }, isvc) {
		w.missing.Model = ""
	}
	if !introduces(old, func(s *v1beta1.InferenceService) any { return s.Spec.Runtime }, isvc) {
		w.missing.Runtime = ""
	}
	return w, w.pending != nil || w.missing != selection.Awaited{}
}

// introduces: the request brings the reference (see above).
func introduces(old *v1beta1.InferenceService, ref func(*v1beta1.InferenceService) any, cur *v1beta1.InferenceService) bool {
	return old == nil || !pin.Pinned(old) || !equality.Semantic.DeepEqual(ref(old), ref(cur))
}

// waits says whether a service selection failed for with err waits: the
// model awaits metadata, or selection failed on a missing reference the
// request introduces (CodeModelNotFound for spec.model.name, not for a
// service that names no model; CodeRuntimeNotFound for spec.runtime.name).
func (h *InferenceServices) waits(isvc, old *v1beta1.InferenceService, err error) (waiting, bool) {
	code := selection.Code(err)
	w, ok := h.waitFor(isvc, old)
	switch {
	case !ok:
		return w, false
	case code == selection.CodeModelMetadataPending,
		code == selection.CodeModelNotFound && w.missing.Model != "",
		code == selection.CodeRuntimeNotFound && w.missing.Runtime != "":
		return w, true
	}
	return w, false
}

// leftWaiting says whether the mutating handler admitted isvc unpinned to
// wait (await wrote why in ome.io/decision; nothing else leaves a service
// without a pin). The validating handler admits such a service as it is:
// what it waited for may have arrived between the two handlers, and a
// decision made now would lack what the mutating handler pins with one
// (the downloader image). Nothing runs unpinned; the reconciler's nudge
// brings the service back through both handlers to be pinned and judged.
func leftWaiting(isvc *v1beta1.InferenceService) bool {
	return !pin.Pinned(isvc) && strings.HasPrefix(isvc.Annotations[AnnotationDecision], waitingPrefix)
}

// waitingPrefix begins every line await writes in ome.io/decision, and
// nothing a pinned decision writes there.
const waitingPrefix = "waiting"

// await leaves the service unpinned, says why in annotation
// ome.io/decision (one line per reason), and returns the warnings.
func await(isvc *v1beta1.InferenceService, w waiting) []string {
	clearPin(isvc)
	if isvc.Annotations == nil {
		isvc.Annotations = map[string]string{}
	}
	var warnings, why []string
	if w.pending != nil {
		warnings = append(warnings, pendingWarning(isvc, *w.pending))
		why = append(why, pendingDecision(*w.pending))
	}
	if what, fix := missingText(w.missing); what != "" {
		once := "it exists"
		if w.missing.Model != "" && w.missing.Runtime != "" {
			once = "both exist"
		}
		warnings = append(warnings, "InferenceService "+isvc.Namespace+"/"+isvc.Name+": "+what+"; admitted unpinned: berth decides once "+once+"; "+fix)
		why = append(why, waitingPrefix+": "+what+"; berth pins a runtime once "+once+"; "+fix)
	}
	isvc.Annotations[AnnotationDecision] = strings.Join(why, "\n")
	return warnings
}

// missingText lists what is missing by field, and the fix of a typo.
func missingText(a selection.Awaited) (what, fix string) {
	var parts, fields []string
	if a.Model != "" {
		parts, fields = append(parts, "spec.model.name: "+a.Model), append(fields, "spec.model.name")
	}
	if a.Runtime != "" {
		parts, fields = append(parts, "spec.runtime.name: "+a.Runtime), append(fields, "spec.runtime.name")
	}
	switch len(fields) {
	case 0:
		return "", ""
	case 1:
		return parts[0], "if the name is a typo, fix " + fields[0]
	}
	return strings.Join(parts, "; "), "if a name is a typo, fix " + strings.Join(fields, " or ")
}
