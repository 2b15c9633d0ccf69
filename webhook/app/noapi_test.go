package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/webhook/cache"
)

// callLog fails and records every API call made while armed: what an
// admission asks the API server, rather than its informer caches.
type callLog struct {
	armed atomic.Bool
	mu    sync.Mutex
	calls []string
}

func (l *callLog) react(a clienttesting.Action) (bool, runtime.Object, error) {
	if !l.armed.Load() {
		return false, nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, a.GetVerb()+" "+a.GetResource().Resource)
	return true, nil, fmt.Errorf("API call during admission: %s %s", a.GetVerb(), a.GetResource().Resource)
}

// during runs admit with the clients failing on use and returns the
// calls it tried.
func (l *callLog) during(admit func()) []string {
	l.mu.Lock()
	l.calls = nil
	l.mu.Unlock()
	l.armed.Store(true)
	admit()
	l.armed.Store(false)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

func loadYAML(t *testing.T, rel string, out any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(b, out), rel)
}

func admissionRequest(t *testing.T, op admissionv1.Operation, kind string, obj, old any, ns, name string) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "u", Operation: op, Kind: metav1.GroupVersionKind{Kind: kind}, Namespace: ns, Name: name}
	var err error
	req.Object.Raw, err = json.Marshal(obj)
	require.NoError(t, err)
	if old != nil {
		req.OldObject.Raw, err = json.Marshal(old)
		require.NoError(t, err)
	}
	return req
}

// TestAdmissionMakesNoAPICall serves one admission of every route over a
// synced cache, with every client failing on use: a decision reads the
// informer caches only. The one exception is written out: a runtime's
// validation lists the runtimes of its scope fresh from the API server
// (the priority check must not miss a runtime created a moment ago), for
// at most 1.5 s, and decides from the cache when that fails. (A
// service whose model names a storage key also GETs that Secret's
// metadata, as webhook/cache says; this service names none.)
func TestAdmissionMakesNoAPICall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var csr v1beta1.ClusterServingRuntime
	loadYAML(t, "deploy/runtimes/srt-mistral-7b-instruct-rt.yaml", &csr)
	csr.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var class v1beta1.AcceleratorClass
	loadYAML(t, "deploy/accelerators/nvidia-h100-80gb.yaml", &class)
	ver, fw, arch, size := "1.0.0", "4.57.1", "MistralForCausalLM", "7B"
	model := &v1beta1.BaseModel{
		ObjectMeta: metav1.ObjectMeta{Name: "mistral-7b-instruct", Namespace: "team-a"},
		Spec: v1beta1.BaseModelSpec{
			ModelFormat:       v1beta1.ModelFormat{Name: "safetensors", Version: &ver},
			ModelFramework:    &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: &fw},
			ModelArchitecture: &arch, ModelParameterSize: &size,
		},
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "h100-0", Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}

	berth := berthfake.NewSimpleClientset(&csr, &class, model)
	kube := kubefake.NewClientset(node, ns)
	meta := metafake.NewSimpleMetadataClient(metafake.NewTestScheme())
	var log callLog
	berth.PrependReactor("*", "*", log.react)
	kube.PrependReactor("*", "*", log.react)
	meta.PrependReactor("*", "*", log.react)

	c, err := cache.New(berth, kube, meta, time.Hour)
	require.NoError(t, err)
	c.Start(ctx)
	require.True(t, c.WaitForSync(ctx))
	routes := Routes(c, LiveFrom(berth), nil, "downloader:1")
	decide := map[string]func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse{}
	for _, r := range routes {
		decide[r.Name] = r.Decide
	}
	exercised := map[string]bool{}
	admit := func(route string, req *admissionv1.AdmissionRequest, want []string) *admissionv1.AdmissionResponse {
		t.Helper()
		exercised[route] = true
		var resp *admissionv1.AdmissionResponse
		calls := log.during(func() { resp = decide[route](ctx, req) })
		assert.Equal(t, want, calls, "%s: API calls", route)
		require.True(t, resp.Allowed, "%s denied: %+v", route, resp.Result)
		return resp
	}

	// The InferenceService: mutating, then validating the patched object.
	isvc := &v1beta1.InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: "ome.io/v1beta1", Kind: "InferenceService"},
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "team-a"},
		Spec: v1beta1.InferenceServiceSpec{
			Model:               &v1beta1.ModelRef{Name: model.Name},
			AcceleratorSelector: &v1beta1.AcceleratorSelector{PreferredClasses: []string{class.Name}},
			Engine:              &v1beta1.EngineSpec{},
		},
	}
	req := admissionRequest(t, admissionv1.Create, "InferenceService", isvc, nil, "team-a", "chat")
	resp := admit("mutate-inferenceservices", req, nil)
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	require.NoError(t, err)
	pinned, err := patch.Apply(req.Object.Raw)
	require.NoError(t, err)
	req = admissionRequest(t, admissionv1.Create, "InferenceService", json.RawMessage(pinned), nil, "team-a", "chat")
	admit("validate-inferenceservices", req, nil)

	// The service stored, as the API server would after admission; then
	// a pod of it, as the reconciler creates it.
	var stored v1beta1.InferenceService
	require.NoError(t, json.Unmarshal(pinned, &stored))
	_, err = berth.OmeV1beta1().InferenceServices("team-a").Create(ctx, &stored, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := c.InferenceService.InferenceServices("team-a").Get("chat")
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	pod := merge.SkeletonPod(&stored, v1beta1.ComponentEngine, merge.GroupIdentity{})
	resp = admit("mutate-pods", admissionRequest(t, admissionv1.Create, "Pod", pod, nil, "team-a", pod.Name), nil)
	require.NotEmpty(t, resp.Patch, "the pod was composed")

	// Runtimes: the documented fresh list of the scope.
	admit("validate-clusterservingruntimes", admissionRequest(t, admissionv1.Update, "ClusterServingRuntime", &csr, &csr, "", csr.Name),
		[]string{"list clusterservingruntimes"})
	sr := &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: "team-a"}, Spec: *csr.Spec.DeepCopy()}
	admit("validate-servingruntimes", admissionRequest(t, admissionv1.Create, "ServingRuntime", sr, nil, "team-a", sr.Name),
		[]string{"list servingruntimes"})

	// Kinds decided from the object alone.
	admit("validate-acceleratorclasses", admissionRequest(t, admissionv1.Create, "AcceleratorClass", &class, nil, "", class.Name), nil)
	profile := &v1beta1.ClusterEngineRuntimeProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{{Name: "sidecar", Image: "sidecar:1"}}}}
	admit("validate-clusterengineruntimeprofiles", admissionRequest(t, admissionv1.Create, "ClusterEngineRuntimeProfile", profile, nil, "", "p"), nil)
	admit("validate-basemodels", admissionRequest(t, admissionv1.Create, "BaseModel", model, nil, "team-a", model.Name), nil)
	cbm := &v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: model.Spec}
	admit("validate-clusterbasemodels", admissionRequest(t, admissionv1.Create, "ClusterBaseModel", cbm, nil, "", "m"), nil)
	policy := &v1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: v1alpha1.ServingPolicySpec{
			ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		},
	}
	admit("validate-servingpolicies", admissionRequest(t, admissionv1.Create, "ServingPolicy", policy, nil, "", policy.Name), nil)

	for _, r := range routes {
		assert.True(t, exercised[r.Name], "route %s has no case here: add one", r.Name)
	}
}

// TestUnlimitedHasNoRateLimiter: the webhook's clients are built with no
// client-side token bucket an admission could wait on.
func TestUnlimitedHasNoRateLimiter(t *testing.T) {
	cfg := &rest.Config{Host: "https://example.invalid", QPS: 5, Burst: 10}
	cfg.ContentConfig.GroupVersion = &corev1.SchemeGroupVersion
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(Unlimited(cfg))
	require.NoError(t, err)
	assert.Nil(t, rc.GetRateLimiter())
	limited, err := rest.RESTClientFor(cfg)
	require.NoError(t, err)
	assert.NotNil(t, limited.GetRateLimiter(), "the check can fail")
	assert.Equal(t, float32(5), cfg.QPS, "the caller's config is not changed")
}
