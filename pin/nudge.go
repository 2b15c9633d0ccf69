package pin

import (
	"encoding/json"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// The nudge annotations, by name (for messages).
const (
	ModelNudgeAnnotation   = v1beta1.AnnotationModelMetadataRevision
	RuntimeNudgeAnnotation = v1beta1.AnnotationRuntimeRevision
)

// Nudge is what the reconciler's nudge patches on an unpinned service (an
// empty field is not patched), or what a service carries (ReadNudge).
type Nudge struct {
	// ModelRevision is the model's metadata revision
	// (plan.ModelMetadataRevision), with an attempt suffix on a retry.
	ModelRevision string
	// RuntimeRevision is <Kind>/<name>@<uid> of the runtime the service
	// names, with an attempt suffix on a retry.
	RuntimeRevision string
}

// ReadNudge reads the nudge annotations of obj, as they are.
func ReadNudge(obj metav1.Object) Nudge {
	ann := annotations(obj)
	return Nudge{ModelRevision: ann[ModelNudgeAnnotation], RuntimeRevision: ann[RuntimeNudgeAnnotation]}
}

// ClearNudge removes the nudge annotations (a CREATE drops them: they are
// the reconciler's).
func ClearNudge(obj metav1.Object) {
	ann := annotations(obj)
	delete(ann, ModelNudgeAnnotation)
	delete(ann, RuntimeNudgeAnnotation)
}

// IsZero says whether the nudge patches nothing.
func (n Nudge) IsZero() bool { return n == Nudge{} }

// Annotations are the annotations the nudge patches (its set fields).
func (n Nudge) Annotations() map[string]string {
	out := map[string]string{}
	if n.ModelRevision != "" {
		out[ModelNudgeAnnotation] = n.ModelRevision
	}
	if n.RuntimeRevision != "" {
		out[RuntimeNudgeAnnotation] = n.RuntimeRevision
	}
	return out
}

// MergePatch is the JSON merge patch that sets the nudge's annotations.
func (n Nudge) MergePatch() []byte { return annotationsPatch(n.Annotations()) }

// Attempt is the highest attempt among the nudge's set fields, 0 when
// none is set.
func (n Nudge) Attempt() int {
	a := 0
	for _, v := range []string{n.ModelRevision, n.RuntimeRevision} {
		if v != "" {
			a = max(a, NudgeAttempt(v))
		}
	}
	return a
}

// Retry is the nudge asked again: each set field's value without its
// attempt, suffixed "#<attempt>".
func (n Nudge) Retry(attempt int) Nudge {
	with := func(v string) string {
		if v == "" {
			return ""
		}
		return NudgeBase(v) + "#" + strconv.Itoa(attempt)
	}
	return Nudge{ModelRevision: with(n.ModelRevision), RuntimeRevision: with(n.RuntimeRevision)}
}

// NudgeBase is a nudge annotation's value without its attempt suffix.
func NudgeBase(v string) string {
	base, _ := splitNudge(v)
	return base
}

// NudgeAttempt is the attempt a nudge annotation's value counts: 1 without
// a suffix (or with one that is not a positive number).
func NudgeAttempt(v string) int {
	_, a := splitNudge(v)
	return a
}

func splitNudge(v string) (base string, attempt int) {
	i := strings.LastIndexByte(v, '#')
	if i < 0 {
		return v, 1
	}
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < 1 {
		return v, 1
	}
	return v[:i], n
}

// annotationsPatch is the JSON merge patch that sets annotations.
func annotationsPatch(ann map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}}) // strings only: cannot fail
	return b
}
