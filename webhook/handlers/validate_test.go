package handlers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

func TestRuntimePriorityConflictNamesBothRuntimes(t *testing.T) {
	w := newWorld()
	first := w.addCSR(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct.yaml", time.Now())
	var second v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", &second)
	second.Spec.SupportedModelFormats[0].Priority = first.Spec.SupportedModelFormats[0].Priority
	// Overlapping, not identical, ranges still conflict.
	lo, hi := "8B", "20B"
	second.Spec.ModelSizeRange = &v1beta1.ModelSizeRangeSpec{Min: &lo, Max: &hi}

	resp := w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", &second, nil, "", second.Name))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "srt-mistral-7b-instruct-2")
	assert.Contains(t, resp.Result.Message, "ClusterServingRuntime/srt-mistral-7b-instruct")

	// Disabled runtimes never conflict.
	yes := true
	second.Spec.Disabled = &yes
	resp = w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", &second, nil, "", second.Name))
	assert.True(t, resp.Allowed, "%+v", resp.Result)
}

func TestNamespacedRuntimeConflictInOneNamespace(t *testing.T) {
	w := newWorld()
	var csr v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct.yaml", &csr)
	a := &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns1", CreationTimestamp: metav1.Now()}, Spec: csr.Spec}
	w.index.UpsertServingRuntime(a)
	b := &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns1"}, Spec: *csr.Spec.DeepCopy()}
	resp := w.runtimes().ValidateNamespaced(ctx, request(t, admissionv1.Create, "ServingRuntime", b, nil, "ns1", "b"))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "ServingRuntime ns1/b is invalid")
	assert.Contains(t, resp.Result.Message, "ServingRuntime/a")

	// The same runtime in another namespace is another scope.
	b.Namespace = "ns2"
	resp = w.runtimes().ValidateNamespaced(ctx, request(t, admissionv1.Create, "ServingRuntime", b, nil, "ns2", "b"))
	assert.True(t, resp.Allowed, "%+v", resp.Result)
}

func TestRuntimeMissingReferencesDenyOnCreateWarnOnUpdate(t *testing.T) {
	w := newWorld()
	var csr v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/002-story2-sglang-universal.yaml", &csr)
	csr.Spec.EngineConfig = &v1beta1.EngineSpec{EngineRuntimes: []v1beta1.EngineRuntimeRef{{ProfileName: "sglang-pd-runtime"}}}

	resp := w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", &csr, nil, "", csr.Name))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `AcceleratorClass "nvidia-a100-40gb" does not exist`)
	assert.Contains(t, resp.Result.Message, `spec.engineConfig.engineRuntimes[0].profileName: ClusterEngineRuntimeProfile "sglang-pd-runtime" does not exist`)

	resp = w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Update, "ClusterServingRuntime", &csr, &csr, "", csr.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.NotEmpty(t, resp.Warnings)

	w.addClass(t, "deploy/accelerators/nvidia-a100-40gb.yaml")
	w.addClass(t, "deploy/accelerators/nvidia-h100-80gb.yaml")
	require.NoError(t, w.profiles.Add(&v1beta1.ClusterEngineRuntimeProfile{ObjectMeta: metav1.ObjectMeta{Name: "sglang-pd-runtime"}}))
	resp = w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", &csr, nil, "", csr.Name))
	assert.True(t, resp.Allowed, "%+v", resp.Result)
}

func TestRuntimeBadTemplateIsDenied(t *testing.T) {
	w := newWorld()
	var csr v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/000-srt-mistral-7b-instruct.yaml", &csr)
	csr.Spec.EngineConfig.Runner.Args = []string{"--served-model-name={{.Spec.Name}}"}
	resp := w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", &csr, nil, "", csr.Name))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "spec.engineConfig.runner.args[0]: template {{.Spec.Name}} is not one berth renders")
}

// Classes and profiles are checked by package validation (tests there);
// the handlers deny with one cause per field error, and the deploy tests
// read the same errors as lines.
func TestClassAndProfileDenialsCarryCauses(t *testing.T) {
	ac := wrappers.MakeAcceleratorClass("gte").NodeSelectorTerms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "nvidia.com/gpu.memory", Operator: "Gte", Values: []string{"24Gi"}}}}).Obj()
	resp := ValidateAcceleratorClass(ctx, request(t, admissionv1.Create, "AcceleratorClass", ac, nil, "", ac.Name))
	require.False(t, resp.Allowed)
	want := []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.discovery.nodeSelectorTerms[0].matchExpressions[0].operator",
		Message: `Invalid value: "Gte": node affinity has no Gte, so pods could not be placed by it; nvidia.com/gpu.memory counts MiB: write operator Gt with value "24575"`}}
	require.NotNil(t, resp.Result.Details)
	if diff := cmp.Diff(want, resp.Result.Details.Causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	assert.Equal(t, "AcceleratorClass gte is invalid:\n- spec.discovery.nodeSelectorTerms[0].matchExpressions[0].operator: "+want[0].Message, resp.Result.Message)
	assert.Equal(t, []string{"spec.discovery.nodeSelectorTerms[0].matchExpressions[0].operator: " + want[0].Message}, AcceleratorClassErrors(&ac.Spec))

	p := &v1beta1.ClusterEngineRuntimeProfile{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}
	resp = ValidateProfile(ctx, request(t, admissionv1.Create, "ClusterEngineRuntimeProfile", p, nil, "", p.Name))
	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result.Details)
	assert.Equal(t, []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.containers", Message: "Required value: a profile must add at least one container"}}, resp.Result.Details.Causes)

	// The seed 004 profile's image is the placeholder "<IMG>": refused,
	// naming the field; with an image it is valid.
	var seed v1beta1.ClusterEngineRuntimeProfile
	load(t, "api/v1beta1/testdata/seeds/004-sglang-pd-runtime.yaml", &seed)
	assert.Equal(t, []string{`spec.containers[0].image: Invalid value: "<IMG>": image reference has an invalid path component "<IMG>"; the container runtime could not pull it`},
		ProfileErrors(&seed.Spec))
	seed.Spec.Containers[0].Image = "lmsysorg/sglang:v0.4.6.post6"
	assert.Empty(t, ProfileErrors(&seed.Spec), "the seed 004 profile is otherwise valid")
}
