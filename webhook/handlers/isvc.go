package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/admission"
	"github.com/berthdev/berth/webhook/patch"
)

// InferenceServices admits InferenceServices.
type InferenceServices struct {
	Index *selection.Index
	// Profiles are read to compose the service's pods at admission, so that
	// what would fail at pod admission fails here (nil: no profiles).
	Profiles listers.ClusterEngineRuntimeProfileLister
	// Retry lists waits before selecting again when selection fails.
	// `kubectl apply -f dir/` creates a model or runtime and, milliseconds
	// later, the service that needs it; the informer may not have delivered
	// the first yet. Failures are rare, so waiting a little on that path
	// costs nothing on the common one. Nil: no retry (unit tests).
	Retry []time.Duration
}

// DefaultRetry fits in the webhook's 5 s timeout with room for both handlers.
var DefaultRetry = []time.Duration{150 * time.Millisecond, 600 * time.Millisecond}

// selectSettled selects, retrying after each wait in h.Retry while it fails.
func (h *InferenceServices) selectSettled(ctx context.Context, isvc *v1beta1.InferenceService) (*selection.Decision, error) {
	d, err := h.Index.Select(isvc)
	for _, wait := range h.Retry {
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		d, err = h.Index.Select(isvc)
	}
	return d, err
}

// Mutate migrates the deprecated predictor, applies defaults and pins the
// runtime and AcceleratorClass decision in annotations. It does not deny a
// service it cannot resolve: the validating handler does, with the full
// explanation, so that both handlers stay single-purpose.
//
// A pinned decision is re-made only when an input of it changed (model,
// runtime, accelerator selector, protocol, the class and strategy
// annotations) or the pin was removed, so a newly created runtime never
// silently moves a running service.
func (h *InferenceServices) Mutate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	var isvc v1beta1.InferenceService
	if deny := decodeObject(req, &isvc); deny != nil {
		return deny
	}
	roundTrip := isvc.DeepCopy() // the decoded object, before any change
	if isvc.Namespace == "" {
		isvc.Namespace = req.Namespace
	}
	warnings, err := MigratePredictor(&isvc)
	if err != nil {
		return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("InferenceService %s: %v", objectName(req), err))
	}
	applyDefaults(&isvc)
	warnings = append(warnings, h.pin(ctx, &isvc)...)

	// The namespace defaulted above is not part of what we write back.
	isvc.Namespace = roundTrip.Namespace
	p, err := patch.Create(req.Object.Raw, roundTrip, &isvc)
	if err != nil {
		return admission.Denied(http.StatusInternalServerError, fmt.Sprintf("InferenceService %s: cannot build patch: %v", objectName(req), err))
	}
	return admission.Patched(p, warnings...)
}

// applyDefaults fills what every service has: an engine with one replica.
// The protocol default (openAI) is left implicit so that the stored object
// says only what the user asked for.
func applyDefaults(isvc *v1beta1.InferenceService) {
	if isvc.Spec.Engine == nil {
		isvc.Spec.Engine = &v1beta1.EngineSpec{}
	}
	if isvc.Spec.Engine.MinReplicas == nil {
		one := int32(1)
		isvc.Spec.Engine.MinReplicas = &one
	}
}

// pin resolves and records the decision, unless the recorded one still holds.
func (h *InferenceServices) pin(ctx context.Context, isvc *v1beta1.InferenceService) (warnings []string) {
	ann := isvc.Annotations
	digest := inputDigest(isvc)
	if ann[v1beta1.AnnotationResolvedRuntime] != "" && ann[v1beta1.AnnotationResolvedInputs] == digest {
		kind, name, _ := strings.Cut(ann[v1beta1.AnnotationResolvedRuntime], "/")
		if _, err := h.Index.Resolve(isvc, kind, name, ann[v1beta1.AnnotationResolvedAcceleratorClass]); err == nil {
			return nil // the pin holds
		}
		warnings = append(warnings, fmt.Sprintf("the pinned runtime %s or class %q no longer resolves; re-resolving",
			ann[v1beta1.AnnotationResolvedRuntime], ann[v1beta1.AnnotationResolvedAcceleratorClass]))
	}
	d, err := h.selectSettled(ctx, isvc)
	if err != nil {
		// Leave no stale pin behind; the validating handler denies with the reason.
		for _, k := range []string{v1beta1.AnnotationResolvedRuntime, v1beta1.AnnotationResolvedAcceleratorClass, v1beta1.AnnotationResolvedInputs} {
			delete(isvc.Annotations, k)
		}
		return warnings
	}
	if isvc.Annotations == nil {
		isvc.Annotations = map[string]string{}
	}
	isvc.Annotations[v1beta1.AnnotationResolvedRuntime] = d.RuntimeRef()
	if d.AcceleratorClass != nil {
		isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass] = d.AcceleratorClass.Name
	} else {
		delete(isvc.Annotations, v1beta1.AnnotationResolvedAcceleratorClass)
	}
	isvc.Annotations[v1beta1.AnnotationResolvedInputs] = digest
	return append(warnings, d.Warnings...)
}

// inputDigest hashes exactly what the decision depends on.
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

// Validate denies a service whose model, runtime or class cannot be
// resolved, with every candidate and why it lost, and updates that change a
// running service's group shape, which the reconciler cannot roll.
func (h *InferenceServices) Validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	var isvc v1beta1.InferenceService
	if deny := decodeObject(req, &isvc); deny != nil {
		return deny
	}
	if isvc.Namespace == "" {
		isvc.Namespace = req.Namespace
	}
	if isvc.Spec.Predictor != nil {
		if _, err := MigratePredictor(isvc.DeepCopy()); err != nil {
			return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("InferenceService %s: %v", objectName(req), err))
		}
	}
	var d *selection.Decision
	var err error
	if ref := isvc.Annotations[v1beta1.AnnotationResolvedRuntime]; ref != "" {
		kind, name, ok := strings.Cut(ref, "/")
		if !ok {
			return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("InferenceService %s: annotation %s=%q is not <Kind>/<name>; remove it and berth resolves the runtime again", objectName(req), v1beta1.AnnotationResolvedRuntime, ref))
		}
		d, err = h.Index.Resolve(&isvc, kind, name, isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
	} else {
		d, err = h.selectSettled(ctx, &isvc)
	}
	if err != nil {
		// selection errors name the service, what was asked and every candidate.
		return admission.Denied(http.StatusUnprocessableEntity, err.Error())
	}
	if errs := validateLifecycle(&isvc, d); len(errs) > 0 {
		return admission.Invalid("InferenceService", isvc.Name, errs)
	}
	if req.Operation == admissionv1.Update {
		var old v1beta1.InferenceService
		if deny := decodeRaw(req, req.OldObject.Raw, "old object", &old); deny != nil {
			return deny
		}
		if msg := shapeChange(&old, &isvc); msg != "" {
			return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("InferenceService %s: %s", objectName(req), msg))
		}
	}
	return admission.Allowed(d.Warnings...)
}

// groupShape is what the reconciler cannot change in place: whether a
// component runs single-pod or leader/worker groups, and whether the
// service is prefill/decode disaggregated.
func groupShape(isvc *v1beta1.InferenceService) string {
	s := "single-pod engine"
	if e := isvc.Spec.Engine; e != nil && (e.Leader != nil || e.Worker != nil) {
		s = "multi-node engine"
	}
	if isvc.Spec.Decoder != nil {
		s += " with decoder (prefill/decode)"
	}
	return s
}

// shapeChange explains an update the reconciler cannot roll: a group shape
// change while groups exist. Scaling to zero first, or recreating, is the fix.
func shapeChange(old, cur *v1beta1.InferenceService) string {
	if old.Status.ReadyReplicas == 0 && len(old.Status.Components) == 0 {
		return ""
	}
	running := old.Status.ReadyReplicas
	for _, c := range old.Status.Components {
		running += c.Replicas
	}
	if running == 0 {
		return ""
	}
	if was, is := groupShape(old), groupShape(cur); was != is {
		return fmt.Sprintf("changing the group shape from %q to %q would orphan %d running group(s) that cannot be rolled in place; scale spec.engine.minReplicas and maxReplicas to 0 first, or delete and recreate the service", was, is, running)
	}
	return ""
}

// validateLifecycle checks what the reconciler will do with the service
// under the resolved runtime: the names it generates for groups fit DNS
// labels, and the rollout strategy can make progress.
func validateLifecycle(isvc *v1beta1.InferenceService, d *selection.Decision) field.ErrorList {
	topo := merge.Topology(isvc, d.Runtime.Spec)
	var most int32
	for _, t := range topo {
		n := max(t.Replicas, t.MinReplicas)
		if t.MaxReplicas > 0 {
			n = t.MaxReplicas
		}
		most = max(most, n)
	}
	errs := validation.ValidateLifecycle(&isvc.Spec, most)
	errs = append(errs, replicasWithinBounds(isvc, topo)...)
	if err := merge.ValidateNames(isvc.Name, topo); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), isvc.Name, err.Error()))
	}
	return errs
}

// replicasWithinBounds denies a component's replicas outside its
// [minReplicas, maxReplicas] (the service's over the runtime's): the
// reconciler would clamp it, and `kubectl scale --replicas 4` silently
// giving one group is worse than a denial that names the bound.
func replicasWithinBounds(isvc *v1beta1.InferenceService, topo []merge.ComponentTopology) field.ErrorList {
	own := map[string]*v1beta1.ComponentExtensionSpec{}
	if s := isvc.Spec.Engine; s != nil {
		own[v1beta1.ComponentEngine] = &s.ComponentExtensionSpec
	}
	if s := isvc.Spec.Decoder; s != nil {
		own[v1beta1.ComponentDecoder] = &s.ComponentExtensionSpec
	}
	if s := isvc.Spec.Router; s != nil {
		own[v1beta1.ComponentRouter] = &s.ComponentExtensionSpec
	}
	var errs field.ErrorList
	for _, t := range topo {
		ext := own[t.Component]
		if ext == nil || ext.Replicas == nil {
			continue
		}
		p := field.NewPath("spec", t.Component, "replicas")
		switch r := *ext.Replicas; {
		case t.MaxReplicas > 0 && r > t.MaxReplicas:
			errs = append(errs, field.Invalid(p, r, fmt.Sprintf("is above maxReplicas %d (of the service, else its runtime); raise spec.%s.maxReplicas to scale further", t.MaxReplicas, t.Component)))
		case r < t.MinReplicas:
			errs = append(errs, field.Invalid(p, r, fmt.Sprintf("is below minReplicas %d (of the service, else its runtime); lower spec.%s.minReplicas to scale down further", t.MinReplicas, t.Component)))
		}
	}
	return errs
}
