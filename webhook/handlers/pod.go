package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/admission"
)

// ServiceGetter reads an InferenceService from the API server. The pod
// handler uses it only when the cache has not seen a service yet (a pod
// created right after its service). Reading has no side effect, so dry-run
// requests are safe.
type ServiceGetter func(ctx context.Context, namespace, name string) (*v1beta1.InferenceService, error)

// Pods completes InferenceService pods from the pinned decision.
type Pods struct {
	Index    *selection.Index
	Services listers.InferenceServiceLister
	Profiles listers.ClusterEngineRuntimeProfileLister
	Live     ServiceGetter // optional
	// Policies are the ServingPolicies the composed pod must follow, as
	// defence in depth behind the InferenceService's admission (nil: none;
	// see policy.go).
	Policies *PolicySource

	revisions composeCache   // see composecache.go
	mounts    pin.MountCache // the model's mount per resourceVersion
}

// Mutate composes the pod with merge and stamps its revision. A pod whose
// service or decision is missing is denied with the reason, never
// half-mutated. A pod restored from a recorded revision is left as it is.
func (h *Pods) Mutate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create {
		return admission.Allowed()
	}
	var pod corev1.Pod
	if deny := decodeObject(req, &pod); deny != nil {
		return deny
	}
	svcName := pod.Labels[v1beta1.LabelInferenceService]
	if svcName == "" {
		// The objectSelector should have kept this pod away; say nothing.
		return admission.Allowed()
	}
	ns := pod.Namespace
	if ns == "" {
		ns = req.Namespace // pods with generateName arrive without one
	}
	who := podRef{req, ns, svcName}
	isvc, err := h.service(ctx, ns, svcName)
	if err != nil {
		return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("%s: %v", who, err))
	}
	if restored(&pod) {
		return h.podPolicies(ns, isvc, &pod).response("Pod", "", pod.Name, strings.TrimPrefix(who.String(), "pod "), nil)
	}
	component, pinned, d, deny := h.pinnedFor(isvc, &pod, who)
	if deny != nil {
		return deny
	}
	group, err := merge.GroupIdentityFromPod(&pod)
	if err != nil {
		return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("%s: %v", who, err))
	}
	in := pin.InputFor(isvc, component, pinned, pin.Objects{
		Runtime: d.Runtime.Spec, Class: d.AcceleratorClass, Profiles: h.profiles(), Model: selectedModel(d.Model),
		Mounts: &h.mounts})
	in.Group = group
	// The round trip is encoded before the pod is composed in place (no
	// copy of the pod). metadata.managedFields, a third of the pod the
	// API server sends, is left out of it and of the composed pod's
	// encoding: berth never writes it and nothing that composes the pod
	// reads it, and a member absent from both encodings is left as the
	// request has it (package patch).
	pod.ManagedFields = nil
	enc := podEncoders.Get()
	defer podEncoders.Put(enc)
	rt, err := enc.Encode(&pod)
	if err != nil {
		return admission.Denied(http.StatusInternalServerError, fmt.Sprintf("%s: cannot build patch: %v", who, err))
	}
	mutated, namespace := &pod, pod.Namespace
	if mutated.Namespace == "" {
		mutated.Namespace = ns // templates read the namespace; not written back below
	}
	// The revision covers every role of the component, so inputs that
	// compose this pod but not its group's others are denied too.
	rev, err := h.revisions.compose(in, d.Model, mutated)
	mutated.Namespace = namespace
	if err != nil {
		return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("%s: %v", who, err))
	}
	if mutated.Annotations == nil {
		mutated.Annotations = map[string]string{}
	}
	mutated.Annotations[v1beta1.AnnotationRevision] = rev
	v := h.podPolicies(ns, isvc, mutated)
	if len(v.deny) > 0 {
		return v.response("Pod", "", pod.Name, strings.TrimPrefix(who.String(), "pod "), nil)
	}
	p, err := patchFrom(req.Object.Raw, rt, mutated)
	if err != nil {
		return admission.Denied(http.StatusInternalServerError, fmt.Sprintf("%s: cannot build patch: %v", who, err))
	}
	resp := admission.Patched(p, v.warnings...)
	if len(v.audit) > 0 {
		resp.AuditAnnotations = v.audit
	}
	return resp
}

// podRef names the pod in messages: "pod <namespace>/<name> of
// InferenceService <namespace>/<service>", spelled only when a message is
// written.
type podRef struct {
	req         *admissionv1.AdmissionRequest
	ns, service string
}

func (r podRef) String() string {
	return fmt.Sprintf("pod %s of InferenceService %s/%s", objectName(r.req), r.ns, r.service)
}

// restored reports a pod the reconciler created whole from a recorded
// revision (a group below the partition coming back as it was): it carries
// ome.io/restored-from and the revision it was composed at, and is not
// composed again from the current inputs. ServingPolicies still judge it.
func restored(pod *corev1.Pod) bool {
	return pod.Annotations[v1beta1.AnnotationRestoredFrom] != "" && pod.Annotations[v1beta1.AnnotationRevision] != ""
}

// pinnedFor is the pod's component, its service's pin and the decision
// the pin names for the component (read back from the index), or the
// denial saying why there is none.
func (h *Pods) pinnedFor(isvc *v1beta1.InferenceService, pod *corev1.Pod, who podRef) (string, pin.Pin, *selection.Decision, *admissionv1.AdmissionResponse) {
	p, err := pin.Read(isvc)
	if !pin.Pinned(isvc) {
		return "", p, nil, admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("%s: the service has no resolved runtime (annotation %s); it was admitted without berth's webhook or its pin was removed — re-apply the InferenceService so berth resolves it", who, pin.RuntimeAnnotation))
	}
	if err != nil {
		return "", p, nil, admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("%s: the pinned decision no longer resolves: %v; remove it and re-apply the InferenceService so berth resolves it", who, err))
	}
	component := pod.Labels[v1beta1.LabelComponent]
	if component == "" {
		component = v1beta1.ComponentEngine
	}
	switch component {
	case v1beta1.ComponentEngine, v1beta1.ComponentDecoder, v1beta1.ComponentRouter:
	default:
		return "", p, nil, admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("%s: label %s=%q is not engine, decoder or router", who, v1beta1.LabelComponent, component))
	}
	d, err := h.resolve(isvc, p, component)
	if err != nil {
		return "", p, nil, admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("%s: the pinned decision no longer resolves: %v", who, err))
	}
	return component, p, d, nil
}

// podPolicies checks the composed pod against the ServingPolicies of its
// namespace and service (policy.Set.CheckPod): what the InferenceService's
// admission checked, again on what will run.
func (h *Pods) podPolicies(ns string, isvc *v1beta1.InferenceService, pod *corev1.Pod) verdict {
	set := h.Policies.set()
	if set.Len() == 0 {
		return verdict{}
	}
	sub := h.Policies.subject(ns, isvc.Labels, true)
	return h.Policies.enforce(set.CheckPod(sub, pod))
}

// resolve reads the pinned decision a component's pods are composed from:
// the runtime and the class the pin names for the component
// (pin.Pin.ClassFor: for decoder pods the decoder's own, else the
// engine's).
func (h *Pods) resolve(isvc *v1beta1.InferenceService, p pin.Pin, component string) (*selection.Decision, error) {
	d, err := h.Index.Resolve(isvc, p.RuntimeKind, p.RuntimeName, p.ClassFor(component))
	if err != nil && component == v1beta1.ComponentDecoder && p.DecoderAcceleratorClass != "" {
		return nil, decoderPinMissing(err)
	}
	return d, err
}

// selectedModel is the model of a decision as pin.InputFor mounts it: the
// effective spec selection holds and status.discovered.
func selectedModel(m selection.Model) *pin.Model {
	return &pin.Model{Kind: m.Kind, Namespace: m.Namespace, Name: m.Name, Spec: m.Spec, Discovered: m.Discovered,
		ResourceVersion: m.ResourceVersion}
}

// service is the pod's InferenceService: the cache's object itself, not a
// copy. The pod handler only reads it (TestPodMutateLeavesTheCacheAlone
// admits pods of every component and compares the cached objects with
// copies taken before).
func (h *Pods) service(ctx context.Context, ns, name string) (*v1beta1.InferenceService, error) {
	isvc, err := h.Services.InferenceServices(ns).Get(name)
	if err == nil {
		return isvc, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the InferenceService from cache: %w", err)
	}
	if h.Live != nil {
		isvc, err = h.Live(ctx, ns, name)
		if err == nil {
			return isvc, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the InferenceService: %w", err)
		}
	}
	return nil, fmt.Errorf("InferenceService %s/%s does not exist; create it before its pods, or fix the %s label", ns, name, v1beta1.LabelInferenceService)
}

// profiles snapshots the cached profiles by name; merge reports a
// referenced profile that is missing.
func (h *Pods) profiles() map[string]*v1beta1.ClusterEngineRuntimeProfile {
	out := map[string]*v1beta1.ClusterEngineRuntimeProfile{}
	if h.Profiles == nil {
		return out
	}
	all, _ := h.Profiles.List(everything)
	for _, p := range all {
		out[p.Name] = p
	}
	return out
}
