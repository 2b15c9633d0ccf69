package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// vendorClass is a class of a vendor exposing res, cheap and fast enough
// that the balanced strategy prefers it to the NVIDIA fleet.
func vendorClass(name, vendor, res string) *v1beta1.AcceleratorClass {
	return class(name).Memory("128Gi").FP16TFLOPS("839").PerHour("0.50").Vendor(vendor).ResourceQuantity(res, "1").Obj()
}

func vendorNode(name, class, res string) NodeInfo {
	return NodeInfo{Name: name, Labels: map[string]string{"gpu": class}, Allocatable: map[corev1.ResourceName]int64{corev1.ResourceName(res): 8}, Ready: true}
}

func configFor(class string, image string) rtOpt {
	return func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) {
		s.AcceleratorConfigurations = append(s.AcceleratorConfigurations, v1beta1.AcceleratorConfiguration{
			Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: class}, Runner: &v1beta1.RunnerSpec{Image: image}})
	}
}

// Item 3 of issue 10: a class of another vendor than the accelerator
// resource the runtime requests is a candidate only when the runtime opts
// in, by listing it in supportedClasses or by an acceleratorConfigurations
// entry for it (which may set that vendor's image). A CUDA image never
// lands on an AMD or Intel node by default.
func TestVendorCompatibility(t *testing.T) {
	classes := append(fleet(), vendorClass("amd-mi250x", "amd", "amd.com/gpu"), vendorClass("intel-max-1550", "intel", "gpu.intel.com/i915"))
	nodes := append(fleetNodes(8), vendorNode("m", "amd-mi250x", "amd.com/gpu"), vendorNode("i", "intel-max-1550", "gpu.intel.com/i915"))
	world := func(opts ...rtOpt) objects {
		return objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}, classes: classes, nodes: nodes,
			csrs: []*v1beta1.ClusterServingRuntime{csr("rt", append([]rtOpt{formats(format("safetensors", "")), gpus(2, 0)}, opts...)...)}}
	}
	tests := []struct {
		name    string
		objs    objects
		svc     *v1beta1.InferenceService
		want    string
		explain []string
		wantErr []string
	}{
		{name: "a CUDA runtime stays on NVIDIA classes, whatever the strategy prefers",
			objs: world(), svc: isvc("m"), want: "a100-40gb",
			explain: []string{
				"AcceleratorClass/amd-mi250x: runtime requests nvidia.com/gpu and has no configuration for amd; give ClusterServingRuntime/rt an acceleratorConfigurations entry for amd-mi250x (with an image built for amd) or list it in spec.acceleratorRequirements.supportedClasses",
				"AcceleratorClass/intel-max-1550: runtime requests nvidia.com/gpu and has no configuration for intel; give ClusterServingRuntime/rt an acceleratorConfigurations entry for intel-max-1550 (with an image built for intel) or list it in spec.acceleratorRequirements.supportedClasses",
			}},
		{name: "an acceleratorConfigurations entry opts in (the ROCm image)",
			objs: world(configFor("amd-mi250x", "lmsysorg/sglang:rocm")), svc: isvc("m"), want: "amd-mi250x"},
		{name: "the service's engine configuration opts in too",
			objs: world(), want: "intel-max-1550",
			svc: isvc("m", func(s *v1beta1.InferenceService) {
				s.Spec.Engine = &v1beta1.EngineSpec{AcceleratorConfigurations: []v1beta1.AcceleratorConfiguration{{
					Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: "intel-max-1550"}, Runner: &v1beta1.RunnerSpec{Image: "vllm-xpu"}}}}
			})},
		{name: "supportedClasses opts in",
			objs: world(accel(&v1beta1.AcceleratorRequirements{SupportedClasses: []string{"h100-80gb", "amd-mi250x"}})), svc: isvc("m"), want: "amd-mi250x"},
		{name: "the annotation cannot put a CUDA image on AMD",
			objs: world(), svc: isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "amd-mi250x")),
			wantErr: []string{"AcceleratorClass amd-mi250x does not qualify: runtime requests nvidia.com/gpu and has no configuration for amd"}},
		{name: "preferredClasses skip a foreign class",
			objs: world(), svc: isvc("m", withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"intel-max-1550", "h100-80gb"}})), want: "h100-80gb",
			explain: []string{"AcceleratorClass/intel-max-1550: runtime requests nvidia.com/gpu and has no configuration for intel; give ClusterServingRuntime/rt an acceleratorConfigurations entry for intel-max-1550 (with an image built for intel) or list it in spec.acceleratorRequirements.supportedClasses"}},
		{name: "a class without vendor is judged by its resource",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}, nodes: nodes,
				classes: []*v1beta1.AcceleratorClass{vendorClass("amd-mi250x", "", "amd.com/gpu")},
				csrs:    []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(2, 0))}},
			svc:     isvc("m"),
			wantErr: []string{"no AcceleratorClass qualifies for ClusterServingRuntime/rt", "AcceleratorClass/amd-mi250x: runtime requests nvidia.com/gpu and has no configuration for amd"}},
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
		})
	}
}
