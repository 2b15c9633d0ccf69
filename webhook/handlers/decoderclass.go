package handlers

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
)

// Engine and decoder may run on different AcceleratorClasses (OEP-0003:
// "Engine and Decoder can have different AcceleratorClass selections").
//
//   - The engine's class is chosen as for any service, except that
//     spec.engine.acceleratorOverride, when set, stands in for
//     spec.acceleratorSelector and the ome.io/accelerator-class and
//     ome.io/selection-strategy annotations: the most specific setting wins.
//   - The decoder has a class of its own when the service runs a decoder and
//     either component has an override. Selection then runs again with the
//     engine's runtime forced and the decoder's view of the service: its
//     override, else the service's selector and annotations. The class is
//     pinned in ome.io/resolved-decoder-accelerator-class.
//   - Otherwise the decoder runs on the engine's class, as before.
//
// selection (which reads one selector per service) is not changed: berth
// asks it twice, with a different view of the service each time.

// choice is the decision for every component.
type choice struct {
	// The engine's decision: model, runtime and the engine's class.
	*selection.Decision
	// decoder is the decoder's class decision (same model and runtime);
	// nil when the decoder runs on the engine's class.
	decoder *selection.Decision
}

// classFor is the class a component's pods are composed with.
func (c *choice) classFor(component string) *v1beta1.AcceleratorClass {
	if component == v1beta1.ComponentDecoder && c.decoder != nil {
		return c.decoder.AcceleratorClass
	}
	return c.AcceleratorClass
}

// decoderClassName is the decoder's own class, "" when it has none.
func (c *choice) decoderClassName() string {
	if c.decoder == nil {
		return ""
	}
	return c.decoder.AcceleratorClassName()
}

// pin is the decision as the service records it (pin.Write).
func (c *choice) pin() pin.Pin {
	return pin.Pin{RuntimeKind: c.Runtime.Kind, RuntimeName: c.Runtime.Name,
		AcceleratorClass: c.AcceleratorClassName(), DecoderAcceleratorClass: c.decoderClassName()}
}

// classView is the service as selection sees it when choosing a
// component's class, and the field of the component's override ("" when
// it has none, and the view is the service itself).
func classView(isvc *v1beta1.InferenceService, component string) (*v1beta1.InferenceService, string) {
	o := isvc.Spec.AcceleratorOverrideOf(component)
	if o == nil {
		return isvc, ""
	}
	v := isvc.DeepCopy()
	v.Spec.AcceleratorSelector = o.DeepCopy()
	delete(v.Annotations, v1beta1.AnnotationAcceleratorClass)
	delete(v.Annotations, v1beta1.AnnotationSelectionStrategy)
	return v, "spec." + component + ".acceleratorOverride"
}

// ownDecoderClass says whether the decoder's class is selected on its own:
// the service runs a decoder, and an override sets it apart from the engine.
func ownDecoderClass(isvc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec) bool {
	if isvc.Spec.Decoder == nil && (rt == nil || rt.DecoderConfig == nil) {
		return false
	}
	return isvc.Spec.AcceleratorOverrideOf(v1beta1.ComponentDecoder) != nil || isvc.Spec.AcceleratorOverrideOf(v1beta1.ComponentEngine) != nil
}

// selectOnce selects the engine's decision and, when the decoder has a
// class of its own, the decoder's.
func (h *InferenceServices) selectOnce(isvc *v1beta1.InferenceService) (*choice, error) {
	view, field := classView(isvc, v1beta1.ComponentEngine)
	d, err := h.selectIndex(view)
	if err != nil {
		return nil, renameSelector(err, field)
	}
	renameInDecision(d, field)
	c := &choice{Decision: d}
	if ownDecoderClass(isvc, d.Runtime.Spec) {
		if c.decoder, err = h.decoderDecision(isvc, d, ""); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// decoderDecision selects the decoder's class under the engine's runtime,
// or, with class set, checks that class as selection checks an explicit
// choice (a pinned decoder class).
func (h *InferenceServices) decoderDecision(isvc *v1beta1.InferenceService, engine *selection.Decision, class string) (*selection.Decision, error) {
	view, field := classView(isvc, v1beta1.ComponentDecoder)
	if a := strings.TrimSpace(view.Annotations[v1beta1.AnnotationAcceleratorClass]); class != "" && a != "" && a != class {
		return nil, denyPin(isvc, annotationPath(pin.DecoderClassAnnotation), "annotation %s=%q contradicts annotation %s=%q, which chooses the decoder's class too; remove the first and berth resolves the decoder's class again",
			pin.DecoderClassAnnotation, class, v1beta1.AnnotationAcceleratorClass, a)
	}
	probe := view.DeepCopy()
	kind := engine.Runtime.Kind
	probe.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: engine.Runtime.Name, Kind: &kind}
	if class != "" {
		if probe.Annotations == nil {
			probe.Annotations = map[string]string{}
		}
		probe.Annotations[v1beta1.AnnotationAcceleratorClass] = class
	}
	// A pinned class is checked, not chosen: ServingPolicies judge it on
	// the composed service (see verifyEnginePin).
	choose := h.selectIndex
	if class != "" {
		choose = h.Index.Select
	}
	d, err := choose(probe)
	if err != nil {
		err = renameSelector(err, field)
		if class != "" {
			err = decoderPinWords(err)
		}
		return nil, decoderError(isvc, engine, err)
	}
	renameInDecision(d, field)
	if class != "" && view.Annotations[v1beta1.AnnotationAcceleratorClass] == "" {
		for i, l := range d.Explanation { // the pin chose the class, not the user's annotation
			d.Explanation[i] = strings.ReplaceAll(l, "annotation "+v1beta1.AnnotationAcceleratorClass, "annotation "+pin.DecoderClassAnnotation)
		}
	}
	return d, nil
}

// decoderError says that err is about the decoder's class, under the
// engine's runtime. A selection error stays one: its code, fields and
// candidates are kept.
func decoderError(isvc *v1beta1.InferenceService, engine *selection.Decision, err error) error {
	svc := "InferenceService " + isvc.Namespace + "/" + isvc.Name
	reword := func(text string) string {
		return fmt.Sprintf("%s: the decoder's AcceleratorClass, under runtime %s: %s", svc, engine.RuntimeRef(), strings.TrimPrefix(text, svc+": "))
	}
	var se *selection.Error
	if errors.As(err, &se) {
		out := *se
		out.Reason = reword(se.Reason)
		return &out
	}
	return errors.New(reword(err.Error()))
}

// renameSelector rewrites selection's words about spec.acceleratorSelector
// to name the override the view put there. A selection error stays one,
// with its code (metrics and the pending-metadata path read it).
func renameSelector(err error, field string) error {
	if field == "" {
		return err
	}
	rename := func(s string) string { return strings.ReplaceAll(s, "spec.acceleratorSelector", field) }
	return rewordError(err, rename, rename)
}

// rewordError applies text to an error's words and path to the fields of
// a selection error, which stays one, with its code.
func rewordError(err error, text, path func(string) string) error {
	var se *selection.Error
	if !errors.As(err, &se) {
		return errors.New(text(err.Error()))
	}
	out := &selection.Error{Code: se.Code, Reason: text(se.Reason), Service: se.Service, Field: path(se.Field)}
	for _, c := range se.Candidates {
		out.Candidates = append(out.Candidates, text(c))
	}
	for _, f := range se.CandidateFields {
		out.CandidateFields = append(out.CandidateFields, path(f))
	}
	return out
}

// renameInDecision does the same for a decision's explanation and warnings.
func renameInDecision(d *selection.Decision, field string) {
	if field == "" {
		return
	}
	for _, lines := range [][]string{d.Explanation, d.Warnings} {
		for i, l := range lines {
			lines[i] = strings.ReplaceAll(l, "spec.acceleratorSelector", field)
		}
	}
}

// decoderPinWords rewords selection's messages about the class annotation
// the probe set to name the decoder's pin.
func decoderPinWords(err error) error {
	at := func(key string) string { return field.NewPath("metadata", "annotations").Key(key).String() }
	return rewordError(err,
		func(s string) string {
			return strings.ReplaceAll(s, "annotation "+v1beta1.AnnotationAcceleratorClass, "annotation "+pin.DecoderClassAnnotation)
		},
		func(s string) string {
			return strings.ReplaceAll(s, at(v1beta1.AnnotationAcceleratorClass), at(pin.DecoderClassAnnotation))
		})
}

// resolvePinned re-reads a pin without checking it (Index.Resolve): the
// engine's runtime and class and the decoder's class when pinned.
func (h *InferenceServices) resolvePinned(isvc *v1beta1.InferenceService, p pin.Pin) (*choice, error) {
	d, err := h.Index.Resolve(isvc, p.RuntimeKind, p.RuntimeName, p.AcceleratorClass)
	if err != nil {
		return nil, err
	}
	c := &choice{Decision: d}
	if p.DecoderAcceleratorClass != "" {
		if c.decoder, err = h.Index.Resolve(isvc, p.RuntimeKind, p.RuntimeName, p.DecoderAcceleratorClass); err != nil {
			return nil, decoderPinMissing(err)
		}
	}
	return c, nil
}

// decoderPinMissing rewords Resolve's "pinned AcceleratorClass is gone"
// for the decoder's pin.
func decoderPinMissing(err error) error {
	r := strings.NewReplacer("pinned AcceleratorClass", "pinned decoder AcceleratorClass",
		"annotation "+pin.ClassAnnotation, "annotation "+pin.DecoderClassAnnotation)
	return errors.New(r.Replace(err.Error()))
}
