package pin

import (
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// The annotations of the pin, by name. Use them in messages only; read and
// write the pin with Read, Write and Clear.
const (
	RuntimeAnnotation      = v1beta1.AnnotationResolvedRuntime
	ClassAnnotation        = v1beta1.AnnotationResolvedAcceleratorClass
	DecoderClassAnnotation = v1beta1.AnnotationResolvedDecoderAcceleratorClass
	InputsAnnotation       = v1beta1.AnnotationResolvedInputs
	RepinAnnotation        = v1beta1.AnnotationRepin
)

// The kinds a pinned runtime may have (selection's KindServingRuntime and
// KindClusterServingRuntime).
const (
	KindServingRuntime        = "ServingRuntime"
	KindClusterServingRuntime = "ClusterServingRuntime"
)

// Pin is the decision recorded on an InferenceService. Two pins are equal
// when they pin the same decision: the digest of the inputs it was made
// from, recorded with it (Write), is not part of it.
type Pin struct {
	RuntimeKind string // KindServingRuntime or KindClusterServingRuntime
	RuntimeName string
	// AcceleratorClass is the engine's class, and the decoder's unless it
	// has its own; "" when the runtime needs none.
	AcceleratorClass string
	// DecoderAcceleratorClass is the decoder's own class; "": the engine's.
	DecoderAcceleratorClass string
}

// Runtime is "<Kind>/<name>", "" when no runtime is pinned. Of a
// malformed pin without a "/" (Read), it is the value as written.
func (p Pin) Runtime() string {
	if p.RuntimeName == "" {
		return p.RuntimeKind
	}
	return p.RuntimeKind + "/" + p.RuntimeName
}

// ClassFor is the class a component's pods run on: the decoder's own
// class when it has one, else the engine's ("" for none). The router gets
// the engine's (merge does not use it).
func (p Pin) ClassFor(component string) string {
	if component == v1beta1.ComponentDecoder && p.DecoderAcceleratorClass != "" {
		return p.DecoderAcceleratorClass
	}
	return p.AcceleratorClass
}

// Describe is the pin in words: "<Kind>/<name> on AcceleratorClass c,
// decoder on AcceleratorClass d".
func (p Pin) Describe() string {
	s := p.Runtime()
	if p.AcceleratorClass != "" {
		s += " on AcceleratorClass " + p.AcceleratorClass
	}
	if p.DecoderAcceleratorClass != "" {
		s += ", decoder on AcceleratorClass " + p.DecoderAcceleratorClass
	}
	return s
}

// MalformedError is a pin annotation whose value berth never writes.
type MalformedError struct {
	Annotation, Value string
	Reason            string // what is wrong with the value
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("annotation %s=%q %s", e.Annotation, e.Value, e.Reason)
}

// Pinned says whether obj carries a pin: a non-empty runtime annotation,
// well-formed or not (Read says which).
func Pinned(obj metav1.Object) bool {
	return annotations(obj)[RuntimeAnnotation] != ""
}

// annotations are obj's annotations; nil for a nil object (an interface
// holding a nil pointer too).
func annotations(obj metav1.Object) map[string]string {
	if isNil(obj) {
		return nil
	}
	return obj.GetAnnotations()
}

func isNil(obj metav1.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Read reads the pin of obj; a zero Runtime when it has none (Pinned). A
// runtime annotation that is not "<Kind>/<name>" with a kind a runtime has
// is a *MalformedError; the Pin returned with it still holds what the
// annotations say (the runtime split at its first "/"), for messages, so
// that two malformed pins compare like their values.
func Read(obj metav1.Object) (Pin, error) {
	ann := annotations(obj)
	p := Pin{
		AcceleratorClass:        ann[ClassAnnotation],
		DecoderAcceleratorClass: ann[DecoderClassAnnotation],
	}
	ref := ann[RuntimeAnnotation]
	if ref == "" {
		return p, nil
	}
	kind, name, ok := strings.Cut(ref, "/")
	p.RuntimeKind, p.RuntimeName = kind, name
	switch {
	case !ok || name == "":
		return p, &MalformedError{RuntimeAnnotation, ref, "is not <Kind>/<name>"}
	case kind != KindServingRuntime && kind != KindClusterServingRuntime:
		return p, &MalformedError{RuntimeAnnotation, ref, "names kind " + fmt.Sprintf("%q", kind) + ", not ServingRuntime or ClusterServingRuntime"}
	}
	return p, nil
}

// Write records p on obj: the runtime, the classes (an empty one is
// removed), and the digest of the inputs it was made from (inputs).
func Write(obj metav1.Object, p Pin, inputs string) {
	if isNil(obj) {
		return
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	setOrDelete(ann, RuntimeAnnotation, p.Runtime())
	setOrDelete(ann, ClassAnnotation, p.AcceleratorClass)
	setOrDelete(ann, DecoderClassAnnotation, p.DecoderAcceleratorClass)
	setOrDelete(ann, InputsAnnotation, inputs)
	obj.SetAnnotations(ann)
}

// SetInputs refreshes the digest of a pin that holds.
func SetInputs(obj metav1.Object, digest string) {
	if isNil(obj) {
		return
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	setOrDelete(ann, InputsAnnotation, digest)
	obj.SetAnnotations(ann)
}

// Recorded are the annotations berth alone writes when it decides: the
// pin's, the ranking and the downloader image. Whatever a request carries
// there is decided again or checked.
var Recorded = []string{
	RuntimeAnnotation, ClassAnnotation, DecoderClassAnnotation, InputsAnnotation,
	v1beta1.AnnotationDecision, v1beta1.AnnotationModelDownloaderImage,
}

// Clear removes the pin and what is recorded with it (Recorded).
func Clear(obj metav1.Object) {
	ann := annotations(obj)
	for _, k := range Recorded {
		delete(ann, k)
	}
}

// RepinAsked says whether an UPDATE (old: the stored object; nil on
// CREATE) asks for a new decision: annotation ome.io/repin is set and
// differs from the stored object's.
func RepinAsked(obj, old metav1.Object) bool {
	if isNil(old) {
		return false
	}
	v := annotations(obj)[RepinAnnotation]
	return v != "" && v != annotations(old)[RepinAnnotation]
}

// RepinValue is the value of annotation ome.io/repin ("" when unset).
func RepinValue(obj metav1.Object) string { return annotations(obj)[RepinAnnotation] }

// RepinPatch is the JSON merge patch that sets annotation ome.io/repin to
// value.
func RepinPatch(value string) []byte {
	return annotationsPatch(map[string]string{RepinAnnotation: value})
}

func setOrDelete(m map[string]string, k, v string) {
	if v == "" {
		delete(m, k)
	} else {
		m[k] = v
	}
}
