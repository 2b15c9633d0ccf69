package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
)

// Offline entry points: `berth explain`, `render` and `lint` (internal/cli)
// answer from files or a read-only view of a cluster with the handlers
// themselves, so there is no second implementation of a rule. Each entry
// point builds the AdmissionRequest the apiserver would send and runs the
// handler, or calls the very function the handler calls.

// Admitted is what admission answers for an InferenceService.
type Admitted struct {
	// Service is the object as the mutating handler's patch leaves it
	// (migrated, folded, defaulted, pinned); the submitted one when the
	// mutating handler denied it.
	Service *v1beta1.InferenceService
	// Warnings are the mutating handler's, then the validating handler's.
	Warnings []string
	// Denial is the message of the handler that denied, "" when allowed.
	Denial string
	// DeniedBy is "mutating" or "validating" when denied.
	DeniedBy string
}

// Admit runs the mutating and then the validating handler on isvc, as a
// CREATE (old nil) or an UPDATE of old, exactly as the apiserver calls them.
func (h *InferenceServices) Admit(ctx context.Context, isvc, old *v1beta1.InferenceService) (*Admitted, error) {
	gvk := v1beta1.SchemeGroupVersion.WithKind("InferenceService")
	gvr := v1beta1.SchemeGroupVersion.WithResource("inferenceservices")
	req, err := AdmissionRequestFor(gvk, gvr, isvc.Namespace, isvc.Name, isvc, old)
	if err != nil {
		return nil, err
	}
	out := &Admitted{Service: isvc.DeepCopy()}
	resp := h.Mutate(ctx, req)
	out.Warnings = append(out.Warnings, resp.Warnings...)
	if !resp.Allowed {
		out.Denial, out.DeniedBy = responseMessage(resp), "mutating"
		return out, nil
	}
	raw, err := ApplyPatch(req.Object.Raw, resp)
	if err != nil {
		return nil, err
	}
	var mutated v1beta1.InferenceService
	if err := json.Unmarshal(raw, &mutated); err != nil {
		return nil, fmt.Errorf("decoding the mutated InferenceService: %w", err)
	}
	out.Service = &mutated
	req.Object.Raw = raw
	resp = h.Validate(ctx, req)
	out.Warnings = append(out.Warnings, resp.Warnings...)
	if !resp.Allowed {
		out.Denial, out.DeniedBy = responseMessage(resp), "validating"
	}
	return out, nil
}

// AdmissionRequestFor builds the request the apiserver sends for obj
// (CREATE when old is nil, else UPDATE).
func AdmissionRequestFor(gvk schema.GroupVersionKind, gvr schema.GroupVersionResource, namespace, name string, obj, old any) (*admissionv1.AdmissionRequest, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", gvk.Kind, name, err)
	}
	req := &admissionv1.AdmissionRequest{
		UID:       "offline",
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
		Name:      name,
		Namespace: namespace,
		Operation: admissionv1.Create,
	}
	req.Object.Raw = raw
	if old != nil {
		if req.OldObject.Raw, err = json.Marshal(old); err != nil {
			return nil, fmt.Errorf("encoding the stored %s %s: %w", gvk.Kind, name, err)
		}
		req.Operation = admissionv1.Update
	}
	return req, nil
}

// ApplyPatch applies a response's JSON patch to raw (raw itself when the
// response carries none).
func ApplyPatch(raw []byte, resp *admissionv1.AdmissionResponse) ([]byte, error) {
	if len(resp.Patch) == 0 {
		return raw, nil
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return nil, fmt.Errorf("decoding the webhook's patch: %w", err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		return nil, fmt.Errorf("applying the webhook's patch: %w", err)
	}
	return out, nil
}

// responseMessage is what kubectl prints of a denial.
func responseMessage(resp *admissionv1.AdmissionResponse) string {
	if resp.Result == nil {
		return "denied"
	}
	return resp.Result.Message
}

// Decided is a decision for every component, with the words the webhook
// writes about it.
type Decided struct {
	// Engine is the engine's decision: model, runtime, the engine's class.
	Engine *selection.Decision
	// Decoder is the decoder's own class decision; nil when the decoder
	// runs on the engine's class.
	Decoder *selection.Decision
	// Headline is the first line of annotation ome.io/decision.
	Headline string
	// Lines are the explanation lines of annotation ome.io/decision: one
	// per losing runtime and class (the decoder's marked "decoder: ").
	Lines []string
	// Summary is the one-line admission warning of the decision.
	Summary string
	// Warnings are the decision's admission warnings, the summary last.
	Warnings []string
	// Annotation is annotation ome.io/decision as berth writes it.
	Annotation string

	c *choice
}

func decided(c *choice) *Decided {
	return &Decided{Engine: c.Decision, Decoder: c.decoder, Headline: headline(c), Lines: explanation(c),
		Summary: summary(c), Warnings: decisionWarnings(c), Annotation: decisionText(c), c: c}
}

// Fresh is the decision berth would make for isvc today, ignoring any pin:
// the selection the mutating handler runs on CREATE (ServingPolicies as the
// gate, the decoder's own class), once, without waiting.
func (h *InferenceServices) Fresh(isvc *v1beta1.InferenceService) (*Decided, error) {
	probe := isvc.DeepCopy()
	clearPin(probe)
	c, err := h.selectOnce(probe)
	if err != nil {
		return nil, err
	}
	return decided(c), nil
}

// Pinned is the decision isvc's annotations pin, verified as the mutating
// handler verifies an unchanged pin: verified is nil when it still passes
// every check, else says why not (the service keeps it anyway). ok is false
// when isvc has no pin.
func (h *InferenceServices) Pinned(isvc *v1beta1.InferenceService) (d *Decided, verified error, ok bool, err error) {
	p := pinOf(isvc)
	if !pin.Pinned(isvc) {
		return nil, nil, false, nil
	}
	c, verified := h.verifyPin(isvc, p)
	if verified == nil {
		return decided(c), nil, true, nil
	}
	c, err = h.resolvePinned(isvc, p)
	if err != nil {
		return nil, verified, true, err
	}
	return decided(c), verified, true, nil
}

// ComposeRoles composes one pod of each role of each component under d, as
// the validating handler does before it admits the service (errors are
// its denial's causes).
func (h *InferenceServices) ComposeRoles(isvc *v1beta1.InferenceService, d *Decided) ([]merge.ComposedRole, field.ErrorList) {
	return h.compose(isvc, d.c)
}

// CompletePod runs the pod webhook's mutating handler on pod, a skeleton
// the reconciler would create, and returns the completed pod and the
// handler's warnings; err holds a denial's message.
func (h *Pods) CompletePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, []string, error) {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	req, err := AdmissionRequestFor(gvk, gvr, pod.Namespace, pod.Name, pod, nil)
	if err != nil {
		return nil, nil, err
	}
	resp := h.Mutate(ctx, req)
	if !resp.Allowed {
		return nil, resp.Warnings, fmt.Errorf("%s", responseMessage(resp))
	}
	raw, err := ApplyPatch(req.Object.Raw, resp)
	if err != nil {
		return nil, nil, err
	}
	var out corev1.Pod
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, fmt.Errorf("decoding the completed pod: %w", err)
	}
	return &out, resp.Warnings, nil
}

// SkeletonPods are the pods the reconciler creates for group 0 of each
// component of isvc under runtime rt (merge.SkeletonPod, one per role),
// before the pod webhook completes them.
func SkeletonPods(isvc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec) []*corev1.Pod {
	var out []*corev1.Pod
	for _, t := range merge.Topology(isvc, rt) {
		for _, g := range merge.CanonicalRoles(isvc, t) {
			pod := merge.SkeletonPod(isvc, t.Component, g)
			// As the reconciler creates them: with the labels OME's
			// runtimes select on (outside the revision).
			for k, v := range merge.OMECompatLabels(t.Component, g) {
				pod.Labels[k] = v
			}
			out = append(out, pod)
		}
	}
	return out
}
