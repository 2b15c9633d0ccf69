// Package pin is the decision berth pins on an InferenceService, as a
// type: the one place that reads it from the object's annotations, writes
// it back, and turns it into the input pods are composed from.
//
// The name says what it is: the webhook decides (package selection holds
// what Select resolved, selection.Decision); once recorded on the object
// the decision is a pin, which berth never moves on its own. Everything
// downstream reads the pin, never the annotations:
//
//   - the InferenceService webhook writes it (Write, Clear) and compares
//     the stored object's with the request's (Read);
//   - the pod webhook reads it (Read, Pin.ClassFor) and composes each pod
//     from InputFor;
//   - the reconciler reads it back from its cache (Read) and computes the
//     revision of each component from InputFor, so the revision it
//     expects is the one the pod webhook stamps (merge.Revision of the
//     same input, built by the same function);
//   - berth explain, render and repin read it (Read).
//
// A test (ownership_test.go) parses every non-test file of the module and
// fails, naming file and line, when code outside this package refers to
// the annotation constants of api/v1beta1 (AnnotationResolved*,
// AnnotationRepin, the nudge annotations), spells a "ome.io/resolved-"
// literal, or uses this package's annotation names as a map key. The
// names are exported only for messages ("remove annotation ...").
//
// # The annotations
//
//   - ome.io/resolved-runtime: "<Kind>/<name>", Kind ServingRuntime or
//     ClusterServingRuntime (Pin.RuntimeKind, Pin.RuntimeName). Absent or
//     empty: the service is not pinned (Pinned). Any other value is
//     malformed: Read returns a *MalformedError.
//   - ome.io/resolved-accelerator-class: the engine's AcceleratorClass
//     (Pin.AcceleratorClass), and the decoder's unless it has its own;
//     absent when the runtime needs none.
//   - ome.io/resolved-decoder-accelerator-class: the decoder's own class
//     (Pin.DecoderAcceleratorClass); absent: the engine's (Pin.ClassFor).
//   - ome.io/resolved-inputs: a digest of the inputs the decision was made
//     from, written with the pin (Write, SetInputs) but not part of it (two
//     pins compare equal without it); for reference only: the webhook
//     compares digests it computes from the stored and the new object,
//     and nothing reads this value.
//
// The webhook records two more annotations with the pin, which are not
// part of it: ome.io/decision (the ranking, quoted by the reconciler's
// Resolved condition) and ome.io/model-downloader-image (the downloader
// image, which package merge reads when it composes the pods). Clear
// removes them with the pin (Recorded lists all six).
//
// # Asking berth to decide again
//
//   - ome.io/repin: an UPDATE that sets it to a value other than the
//     stored one is decided again, as on CREATE (RepinAsked); berth repin
//     sets it to the time (RepinPatch).
//   - The nudge: the reconciler patches ome.io/model-metadata-revision
//     (the model's metadata revision, once it is known) and
//     ome.io/runtime-revision (<Kind>/<name>@<uid> of the runtime
//     spec.runtime.name names, once it exists) on an unpinned service, so
//     that the webhook decides on that UPDATE (Nudge, Nudge.MergePatch).
//     A retry counts its attempt in the value ("<value>#<n>",
//     NudgeAttempt, NudgeBase). Neither is an input of the decision: the
//     webhook ignores their values, and a CREATE drops them (ClearNudge).
//
// # The input pods are composed from
//
// InputFor builds merge.Input from a pin and the objects it names, read
// back from whichever cache the caller has (Objects). The model is fed
// one way: its spec and status.discovered (Model, ModelOf), which
// merge.NewModelMount turns into the effective spec the pods mount; no
// other status field reaches the pods or the revision.
//
// This package imports api/v1beta1 and merge and never client-go.
package pin
