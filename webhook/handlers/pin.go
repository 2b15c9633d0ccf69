package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// pinned is the decision a service's annotations pin.
type pinned struct{ runtime, class string }

func pinOf(isvc *v1beta1.InferenceService) pinned {
	return pinned{isvc.Annotations[v1beta1.AnnotationResolvedRuntime], isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass]}
}

// berthAnnotations are written by berth only: whatever a request carries
// there is decided again or checked.
var berthAnnotations = []string{
	v1beta1.AnnotationResolvedRuntime, v1beta1.AnnotationResolvedAcceleratorClass,
	v1beta1.AnnotationResolvedInputs, AnnotationDecision,
}

func clearPin(isvc *v1beta1.InferenceService) {
	for _, k := range berthAnnotations {
		delete(isvc.Annotations, k)
	}
}

// pin resolves and records the decision (old is the stored object on
// UPDATE, nil on CREATE):
//
//   - CREATE: berth decides, whatever resolved-* annotations arrive; the
//     input digest is computable from public fields, so a pin plus a
//     matching digest proves nothing.
//   - UPDATE that edits the pin: honoured only if the new runtime and class
//     pass every check selection applies to an explicit choice; the
//     decision is then explained again. A pin that fails is left for the
//     validating handler, which denies with the reason.
//   - UPDATE that keeps the pin and every input (compared with the stored
//     object, not with the digest annotation): the pin holds, so a newly
//     created runtime never moves a running service. If it no longer passes
//     (runtime disabled or edited since), the user is warned, not denied.
//   - otherwise (inputs changed, or the pin removed): berth decides again.
func (h *InferenceServices) pin(ctx context.Context, isvc, old *v1beta1.InferenceService) []string {
	digest := inputDigest(isvc)
	cur := pinOf(isvc)
	switch {
	case old == nil:
		clearPin(isvc)
	case cur.runtime == "":
	case cur != pinOf(old):
		d, err := h.verifyPin(isvc, cur)
		if err != nil {
			return nil
		}
		record(isvc, d, digest)
		note := fmt.Sprintf("annotation %s was changed to %s; it passes every compatibility check, so berth keeps it", v1beta1.AnnotationResolvedRuntime, cur.runtime)
		return append([]string{note}, decisionWarnings(d)...)
	case digest == inputDigest(old):
		if warnings, held := h.hold(isvc, old, cur, digest); held {
			return warnings
		}
		return append([]string{fmt.Sprintf("the pinned runtime %s or AcceleratorClass %q no longer exists; berth decided again", cur.runtime, cur.class)}, h.decide(ctx, isvc, digest)...)
	}
	return h.decide(ctx, isvc, digest)
}

// decide selects and records the decision; on failure it leaves no pin
// (the validating handler denies with the reason).
func (h *InferenceServices) decide(ctx context.Context, isvc *v1beta1.InferenceService, digest string) []string {
	d, err := h.selectSettled(ctx, isvc)
	if err != nil {
		clearPin(isvc)
		return nil
	}
	record(isvc, d, digest)
	return decisionWarnings(d)
}

// decisionWarnings are selection's warnings and the summary, which says
// what selection's "runtime X was auto-selected for M" says and more.
func decisionWarnings(d *selection.Decision) []string {
	auto := "runtime " + d.RuntimeRef() + " was auto-selected for " + d.Model.Ref()
	out := make([]string, 0, len(d.Warnings)+1)
	for _, w := range d.Warnings {
		if w != auto {
			out = append(out, w)
		}
	}
	return append(out, summary(d))
}

// hold keeps an unchanged pin: the digest is refreshed and the decision
// annotation restored from the stored object. held is false when the
// pinned runtime or class no longer exists.
func (h *InferenceServices) hold(isvc, old *v1beta1.InferenceService, p pinned, digest string) (warnings []string, held bool) {
	kind, name, _ := strings.Cut(p.runtime, "/")
	if _, err := h.Index.Resolve(isvc, kind, name, p.class); err != nil {
		return nil, false
	}
	isvc.Annotations[v1beta1.AnnotationResolvedInputs] = digest
	if text, ok := old.Annotations[AnnotationDecision]; ok {
		isvc.Annotations[AnnotationDecision] = text
	} else {
		delete(isvc.Annotations, AnnotationDecision)
	}
	if _, err := h.verifyPin(isvc, p); err != nil {
		return []string{fmt.Sprintf("the pinned decision no longer passes: %v. The service keeps it (berth never moves a running service on its own); remove annotation %s to let berth decide again", err, v1beta1.AnnotationResolvedRuntime)}, true
	}
	return nil, true
}

// record writes the decision into the annotations.
func record(isvc *v1beta1.InferenceService, d *selection.Decision, digest string) {
	if isvc.Annotations == nil {
		isvc.Annotations = map[string]string{}
	}
	isvc.Annotations[v1beta1.AnnotationResolvedRuntime] = d.RuntimeRef()
	if c := d.AcceleratorClassName(); c != "" {
		isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass] = c
	} else {
		delete(isvc.Annotations, v1beta1.AnnotationResolvedAcceleratorClass)
	}
	isvc.Annotations[v1beta1.AnnotationResolvedInputs] = digest
	isvc.Annotations[AnnotationDecision] = decisionText(d)
}

// verifyPin checks a pin as selection checks an explicit choice: the
// runtime named as spec.runtime (format, version, framework, architecture,
// quantization, size, protocol, not disabled) and the class named as the
// ome.io/accelerator-class annotation (supported by the runtime, meets the
// required capabilities). A pin that contradicts what the user named
// explicitly fails too, as does one without a class when selection would
// choose one.
//
// selection has no "check this pair" entry point, so this runs Select on a
// copy with both forced and rewrites the messages to name the annotations.
func (h *InferenceServices) verifyPin(isvc *v1beta1.InferenceService, p pinned) (*selection.Decision, error) {
	svc := "InferenceService " + isvc.Namespace + "/" + isvc.Name
	kind, name, ok := strings.Cut(p.runtime, "/")
	if !ok || (kind != selection.KindServingRuntime && kind != selection.KindClusterServingRuntime) || name == "" {
		return nil, fmt.Errorf("%s: annotation %s=%q is not ServingRuntime/<name> or ClusterServingRuntime/<name>; remove it and berth resolves the runtime again", svc, v1beta1.AnnotationResolvedRuntime, p.runtime)
	}
	if r := isvc.Spec.Runtime; r != nil && r.Name != "" && (r.Name != name || (r.Kind != nil && *r.Kind != kind)) {
		return nil, fmt.Errorf("%s: annotation %s=%s contradicts spec.runtime (%s); remove the annotation and berth resolves the runtime again", svc, v1beta1.AnnotationResolvedRuntime, p.runtime, r.Name)
	}
	if a := strings.TrimSpace(isvc.Annotations[v1beta1.AnnotationAcceleratorClass]); a != "" && a != p.class {
		return nil, fmt.Errorf("%s: annotation %s=%q contradicts annotation %s=%q; remove the first and berth resolves the class again", svc, v1beta1.AnnotationResolvedAcceleratorClass, p.class, v1beta1.AnnotationAcceleratorClass, a)
	}
	probe := isvc.DeepCopy()
	probe.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: name, Kind: &kind}
	if p.class != "" {
		if probe.Annotations == nil {
			probe.Annotations = map[string]string{}
		}
		probe.Annotations[v1beta1.AnnotationAcceleratorClass] = p.class
	}
	d, err := h.Index.Select(probe)
	if err != nil {
		return nil, pinError(err)
	}
	if got := d.AcceleratorClassName(); got != p.class {
		return nil, fmt.Errorf("%s: the pin names no AcceleratorClass, but %s needs one for this service (berth would choose %s); remove annotation %s and berth decides again", svc, p.runtime, got, v1beta1.AnnotationResolvedRuntime)
	}
	if p.class != "" && isvc.Annotations[v1beta1.AnnotationAcceleratorClass] == "" {
		for i, l := range d.Explanation { // the pin chose the class, not the user's annotation
			d.Explanation[i] = pinWords.Replace(l)
		}
	}
	return d, nil
}

// pinError rewords selection's messages about an explicit choice, which
// name the fields the probe set, to name the annotations the pin is in.
func pinError(err error) error { return fmt.Errorf("%s", pinWords.Replace(err.Error())) }

var pinWords = strings.NewReplacer(
	": spec.runtime.name: ", ": annotation "+v1beta1.AnnotationResolvedRuntime+": ",
	"; fix the runtime or remove spec.runtime to auto-select one", "; remove the annotation and berth decides again",
	"annotation "+v1beta1.AnnotationAcceleratorClass, "annotation "+v1beta1.AnnotationResolvedAcceleratorClass,
)

// inputDigest hashes exactly what the decision depends on. It is recorded
// in an annotation for reference; berth compares digests it computes from
// the stored and the new object, never the annotation.
func inputDigest(isvc *v1beta1.InferenceService) string {
	in := struct {
		Model    *v1beta1.ModelRef
		Runtime  *v1beta1.ServingRuntimeRef
		Selector *v1beta1.AcceleratorSelector
		Protocol *v1beta1.ProtocolVersion
		Format   *v1beta1.ModelFormat
		Class    string
		Strategy string
	}{
		Model: isvc.Spec.Model, Runtime: isvc.Spec.Runtime, Selector: isvc.Spec.AcceleratorSelector,
		Protocol: isvc.Spec.ProtocolVersion,
		Class:    isvc.Annotations[v1beta1.AnnotationAcceleratorClass],
		Strategy: isvc.Annotations[v1beta1.AnnotationSelectionStrategy],
	}
	if p := isvc.Spec.Predictor; p != nil && p.Model != nil {
		in.Format = &p.Model.ModelFormat
	}
	b, _ := json.Marshal(in) // plain structs of strings: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
