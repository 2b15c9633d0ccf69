package handlers

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/policy"
)

// ---------------------------------------------------------------------------
// Builders

// PolicyWrapper builds a ServingPolicy for tests.
type PolicyWrapper struct{ p v1alpha1.ServingPolicy }

// MakePolicy is a policy of every namespace that denies.
func MakePolicy(name string) *PolicyWrapper {
	return &PolicyWrapper{p: v1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       v1alpha1.ServingPolicySpec{ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny}},
	}}
}

// Namespaces selects namespaces by labels.
func (w *PolicyWrapper) Namespaces(labels map[string]string) *PolicyWrapper {
	w.p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: labels}
	return w
}

// Actions sets the validation actions.
func (w *PolicyWrapper) Actions(a ...v1alpha1.ValidationAction) *PolicyWrapper {
	w.p.Spec.ValidationActions = a
	return w
}

// Classes allows only the named classes (patterns).
func (w *PolicyWrapper) Classes(allowed ...string) *PolicyWrapper {
	w.p.Spec.Rules.AcceleratorClasses = &v1alpha1.ObjectRule{Allowed: allowed}
	return w
}

// Registries allows only images under the prefixes.
func (w *PolicyWrapper) Registries(prefixes ...string) *PolicyWrapper {
	w.p.Spec.Rules.Images = &v1alpha1.ImageRule{AllowedPrefixes: prefixes}
	return w
}

// NamespaceBudget caps the accelerators of a namespace.
func (w *PolicyWrapper) NamespaceBudget(n int64) *PolicyWrapper {
	w.p.Spec.Rules.MaxAcceleratorsPerNamespace = &n
	return w
}

// Obj returns the policy.
func (w *PolicyWrapper) Obj() *v1alpha1.ServingPolicy { return w.p.DeepCopy() }

// recordingViolations counts violations as the metrics do.
type recordingViolations struct{ seen []string }

func (r *recordingViolations) Violated(p, rule, action string) {
	r.seen = append(r.seen, p+" "+rule+" "+action)
}

// policies is a PolicySource over fixed policies and namespace labels,
// exempting berth-system as the webhook does.
func policies(nsLabels map[string]map[string]string, obs ViolationObserver, ps ...*v1alpha1.ServingPolicy) *PolicySource {
	set := policy.Compile(ps, policy.Options{ExemptNamespaces: []string{"berth-system"}})
	return &PolicySource{
		Set:             func() *policy.Set { return set },
		NamespaceLabels: func(ns string) map[string]string { return nsLabels[ns] },
		Observer:        obs,
	}
}

// teamLabels labels namespace team-a as the policies of these tests select.
var teamLabels = map[string]map[string]string{"team-a": {"team": "a"}, "berth-system": {"team": "a"}}

// policyWorld is gpuWorld's cluster (the Mistral runtime, H100 and
// A100-40GB classes with a node each, the model in team-a and
// berth-system) and a service that names no class.
func policyWorld(t *testing.T) (*world, *v1beta1.InferenceService) {
	w := newWorld()
	w.addCSR(t, "deploy/runtimes/srt-mistral-7b-instruct-rt.yaml", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w.addClass(t, "deploy/accelerators/nvidia-h100-80gb.yaml")
	w.addClass(t, "deploy/accelerators/nvidia-a100-40gb.yaml")
	w.addNode("h100-0", map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, map[corev1.ResourceName]int64{"nvidia.com/gpu": 8})
	w.addNode("a100-0", map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, map[corev1.ResourceName]int64{"nvidia.com/gpu": 8})
	for _, ns := range []string{"team-a", "berth-system"} {
		m := mistralModel()
		m.Spec.ModelFramework.Version = ptrTo("4.57.1")
		m.Namespace = ns
		w.index.UpsertBaseModel(m)
	}
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "team-a"},
		Spec:       v1beta1.InferenceServiceSpec{Model: &v1beta1.ModelRef{Name: "mistral-7b-instruct"}},
	}
	return w, isvc
}

func listersFor(w *world) listers.InferenceServiceLister {
	return listers.NewInferenceServiceLister(w.services)
}

// withPolicies is the world's InferenceService handler under src, counting
// the namespace's stored services.
func (w *world) withPolicies(src *PolicySource) *InferenceServices {
	h := w.isvcs()
	h.Policies = src
	h.Services = listersFor(w)
	// The number of stored services stands for the informer's version:
	// these tests only add services.
	h.ServicesVersion = func() uint64 { return uint64(len(w.services.ListKeys())) }
	return h
}

// mutateValidate runs both handlers as the apiserver does: the mutating
// one's patch applied, then the validating one on the result.
func mutateValidate(t *testing.T, h *InferenceServices, op admissionv1.Operation, isvc, old *v1beta1.InferenceService) (*v1beta1.InferenceService, *admissionv1.AdmissionResponse, *admissionv1.AdmissionResponse) {
	t.Helper()
	var oldObj *v1beta1.InferenceService
	if old != nil {
		oldObj = old
	}
	req := request(t, op, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
	if oldObj != nil {
		req = request(t, op, "InferenceService", isvc, oldObj, isvc.Namespace, isvc.Name)
	}
	m := h.Mutate(ctx, req)
	require.True(t, m.Allowed, "mutate: %+v", m.Result)
	req.Object.Raw = applyPatch(t, req.Object.Raw, m)
	return decodeISVC(t, req.Object.Raw), m, h.Validate(ctx, req)
}

// ---------------------------------------------------------------------------
// InferenceService: the gate

// Without a policy the service gets an H100; with team-a limited to
// nvidia-a100-*, the same service gets the A100 and a warning that names
// the policy the H100 lost to. In berth-system, which no policy governs,
// it still gets the H100.
func TestPolicyGateMovesAutoSelectionToAnAllowedClass(t *testing.T) {
	w, isvc := policyWorld(t)
	free, _, v := mutateValidate(t, w.withPolicies(nil), admissionv1.Create, isvc, nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	require.Equal(t, "nvidia-h100-80gb", free.Annotations[v1beta1.AnnotationResolvedAcceleratorClass], "without a policy berth picks the H100")

	src := policies(teamLabels, nil, MakePolicy("team-a").Namespaces(map[string]string{"team": "a"}).Classes("nvidia-a100-*").Obj())
	h := w.withPolicies(src)
	got, m, v := mutateValidate(t, h, admissionv1.Create, isvc, nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	assert.Equal(t, "nvidia-a100-40gb", got.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
	const lost = "AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/team-a: not in nvidia-a100-*"
	assert.Contains(t, got.Annotations[v1beta1.AnnotationDecision], lost)
	assert.Contains(t, m.Warnings, "ServingPolicy excluded 1 candidate: "+lost)
	assert.Empty(t, v.Warnings, "the pinned A100 violates nothing")

	own := isvc.DeepCopy()
	own.Namespace = "berth-system"
	exempt, _, v := mutateValidate(t, h, admissionv1.Create, own, nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	assert.Equal(t, "nvidia-h100-80gb", exempt.Annotations[v1beta1.AnnotationResolvedAcceleratorClass], "berth's own namespace is never subject to a policy")
}

// A service whose every class is forbidden is denied, each candidate
// listed with the policy that excludes it; an UPDATE that moves the pin to
// a forbidden class is denied too.
func TestPolicyDeniesWhenOnlyForbiddenClassesServe(t *testing.T) {
	w, isvc := policyWorld(t)
	h := w.withPolicies(policies(teamLabels, nil, MakePolicy("amd-only").Classes("amd-*").Obj()))
	_, _, v := mutateValidate(t, h, admissionv1.Create, isvc, nil)
	require.False(t, v.Allowed)
	msg := v.Result.Message
	assert.Contains(t, msg, "AcceleratorClass/nvidia-a100-40gb: forbidden by ServingPolicy/amd-only: not in amd-*")
	assert.Contains(t, msg, "AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/amd-only: not in amd-*")

	// Stored on the A100 before the policy: moving the pin to the H100 is
	// an explicit choice the policy forbids.
	a100 := w.withPolicies(policies(teamLabels, nil, MakePolicy("team-a").Namespaces(map[string]string{"team": "a"}).Classes("nvidia-a100-*").Obj()))
	stored, _, v := mutateValidate(t, a100, admissionv1.Create, isvc, nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	moved := stored.DeepCopy()
	moved.Annotations[v1beta1.AnnotationResolvedAcceleratorClass] = "nvidia-h100-80gb"
	req := request(t, admissionv1.Update, "InferenceService", moved, stored, moved.Namespace, moved.Name)
	resp := a100.Validate(ctx, req)
	require.False(t, resp.Allowed)
	assert.Equal(t, "InferenceService team-a/chat is denied by ServingPolicy:\n- ServingPolicy/team-a: AcceleratorClass nvidia-h100-80gb is not allowed in namespace team-a: not in nvidia-a100-*", resp.Result.Message)
}

// ---------------------------------------------------------------------------
// InferenceService: the composed pods

// evilImage is a user override from a registry no policy lists.
const evilImage = "docker.io/evil/x:1"

func withRunnerImage(isvc *v1beta1.InferenceService, image string) *v1beta1.InferenceService {
	out := isvc.DeepCopy()
	out.Spec.Engine = &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Image: image}}
	return out
}

// An image from an unlisted registry in spec.engine.runner.image: Deny
// refuses with the field as the cause, Warn admits with the same sentence
// as a warning, Audit admits silently with an audit annotation, and every
// violation is counted with its action.
func TestPolicyImagesByAction(t *testing.T) {
	w, isvc := policyWorld(t)
	bad := withRunnerImage(isvc, evilImage)
	const want = "ServingPolicy/registries: spec.engine.runner.image: image docker.io/evil/x:1 is not from an allowed registry (allowed: registry.example.com, lmsysorg)"

	obs := &recordingViolations{}
	registries := MakePolicy("registries").Registries("registry.example.com", "lmsysorg")
	deny := w.withPolicies(policies(teamLabels, obs, registries.Obj()))
	_, _, v := mutateValidate(t, deny, admissionv1.Create, bad, nil)
	require.False(t, v.Allowed)
	assert.Equal(t, "InferenceService team-a/chat is denied by ServingPolicy:\n- "+want, v.Result.Message)
	assert.Equal(t, int32(422), v.Result.Code)
	assert.Equal(t, []metav1.StatusCause{{Type: "FieldValueForbidden", Field: "spec.engine.runner.image", Message: want}}, v.Result.Details.Causes)

	// The runtime's own image is listed: the same service without the
	// override is admitted.
	_, _, v = mutateValidate(t, deny, admissionv1.Create, isvc, nil)
	require.True(t, v.Allowed, "%+v", v.Result)

	warn := w.withPolicies(policies(teamLabels, obs, registries.Actions(v1alpha1.Warn).Obj()))
	_, _, v = mutateValidate(t, warn, admissionv1.Create, bad, nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	assert.Equal(t, []string{want}, v.Warnings)
	assert.Empty(t, v.AuditAnnotations)

	audit := w.withPolicies(policies(teamLabels, obs, registries.Actions(v1alpha1.Audit).Obj()))
	_, _, v = mutateValidate(t, audit, admissionv1.Create, bad, nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	assert.Empty(t, v.Warnings, "audit is silent")
	assert.Equal(t, map[string]string{"registries": want}, v.AuditAnnotations)

	assert.Equal(t, []string{"registries images Deny", "registries images Warn", "registries images Audit"}, obs.seen)
}

// A service stored before a policy existed may still be updated: a
// violation the stored object has too only warns, a new one denies.
func TestPolicyViolationsAreRatchetedOnUpdate(t *testing.T) {
	w, isvc := policyWorld(t)
	stored, _, v := mutateValidate(t, w.withPolicies(nil), admissionv1.Create, withRunnerImage(isvc, evilImage), nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	h := w.withPolicies(policies(teamLabels, nil, MakePolicy("registries").Registries("registry.example.com", "lmsysorg").Obj()))

	scaled := stored.DeepCopy()
	scaled.Labels = map[string]string{"tier": "gold"}
	_, _, v = mutateValidate(t, h, admissionv1.Update, scaled, stored)
	require.True(t, v.Allowed, "%+v", v.Result)
	require.Len(t, v.Warnings, 1)
	assert.True(t, strings.HasSuffix(v.Warnings[0], "(not introduced by this update, so not denied)"), v.Warnings[0])

	other := stored.DeepCopy()
	other.Spec.Engine.Runner.Image = "docker.io/evil/y:2"
	_, _, v = mutateValidate(t, h, admissionv1.Update, other, stored)
	require.False(t, v.Allowed, "a new unlisted image is denied")
	assert.Contains(t, v.Result.Message, "image docker.io/evil/y:2 is not from an allowed registry")
}

// A namespace budget counts the services stored in the namespace (not the
// one admitted): with 1 GPU in use of a budget of 1, a second service is
// denied with the numbers.
func TestPolicyNamespaceBudgetCountsStoredServices(t *testing.T) {
	w, isvc := policyWorld(t)
	h := w.withPolicies(policies(teamLabels, nil, MakePolicy("budget").NamespaceBudget(3).Obj()))
	first, _, v := mutateValidate(t, h, admissionv1.Create, isvc, nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	first.UID, first.Generation = "uid-chat", 1
	require.NoError(t, w.services.Add(first))

	// The runtime allows up to 3 replicas of 1 GPU: the first service may
	// use all 3, so a second does not fit.
	second := isvc.DeepCopy()
	second.Name = "chat-2"
	_, _, v = mutateValidate(t, h, admissionv1.Create, second, nil)
	require.False(t, v.Allowed, "the budget is used up")
	assert.Contains(t, v.Result.Message, "3 of 3 nvidia.com/gpu in use")

	// Updating the first service itself is not counted twice.
	again := first.DeepCopy()
	again.Labels = map[string]string{"x": "y"}
	_, _, v = mutateValidate(t, h, admissionv1.Update, again, first)
	require.True(t, v.Allowed, "%+v", v.Result)
}

// ---------------------------------------------------------------------------
// Runtimes and pods

// A namespaced runtime's image is checked against the policies of its
// namespace, a cluster runtime's against the policies of every namespace
// only (a policy with a namespaceSelector does not govern it).
func TestPolicyRuntimeImages(t *testing.T) {
	w := newWorld()
	var csr v1beta1.ClusterServingRuntime
	load(t, "deploy/runtimes/srt-mistral-7b-instruct-rt.yaml", &csr)
	csr.Spec.AcceleratorRequirements = nil
	csr.Spec.EngineConfig.Runner.Image = evilImage
	sr := v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"}, Spec: csr.Spec}

	scoped := MakePolicy("team-registries").Namespaces(map[string]string{"team": "a"}).Registries("registry.example.com").Obj()
	h := w.runtimes()
	h.Policies = policies(teamLabels, nil, scoped)
	resp := h.ValidateNamespaced(ctx, request(t, admissionv1.Create, "ServingRuntime", &sr, nil, "team-a", "mine"))
	require.False(t, resp.Allowed)
	want := "ServingPolicy/team-registries: spec.engineConfig.runner.image: image docker.io/evil/x:1 is not from an allowed registry (allowed: registry.example.com)"
	assert.Equal(t, "ServingRuntime team-a/mine is denied by ServingPolicy:\n- "+want, resp.Result.Message)
	assert.Equal(t, "spec.engineConfig.runner.image", resp.Result.Details.Causes[0].Field)

	resp = h.ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", &csr, nil, "", csr.Name))
	require.True(t, resp.Allowed, "a namespace-scoped policy does not govern cluster runtimes: %+v", resp.Result)

	h.Policies = policies(teamLabels, nil, MakePolicy("registries").Registries("registry.example.com").Obj())
	resp = h.ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", &csr, nil, "", csr.Name))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "ServingPolicy/registries: spec.engineConfig.runner.image: image docker.io/evil/x:1")

	// An unchanged runtime re-applied after the policy only warns.
	resp = h.ValidateCluster(ctx, request(t, admissionv1.Update, "ClusterServingRuntime", &csr, &csr, "", csr.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.NotEmpty(t, resp.Warnings)
}

// The pod webhook checks the composed pod: a service admitted before the
// policy gets no pod with the unlisted image.
func TestPolicyPodIsCheckedAfterComposing(t *testing.T) {
	w, isvc := gpuWorld(t)
	updated := isvc.DeepCopy()
	updated.Spec.Engine.Runner.Image = evilImage
	require.NoError(t, w.services.Update(updated))
	h := w.pods()
	h.Policies = policies(teamLabels, nil, MakePolicy("registries").Registries("registry.example.com").Obj())
	req := &admissionv1.AdmissionRequest{UID: "p", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Kind: "Pod"}, Namespace: "team-a"}
	req.Object.Raw = skeletonPod(t, "chat", "engine")
	resp := h.Mutate(ctx, req)
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "is denied by ServingPolicy:\n- ServingPolicy/registries: ")
	assert.Contains(t, resp.Result.Message, "docker.io/evil/x:1 is not from an allowed registry")

	h.Policies = policies(teamLabels, nil, MakePolicy("registries").Registries("registry.example.com").Actions(v1alpha1.Warn).Obj())
	resp = h.Mutate(ctx, req)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	require.Len(t, resp.Warnings, 1)
	assert.Contains(t, resp.Warnings[0], "docker.io/evil/x:1 is not from an allowed registry")
}

// A stored service's accelerators are composed once per UID, generation
// and pin, and again when any of them changes.
func TestUsageCacheKeysOnGenerationAndPin(t *testing.T) {
	var c usageCache
	calls := 0
	compute := func(*v1beta1.InferenceService) map[corev1.ResourceName]int64 {
		calls++
		return map[corev1.ResourceName]int64{"nvidia.com/gpu": int64(calls)}
	}
	s := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u", Generation: 1,
		Annotations: map[string]string{v1beta1.AnnotationResolvedRuntime: "ClusterServingRuntime/r", v1beta1.AnnotationResolvedAcceleratorClass: "c1"}}}
	assert.Equal(t, int64(1), c.of(s, compute)["nvidia.com/gpu"])
	assert.Equal(t, int64(1), c.of(s, compute)["nvidia.com/gpu"], "remembered")
	s.Generation = 2
	assert.Equal(t, int64(2), c.of(s, compute)["nvidia.com/gpu"], "a spec change composes again")
	s.Annotations[v1beta1.AnnotationResolvedAcceleratorClass] = "c2"
	assert.Equal(t, int64(3), c.of(s, compute)["nvidia.com/gpu"], "a new pin composes again")
	s.Labels = map[string]string{"x": "y"}
	assert.Equal(t, int64(3), c.of(s, compute)["nvidia.com/gpu"], "labels do not change what it uses")
	assert.Equal(t, 3, calls)
}
