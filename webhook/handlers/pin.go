package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
)

// pinOf is the decision a service's annotations pin (pin.Read), malformed
// or not: verifyEnginePin says what is wrong with a malformed one, and two
// malformed pins compare like their values.
func pinOf(isvc *v1beta1.InferenceService) pin.Pin {
	p, _ := pin.Read(isvc)
	return p
}

// clearPin removes the pin and what is recorded with it (pin.Recorded):
// berth alone writes them, so whatever a request carries there is decided
// again or checked.
func clearPin(isvc *v1beta1.InferenceService) { pin.Clear(isvc) }

// pin resolves and records the decision (old is the stored object on
// UPDATE, nil on CREATE):
//
//   - CREATE: berth decides, whatever resolved-* annotations arrive; the
//     input digest is computable from public fields, so a pin plus a
//     matching digest proves nothing.
//   - UPDATE that edits the pin (runtime, class or the decoder's class):
//     honoured only if the new runtime and classes pass every check
//     selection applies to an explicit choice; the decision is then
//     explained again. A pin that fails is left for the
//     validating handler, which denies with the reason.
//   - UPDATE that sets annotation ome.io/repin to a new value: berth
//     decides again (pinheld.go), whatever the pin and inputs.
//   - UPDATE that keeps the pin and every input (compared with the stored
//     object, not with the digest annotation): the pin holds, so a newly
//     created runtime never moves a running service. If it no longer passes
//     (runtime disabled or edited since), the user is warned, not denied;
//     if its runtime or class was deleted, it is kept with a warning too
//     (keepGone, pinheld.go).
//   - otherwise (inputs changed, or the pin removed): berth decides again.
//     An UPDATE of a service without a pin (one that waited for its
//     model's metadata, nudged by the reconciler) lands here too.
//
// Wherever berth would decide or honour an edited pin, a model that
// awaits metadata, or a model or runtime the request names that does not
// exist yet, leaves the service unpinned with a warning (see await.go); a
// pin that holds is kept. A CREATE drops the reconciler's nudge
// annotations.
func (h *InferenceServices) pin(ctx context.Context, isvc, old *v1beta1.InferenceService) []string {
	digest := inputDigest(isvc)
	cur := pinOf(isvc)
	switch {
	case old == nil:
		clearPin(isvc)
		pin.ClearNudge(isvc)
	case !pin.Pinned(isvc):
	case repinAsked(isvc, old):
		return append([]string{repinNote(isvc, pinOf(old))}, h.decide(ctx, isvc, old, digest)...)
	case cur != pinOf(old):
		c, err := h.verifyPin(isvc, cur)
		if err != nil {
			if w, ok := h.waitFor(isvc, old); ok {
				return await(isvc, w)
			}
			return nil
		}
		h.record(isvc, c, digest)
		h.observe(c)
		return append([]string{editedNote(cur, pinOf(old))}, decisionWarnings(c)...)
	case digest == inputDigest(old):
		if warnings, held := h.hold(isvc, old, cur, digest); held {
			return warnings
		}
		if gone, held := h.heldWhileGone(isvc, old); held {
			return h.keepGone(isvc, old, gone, digest)
		}
		_, err := h.resolvePinned(isvc, cur)
		return append([]string{fmt.Sprintf("the pinned decision cannot be read back (%v); berth decided again", err)}, h.decide(ctx, isvc, old, digest)...)
	}
	return h.decide(ctx, isvc, old, digest)
}

// editedNote says which pin annotations an UPDATE changed and that berth
// keeps them.
func editedNote(cur, old pin.Pin) string {
	var changed []string
	for _, a := range []struct{ key, now, was string }{
		{pin.RuntimeAnnotation, cur.Runtime(), old.Runtime()},
		{pin.ClassAnnotation, cur.AcceleratorClass, old.AcceleratorClass},
		{pin.DecoderClassAnnotation, cur.DecoderAcceleratorClass, old.DecoderAcceleratorClass},
	} {
		if a.now != a.was {
			changed = append(changed, fmt.Sprintf("annotation %s was changed to %s", a.key, a.now))
		}
	}
	return strings.Join(changed, ", ") + "; it passes every compatibility check, so berth keeps it"
}

// decide selects and records the decision; on failure it leaves no pin,
// and the service waits (await.go) or the validating handler denies with
// the reason.
func (h *InferenceServices) decide(ctx context.Context, isvc, old *v1beta1.InferenceService, digest string) []string {
	c, err := h.selectSettled(ctx, isvc)
	if err != nil {
		if w, ok := h.waits(isvc, old, err); ok {
			return await(isvc, w)
		}
		clearPin(isvc)
		return nil
	}
	h.record(isvc, c, digest)
	h.observe(c)
	return decisionWarnings(c)
}

// observe reports a decision to the observer, the decoder's separately
// when it has its own class.
func (h *InferenceServices) observe(c *choice) {
	if h.Observer == nil {
		return
	}
	h.Observer.Decided(v1beta1.ComponentEngine, c.Metrics())
	if c.decoder != nil {
		h.Observer.Decided(v1beta1.ComponentDecoder, c.decoder.Metrics())
	}
}

// decisionWarnings are selection's warnings and the summary, which says
// what selection's "runtime X was auto-selected for M" says and more. The
// decoder's own warnings follow, marked, unless the engine's say the same,
// then the candidates a ServingPolicy excluded (policyExclusions).
func decisionWarnings(c *choice) []string {
	auto := "runtime " + c.RuntimeRef() + " was auto-selected for " + c.Model.Ref()
	out := make([]string, 0, len(c.Warnings)+1)
	for _, w := range c.Warnings {
		if w != auto {
			out = append(out, w)
		}
	}
	if c.decoder != nil {
		for _, w := range c.decoder.Warnings {
			if !slices.Contains(c.Warnings, w) {
				out = append(out, "decoder: "+w)
			}
		}
	}
	if w := policyExclusions(c); w != "" {
		out = append(out, w)
	}
	return append(out, summary(c))
}

// hold keeps an unchanged pin: the digest is refreshed and the decision
// annotation restored from the stored object. held is false when the
// pinned runtime or class no longer exists.
func (h *InferenceServices) hold(isvc, old *v1beta1.InferenceService, p pin.Pin, digest string) (warnings []string, held bool) {
	if _, err := h.resolvePinned(isvc, p); err != nil {
		return nil, false
	}
	pin.SetInputs(isvc, digest)
	if text, ok := old.Annotations[AnnotationDecision]; ok {
		isvc.Annotations[AnnotationDecision] = text
	} else {
		delete(isvc.Annotations, AnnotationDecision)
	}
	h.holdDownloader(isvc, old)
	if m, waiting := h.pendingModel(isvc); waiting {
		return []string{fmt.Sprintf("%s's metadata is being read again (%s); the pinned decision holds meanwhile", m.Ref(), m.Pending)}, true
	}
	if _, err := h.verifyPin(isvc, p); err != nil {
		return []string{fmt.Sprintf("the pinned decision no longer passes: %v. The service keeps it (berth never moves a running service on its own); set annotation %s to a new value (berth repin %s -n %s) to let berth decide again", err, pin.RepinAnnotation, isvc.Name, isvc.Namespace)}, true
	}
	return nil, true
}

// holdDownloader keeps the stored downloader pin. A held service that has
// none but whose model is now downloaded (pinned before berth downloaded
// models, or its model's storage changed) gets the current one.
func (h *InferenceServices) holdDownloader(isvc, old *v1beta1.InferenceService) {
	if img, ok := old.Annotations[v1beta1.AnnotationModelDownloaderImage]; ok {
		isvc.Annotations[v1beta1.AnnotationModelDownloaderImage] = img
		return
	}
	delete(isvc.Annotations, v1beta1.AnnotationModelDownloaderImage)
	if m, err := h.Index.Model(isvc); err == nil {
		setOrDelete(isvc.Annotations, v1beta1.AnnotationModelDownloaderImage, h.downloaderFor(m))
	}
}

// record writes the decision into the annotations, with the downloader
// image when the model is downloaded. The decoder's class is pinned
// whenever the decoder has a decision of its own, even when it equals the
// engine's: an absent decoder pin means "the engine's class".
func (h *InferenceServices) record(isvc *v1beta1.InferenceService, c *choice, digest string) {
	pin.Write(isvc, c.pin(), digest)
	isvc.Annotations[AnnotationDecision] = decisionText(c)
	setOrDelete(isvc.Annotations, v1beta1.AnnotationModelDownloaderImage, h.downloaderFor(c.Model))
}

func setOrDelete(m map[string]string, k, v string) {
	if v == "" {
		delete(m, k)
	} else {
		m[k] = v
	}
}

// verifyPin checks a pin as selection checks an explicit choice: the
// runtime named as spec.runtime (format, version, framework, architecture,
// quantization, size, protocol, not disabled) and the class named as the
// ome.io/accelerator-class annotation (supported by the runtime, meets the
// required capabilities). A pin that contradicts what the user named
// explicitly fails too, as does one without a class when selection would
// choose one. The decoder's pin is checked the same way under the pinned
// runtime; when the decoder has a class of its own and no pin (removed on
// UPDATE), its class is selected again.
//
// selection has no "check this pair" entry point, so this runs Select on a
// copy with both forced and rewrites the messages to name the annotations.
func (h *InferenceServices) verifyPin(isvc *v1beta1.InferenceService, p pin.Pin) (*choice, error) {
	d, err := h.verifyEnginePin(isvc, p)
	if err != nil {
		return nil, err
	}
	c := &choice{Decision: d}
	if p.DecoderAcceleratorClass == "" && !ownDecoderClass(isvc, d.Runtime.Spec) {
		return c, nil
	}
	if isvc.Spec.Decoder == nil && d.Runtime.Spec.DecoderConfig == nil {
		return nil, denyPin(isvc, annotationPath(pin.DecoderClassAnnotation), "annotation %s=%q pins a decoder class, but neither the service nor %s has a decoder; remove the annotation",
			pin.DecoderClassAnnotation, p.DecoderAcceleratorClass, d.RuntimeRef())
	}
	if c.decoder, err = h.decoderDecision(isvc, d, p.DecoderAcceleratorClass); err != nil {
		return nil, err
	}
	return c, nil
}

// verifyEnginePin checks the runtime and the engine's class of a pin.
func (h *InferenceServices) verifyEnginePin(isvc *v1beta1.InferenceService, p pin.Pin) (*selection.Decision, error) {
	if _, err := pin.Read(isvc); err != nil {
		return nil, denyPin(isvc, annotationPath(pin.RuntimeAnnotation), "%v; remove it and berth resolves the runtime again", err)
	}
	kind, name := p.RuntimeKind, p.RuntimeName
	if r := isvc.Spec.Runtime; r != nil && r.Name != "" && (r.Name != name || (r.Kind != nil && *r.Kind != kind)) {
		return nil, denyPin(isvc, annotationPath(pin.RuntimeAnnotation), "annotation %s=%s contradicts spec.runtime (%s); remove the annotation and berth resolves the runtime again", pin.RuntimeAnnotation, p.Runtime(), r.Name)
	}
	view, field := classView(isvc, v1beta1.ComponentEngine)
	if a := strings.TrimSpace(view.Annotations[v1beta1.AnnotationAcceleratorClass]); a != "" && a != p.AcceleratorClass {
		return nil, denyPin(isvc, annotationPath(pin.ClassAnnotation), "annotation %s=%q contradicts annotation %s=%q; remove the first and berth resolves the class again", pin.ClassAnnotation, p.AcceleratorClass, v1beta1.AnnotationAcceleratorClass, a)
	}
	probe := view.DeepCopy()
	probe.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: name, Kind: &kind}
	if p.AcceleratorClass != "" {
		if probe.Annotations == nil {
			probe.Annotations = map[string]string{}
		}
		probe.Annotations[v1beta1.AnnotationAcceleratorClass] = p.AcceleratorClass
	}
	// Not gated by ServingPolicies: berth does not choose here, it checks
	// a choice; the policies judge it on the composed service after the
	// decision (checkPolicies), which says which rule it breaks.
	d, err := h.Index.Select(probe)
	if err != nil {
		return nil, pinError(renameSelector(err, field))
	}
	renameInDecision(d, field)
	if got := d.AcceleratorClassName(); got != p.AcceleratorClass {
		return nil, denyPin(isvc, annotationPath(pin.ClassAnnotation), "the pin names no AcceleratorClass, but %s needs one for this service (berth would choose %s); remove annotation %s and berth decides again", p.Runtime(), got, pin.RuntimeAnnotation)
	}
	if p.AcceleratorClass != "" && view.Annotations[v1beta1.AnnotationAcceleratorClass] == "" {
		for i, l := range d.Explanation { // the pin chose the class, not the user's annotation
			d.Explanation[i] = pinWords.Replace(l)
		}
	}
	return d, nil
}

// pinError rewords selection's error about an explicit choice, which
// names the fields the probe set, to name the annotations the pin is in,
// in its text and in its causes' paths; it stays a selection.Error, but
// without its code: a failed pin is denied, never taken for a reference
// the request brings and admission waits for (waits).
func pinError(err error) error {
	err = rewordError(err, pinWords.Replace, pinPaths.Replace)
	if se, ok := err.(*selection.Error); ok {
		se.Code = ""
	}
	return err
}

var pinPaths = strings.NewReplacer(
	"spec.runtime.name", annotationPath(pin.RuntimeAnnotation).String(),
	annotationPath(v1beta1.AnnotationAcceleratorClass).String(), annotationPath(pin.ClassAnnotation).String(),
)

var pinWords = strings.NewReplacer(
	": spec.runtime.name: ", ": annotation "+pin.RuntimeAnnotation+": ",
	"; fix the runtime or remove spec.runtime to auto-select one", "; remove the annotation and berth decides again",
	"annotation "+v1beta1.AnnotationAcceleratorClass, "annotation "+pin.ClassAnnotation,
)

// inputDigest hashes exactly what the decision depends on. It is recorded
// in an annotation for reference; berth compares digests it computes from
// the stored and the new object, never the annotation.
func inputDigest(isvc *v1beta1.InferenceService) string {
	// The overrides are omitted when unset, so that a service without them
	// keeps the digest it had before they existed.
	in := struct {
		Model    *v1beta1.ModelRef
		Runtime  *v1beta1.ServingRuntimeRef
		Selector *v1beta1.AcceleratorSelector
		Protocol *v1beta1.ProtocolVersion
		Format   *v1beta1.ModelFormat
		Class    string
		Strategy string
		Engine   *v1beta1.AcceleratorSelector `json:",omitempty"`
		Decoder  *v1beta1.AcceleratorSelector `json:",omitempty"`
	}{
		Model: isvc.Spec.Model, Runtime: isvc.Spec.Runtime, Selector: isvc.Spec.AcceleratorSelector,
		Protocol: isvc.Spec.ProtocolVersion,
		Class:    isvc.Annotations[v1beta1.AnnotationAcceleratorClass],
		Strategy: isvc.Annotations[v1beta1.AnnotationSelectionStrategy],
		Engine:   isvc.Spec.AcceleratorOverrideOf(v1beta1.ComponentEngine),
		Decoder:  isvc.Spec.AcceleratorOverrideOf(v1beta1.ComponentDecoder),
	}
	if p := isvc.Spec.Predictor; p != nil && p.Model != nil {
		in.Format = &p.Model.ModelFormat
	}
	b, _ := json.Marshal(in) // plain structs of strings: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
