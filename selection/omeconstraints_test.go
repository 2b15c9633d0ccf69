package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// omeFleet is fleet() with vendors, families and fp8 figures.
func omeFleet() []*v1beta1.AcceleratorClass {
	return []*v1beta1.AcceleratorClass{
		class("a100-40gb").Memory("40Gi").ComputeCapability("8.0").FP16TFLOPS("312").PerHour("1.10").Vendor("nvidia").Family("ampere").Obj(),
		class("a100-80gb").Memory("80Gi").ComputeCapability("8.0").FP16TFLOPS("312").PerHour("2.00").Vendor("nvidia").Family("ampere").Obj(),
		class("h100-80gb").Memory("80Gi").ComputeCapability("9.0").FP16TFLOPS("989").FP8TFLOPS("1979").PerHour("4.00").Vendor("NVIDIA").Family("Hopper").Obj(),
		class("b200").Memory("192Gi").ComputeCapability("10.0").FP16TFLOPS("2250").FP8TFLOPS("4500").PerHour("12.00").Vendor("nvidia").Family("blackwell").Obj(),
	}
}

func constraints(s v1beta1.AcceleratorSelectionStrategy, c v1beta1.AcceleratorConstraints) isvcOpt {
	return withSelector(v1beta1.AcceleratorSelector{Strategy: s, Constraints: &c})
}

func TestOMEConstraintsFilterCandidates(t *testing.T) {
	model := []*v1beta1.ClusterBaseModel{cbm("m", mSize("35B"))}
	rt := func(opts ...rtOpt) []*v1beta1.ClusterServingRuntime {
		return []*v1beta1.ClusterServingRuntime{csr("rt", append([]rtOpt{formats(format("safetensors", "")), gpus(2, 0)}, opts...)...)}
	}
	nodes := []NodeInfo{gpuNode("n1", "a100-40gb", 8), gpuNode("n2", "a100-80gb", 8), gpuNode("n3", "h100-80gb", 8), gpuNode("n4", "b200", 8)}
	tests := []struct {
		name    string
		rt      []*v1beta1.ClusterServingRuntime
		classes []*v1beta1.AcceleratorClass
		svc     *v1beta1.InferenceService
		want    string
		explain []string
		wantErr []string
	}{
		{
			name: "excludedClasses",
			rt:   rt(),
			svc:  isvc("m", constraints(v1beta1.StrategyPerformance, v1beta1.AcceleratorConstraints{ExcludedClasses: []string{"b200"}})),
			want: "h100-80gb",
			explain: []string{"AcceleratorClass/b200: is excluded by spec.acceleratorSelector.constraints.excludedClasses",
				"AcceleratorClass/a100-80gb: fits, but strategy performance ranks h100-80gb first"},
		},
		{
			name: "architectureFamilies match the family or vendor-family, in any case",
			rt:   rt(),
			svc:  isvc("m", constraints(v1beta1.StrategyCost, v1beta1.AcceleratorConstraints{ArchitectureFamilies: []string{"nvidia-hopper", "blackwell"}})),
			want: "h100-80gb",
			explain: []string{"AcceleratorClass/a100-40gb: family ampere is not in spec.acceleratorSelector.constraints.architectureFamilies [nvidia-hopper blackwell]",
				"AcceleratorClass/b200: fits, but strategy cost ranks h100-80gb first"},
		},
		{
			name:    "a class without a family fails architectureFamilies",
			rt:      rt(),
			classes: []*v1beta1.AcceleratorClass{class("x").Memory("80Gi").Obj(), class("h100-80gb").Memory("80Gi").Vendor("nvidia").Family("hopper").Obj()},
			svc:     isvc("m", constraints("", v1beta1.AcceleratorConstraints{ArchitectureFamilies: []string{"hopper"}})),
			want:    "h100-80gb",
			explain: []string{"AcceleratorClass/x: declares no spec.family but spec.acceleratorSelector.constraints.architectureFamilies asks for [hopper]"},
		},
		{
			name:    "maxMemory in GB (read as GiB, as OME does)",
			rt:      rt(),
			svc:     isvc("m", constraints(v1beta1.StrategyPerformance, v1beta1.AcceleratorConstraints{MaxMemory: ptr(int64(80))})),
			want:    "h100-80gb",
			explain: []string{"AcceleratorClass/b200: memory 192Gi is above the maximum 80Gi of spec.acceleratorSelector.constraints.maxMemory"},
		},
		{
			name: "the runtime's preferredPrecisions keep classes with a figure for one of them",
			rt:   rt(accel(&v1beta1.AcceleratorRequirements{PreferredPrecisions: []string{"fp8", "fp4"}})),
			svc:  isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})),
			want: "h100-80gb",
			explain: []string{"AcceleratorClass/a100-40gb: has no performance figure for any of spec.acceleratorRequirements.preferredPrecisions [fp8 fp4]",
				"AcceleratorClass/b200: fits, but strategy cost ranks h100-80gb first"},
		},
		{
			name:    "the service's preferredPrecisions; a class with no figures at all passes",
			rt:      rt(),
			classes: []*v1beta1.AcceleratorClass{class("unknown").Memory("80Gi").PerHour("0.50").Obj(), class("a100-80gb").Memory("80Gi").FP16TFLOPS("312").PerHour("2.00").Obj()},
			svc:     isvc("m", constraints(v1beta1.StrategyCost, v1beta1.AcceleratorConstraints{PreferredPrecisions: []string{"bf16"}})),
			want:    "unknown",
			explain: []string{"AcceleratorClass/a100-80gb: has no performance figure for any of spec.acceleratorSelector.constraints.preferredPrecisions [bf16]"},
		},
		{
			name:    "OME's runtime acceleratorClasses limit the candidates without any webhook",
			rt:      rt(accel(&v1beta1.AcceleratorRequirements{AcceleratorClasses: []string{"b200", "h100-80gb"}, MinMemory: ptr(int64(80))})),
			svc:     isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})),
			want:    "h100-80gb", // a100-40gb is cheaper but not listed
			explain: []string{"AcceleratorClass/b200: fits, but strategy cost ranks h100-80gb first"},
		},
		{
			name: "every class filtered: each reason",
			rt:   rt(),
			svc: isvc("m", constraints("", v1beta1.AcceleratorConstraints{ExcludedClasses: []string{"h100-80gb", "b200"},
				ArchitectureFamilies: []string{"hopper", "blackwell"}})),
			wantErr: []string{"no AcceleratorClass qualifies",
				"AcceleratorClass/a100-40gb: family ampere is not in spec.acceleratorSelector.constraints.architectureFamilies [hopper blackwell]",
				"AcceleratorClass/h100-80gb: is excluded by spec.acceleratorSelector.constraints.excludedClasses"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			classes := tt.classes
			if classes == nil {
				classes = omeFleet()
			}
			x := objects{csrs: tt.rt, cbms: model, classes: classes, nodes: append(nodes, gpuNode("nx", "x", 8), gpuNode("nu", "unknown", 8))}.load()
			d, err := x.Select(tt.svc)
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

// A runtime without OME or KServe names is compiled as it is, not copied.
func TestOMEFoldedKeepsPlainRuntimes(t *testing.T) {
	plain := &v1beta1.ServingRuntimeSpec{AcceleratorRequirements: &v1beta1.AcceleratorRequirements{SupportedClasses: []string{"a"}}}
	assert.Same(t, plain, omeFolded(plain))
	ome := &v1beta1.ServingRuntimeSpec{AcceleratorRequirements: &v1beta1.AcceleratorRequirements{AcceleratorClasses: []string{"a"}}}
	got := omeFolded(ome)
	assert.NotSame(t, ome, got)
	assert.Equal(t, []string{"a"}, got.AcceleratorRequirements.SupportedClasses)
	assert.Nil(t, ome.AcceleratorRequirements.SupportedClasses, "the caller's spec is not modified")
}
