package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
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

func TestAcceleratorClassErrors(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	good := v1beta1.AcceleratorClassSpec{Discovery: v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{"nvidia.com/gpu.product": "H100"}}}
	tests := map[string]struct {
		mutate func(*v1beta1.AcceleratorClassSpec)
		want   string
	}{
		"valid":              {func(*v1beta1.AcceleratorClassSpec) {}, ""},
		"no discovery":       {func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelector = nil }, "spec.discovery: set nodeSelector or nodeSelectorTerms"},
		"bad label key":      {func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelector["bad key!"] = "x" }, `key "bad key!" is not a valid label key`},
		"Gte operator":       {func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelectorTerms = terms("Gte", "24Gi") }, `operator "Gte" is not a node selector operator`},
		"Lt not integer":     {func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelectorTerms = terms("Lt", "24Gi") }, `"24Gi" is not one`},
		"In without values":  {func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelectorTerms = terms("In") }, "operator In needs at least one value"},
		"Exists with values": {func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelectorTerms = terms("Exists", "x") }, "operator Exists takes no values"},
		"bad capability":     {func(s *v1beta1.AcceleratorClassSpec) { s.Capabilities.ComputeCapability = "nine" }, `computeCapability: "nine" is not a number`},
		"zero memory":        {func(s *v1beta1.AcceleratorClassSpec) { s.Capabilities.MemoryGB = q("0") }, "memoryGB: must be positive"},
		"duplicate feature":  {func(s *v1beta1.AcceleratorClassSpec) { s.Capabilities.Features = []string{"fp8", "fp8"} }, `"fp8" is listed twice`},
		"bad resource name": {func(s *v1beta1.AcceleratorClassSpec) {
			s.Resources = []v1beta1.AcceleratorResource{{Name: "gpu", Quantity: *q("1")}}
		}, `"gpu" is not an extended resource name`},
		"duplicate resource": {func(s *v1beta1.AcceleratorClassSpec) {
			r := v1beta1.AcceleratorResource{Name: "nvidia.com/gpu", Quantity: *q("1")}
			s.Resources = []v1beta1.AcceleratorResource{r, r}
		}, `"nvidia.com/gpu" is listed twice`},
		"fractional": {func(s *v1beta1.AcceleratorClassSpec) {
			s.Resources = []v1beta1.AcceleratorResource{{Name: "nvidia.com/gpu", Quantity: *q("500m")}}
		}, "fractional but the resource is not divisible"},
		"negative cost": {func(s *v1beta1.AcceleratorClassSpec) { s.Cost = &v1beta1.AcceleratorCost{PerHour: q("-1")} }, "spec.cost.perHour: must not be negative"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := good.DeepCopy()
			tc.mutate(spec)
			errs := AcceleratorClassErrors(spec)
			if tc.want == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Contains(t, errs[0], tc.want)
		})
	}
}

func terms(op string, values ...string) []corev1.NodeSelectorTerm {
	return []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.memory", Operator: corev1.NodeSelectorOperator(op), Values: values}}}}
}

func TestEveryShippedAcceleratorClassIsValid(t *testing.T) {
	for _, name := range []string{"amd-mi250x", "intel-max-1550", "large-gpu", "medium-gpu", "small-gpu", "nvidia-a100-40gb", "nvidia-a100-80gb", "nvidia-b200-180gb", "nvidia-h100-80gb", "nvidia-h200-141gb"} {
		var ac v1beta1.AcceleratorClass
		load(t, "deploy/accelerators/"+name+".yaml", &ac)
		assert.Empty(t, AcceleratorClassErrors(&ac.Spec), name)
	}
}

func TestProfileErrors(t *testing.T) {
	c := func(name string) corev1.Container { return corev1.Container{Name: name, Image: "img"} }
	tests := map[string]struct {
		spec v1beta1.ClusterEngineRuntimeProfileSpec
		want string
	}{
		"valid":      {v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("engine-runtime")}}, ""},
		"duplicate":  {v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("a")}, InitContainers: []corev1.Container{c("a")}}, `spec.initContainers[0].name: "a" is also spec.containers[0].name`},
		"no name":    {v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{{Image: "x"}}}, "a profile container needs a name"},
		"bad name":   {v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("Bad_Name")}}, `"Bad_Name"`},
		"no image":   {v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{{Name: "a"}}}, "spec.containers[0].image: required"},
		"dup volume": {v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("a")}, Volumes: []corev1.Volume{{Name: "v"}, {Name: "v"}}}, `"v" is also spec.volumes[0].name`},
		"empty":      {v1beta1.ClusterEngineRuntimeProfileSpec{}, "must add at least one container"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := ProfileErrors(&tc.spec)
			if tc.want == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Contains(t, errs[0], tc.want)
		})
	}
	var seed v1beta1.ClusterEngineRuntimeProfile
	load(t, "api/v1beta1/testdata/seeds/004-sglang-pd-runtime.yaml", &seed)
	errs := ProfileErrors(&seed.Spec)
	assert.Empty(t, errs, "the seed 004 profile is valid")
}
