package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// gpuConfig is an acceleratorConfigurations entry giving class n GPUs.
func gpuConfig(class string, n int64) rtOpt {
	return func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		s.AcceleratorConfigurations = append(s.AcceleratorConfigurations, v1beta1.AcceleratorConfiguration{
			Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: class}, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": q}}})
	}
}

// Item 4 of issue 10: a class qualifies only if the group's accelerator
// memory holds the model: GPUs per pod (after the class's configurations)
// × pods per group × memory per GPU ≥ parameters × bytes per parameter
// (quantization) × headroom (1.2 by default, for the KV cache).
func TestModelMustFit(t *testing.T) {
	world := func(model *v1beta1.ClusterBaseModel, opts ...rtOpt) objects {
		return objects{cbms: []*v1beta1.ClusterBaseModel{model}, classes: fleet(), nodes: fleetNodes(8),
			csrs: []*v1beta1.ClusterServingRuntime{csr("rt", append([]rtOpt{formats(format("safetensors", "", quant("fp8")), format("safetensors", "", quant("awq")), format("safetensors", "")), gpus(2, 0)}, opts...)...)}}
	}
	cost := withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})
	tests := []struct {
		name     string
		objs     objects
		svc      *v1beta1.InferenceService
		want     string
		explain  []string
		warnings []string
		wantErr  []string
	}{
		{name: "70B in bf16 needs 168 GB: not 2 × 40 GiB, yes 2 × 80 GiB",
			objs: world(cbm("m", mSize("70B"))), svc: isvc("m", cost), want: "a100-80gb",
			explain: []string{"AcceleratorClass/a100-40gb: does not hold the model: needs ≥ 168 GB, group has 2 × 40 GiB (85.9 GB; 70B parameters × 2 bytes (unquantized) × 1.2 headroom)"}},
		{name: "fp8 halves the need", objs: world(cbm("m", mSize("70B"), mQuant("fp8"))), svc: isvc("m", cost), want: "a100-40gb"},
		{name: "awq is half a byte", objs: world(cbm("m", mSize("140B"), mQuant("awq"))), svc: isvc("m", cost), want: "a100-40gb"},
		{name: "pods per group count: 2 pods × 2 GPUs × 40 GiB hold 70B",
			objs: world(cbm("m", mSize("70B")), gpus(2, 1)), svc: isvc("m", cost), want: "a100-40gb"},
		{name: "a class's configuration sets its GPUs per pod",
			objs: world(cbm("m", mSize("70B")), gpuConfig("a100-40gb", 4)), svc: isvc("m", cost), want: "a100-40gb"},
		{name: "the annotation cannot choose a class the model does not fit",
			objs: world(cbm("m", mSize("70B"))), svc: isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "a100-40gb")),
			wantErr: []string{"AcceleratorClass a100-40gb does not qualify: does not hold the model: needs ≥ 168 GB, group has 2 × 40 GiB"}},
		{name: "no class holds it: every class with its numbers",
			objs: world(cbm("m", mSize("1T"))), svc: isvc("m"),
			wantErr: []string{"no AcceleratorClass qualifies for ClusterServingRuntime/rt",
				"AcceleratorClass/b200: does not hold the model: needs ≥ 2400 GB, group has 2 × 192 GiB (412.3 GB; 1T parameters × 2 bytes (unquantized) × 1.2 headroom)"}},
		{name: "a model without a size skips the check and says so",
			objs: world(cbm("m")), svc: isvc("m", cost), want: "a100-40gb",
			warnings: []string{"ClusterBaseModel/m declares no spec.modelParameterSize, so whether it fits in the memory of AcceleratorClass a100-40gb was not checked"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tt.objs.load().Select(tt.svc)
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, s := range tt.wantErr {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.AcceleratorClassName())
			for _, l := range tt.explain {
				assert.Contains(t, d.Explanation, l)
			}
			for _, w := range tt.warnings {
				assert.Contains(t, d.Warnings, w)
			}
		})
	}
}

// The headroom is the Index's to configure.
func TestFitHeadroom(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("40B"))}, classes: fleet(), nodes: fleetNodes(8),
		csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(2, 0))}}.load()
	svc := isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost}))
	d, err := x.Select(svc)
	require.NoError(t, err)
	assert.Equal(t, "a100-80gb", d.AcceleratorClassName(), "40B × 2 × 1.2 = 96 GB > 85.9 GB")
	require.NoError(t, x.SetFitHeadroom(1.0))
	d, err = x.Select(svc)
	require.NoError(t, err)
	assert.Equal(t, "a100-40gb", d.AcceleratorClassName(), "40B × 2 × 1.0 = 80 GB ≤ 85.9 GB")
	assert.Error(t, x.SetFitHeadroom(0.5), "below 1 a model would not even hold its weights")
}

func TestBytesPerParameter(t *testing.T) {
	for q, want := range map[string]int64{"": 2000, "fp16": 2000, "bf16": 2000, "fp8": 1000, "fbgemm_fp8": 1000, "int8": 1000, "w8a8": 1000,
		"int4": 500, "awq": 500, "gptq": 500, "mxfp4": 500, "nf4": 500, "fp32": 4000, "something-else": 2000} {
		got, text := bytesPerParameter(q)
		assert.NotEmpty(t, text)
		assert.Equal(t, want, got, q)
	}
}
