package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Four classes with figures close to seed 002's.
func fleet() []*v1beta1.AcceleratorClass {
	return []*v1beta1.AcceleratorClass{
		class("a100-40gb").Memory("40Gi").ComputeCapability("8.0").Features("tensor-cores").FP16TFLOPS("312").PerHour("1.10").Obj(),
		class("a100-80gb").Memory("80Gi").ComputeCapability("8.0").Features("tensor-cores", "nvlink").FP16TFLOPS("312").PerHour("2.00").Obj(),
		class("h100-80gb").Memory("80Gi").ComputeCapability("9.0").Features("tensor-cores", "nvlink", "fp8").FP16TFLOPS("989").PerHour("4.00").Obj(),
		class("b200").Memory("192Gi").ComputeCapability("10.0").Features("tensor-cores", "nvlink", "fp8", "fp4").FP16TFLOPS("2250").PerHour("12.00").Obj(),
	}
}

func fleetNodes(free int64) []NodeInfo {
	var out []NodeInfo
	for _, c := range fleet() {
		out = append(out, gpuNode("node-"+c.Name, c.Name, free))
	}
	return out
}

func caps(f func(*v1beta1.AcceleratorCapabilities)) *v1beta1.AcceleratorCapabilities {
	c := &v1beta1.AcceleratorCapabilities{}
	f(c)
	return c
}

func TestSelectAcceleratorClass(t *testing.T) {
	// 35B parameters need 84 GB with the default headroom: every class
	// holds them with the runtime's 2 GPUs (TestModelMustFit covers fit).
	model := []*v1beta1.ClusterBaseModel{cbm("m", mSize("35B"))}
	rt := func(opts ...rtOpt) []*v1beta1.ClusterServingRuntime {
		return []*v1beta1.ClusterServingRuntime{csr("rt", append([]rtOpt{formats(format("safetensors", "")), gpus(2, 0)}, opts...)...)}
	}
	tests := []struct {
		name      string
		objs      objects
		svc       *v1beta1.InferenceService
		want      string
		available bool
		explain   []string
		warnings  []string
		wantErr   []string
	}{
		{
			name:      "compute capability 10.0 meets a minimum of 9.0 (a peer compared strings)",
			objs:      objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{RequiredCapabilities: caps(func(c *v1beta1.AcceleratorCapabilities) { c.MinComputeCapability = "9.0" })})), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyPerformance})),
			want:      "b200",
			available: true,
			explain: []string{
				"AcceleratorClass/a100-40gb: compute capability 8.0 is below the required 9.0",
				"AcceleratorClass/h100-80gb: fits, but strategy performance ranks b200 first",
			},
		},
		{
			name: "balanced is the default and never means no class, even without any figures or constraints (a peer panics)",
			objs: objects{csrs: rt(), classes: []*v1beta1.AcceleratorClass{class("z").Obj(), class("y").Obj(), class("x").Obj()},
				nodes: []NodeInfo{gpuNode("n1", "x", 8), gpuNode("n2", "y", 8), gpuNode("n3", "z", 8)}},
			svc:       isvc("m"),
			want:      "x",
			available: true,
			explain:   []string{"AcceleratorClass/y: fits, but strategy balanced ranks x first"},
		},
		{
			name:      "balanced: most TFLOPS per dollar",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m"),
			want:      "a100-40gb", // 312/1.10 = 284 beats 989/4 = 247, 2250/12 = 188, 312/2 = 156
			available: true,
		},
		{
			name:      "cost: cheapest per hour",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})),
			want:      "a100-40gb",
			available: true,
		},
		{
			name:      "the selection-strategy annotation overrides the selector",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost}), withAnnotation(v1beta1.AnnotationSelectionStrategy, "performance")),
			want:      "b200",
			available: true,
		},
		{
			name:    "an unknown strategy is an error",
			objs:    objects{csrs: rt(), classes: fleet(), nodes: fleetNodes(8)},
			svc:     isvc("m", withAnnotation(v1beta1.AnnotationSelectionStrategy, "fastest")),
			wantErr: []string{`annotation ome.io/selection-strategy: "fastest" is not performance, cost or balanced`},
		},
		{
			name: "memory as a bare number is GiB, and the service tightens the runtime's requirement",
			objs: objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{RequiredCapabilities: caps(func(c *v1beta1.AcceleratorCapabilities) { c.MemoryGB = ptr(resource.MustParse("40")) })})),
				classes: fleet(), nodes: fleetNodes(8)},
			svc: isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost, RequiredCapabilities: caps(func(c *v1beta1.AcceleratorCapabilities) {
				c.MemoryGB = ptr(resource.MustParse("80Gi"))
				c.RequiredFeatures = []string{"fp8"}
			})})),
			want:      "h100-80gb",
			available: true,
			explain: []string{
				"AcceleratorClass/a100-40gb: memory 40Gi is below the required 80Gi; lacks required features fp8",
				"AcceleratorClass/a100-80gb: lacks required features fp8",
			},
		},
		{
			name: "performance figures are minimums",
			objs: objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{RequiredCapabilities: caps(func(c *v1beta1.AcceleratorCapabilities) {
				c.Performance = &v1beta1.AcceleratorPerformance{FP16TFLOPS: ptr(resource.MustParse("500"))}
			})})), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})),
			want:      "h100-80gb",
			available: true,
			explain:   []string{"AcceleratorClass/a100-80gb: performance.fp16TFLOPS 312 is below the required 500"},
		},
		{
			name:      "the annotation names the class",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "h100-80gb"), withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"a100-80gb"}})),
			want:      "h100-80gb",
			available: true,
			explain:   []string{"AcceleratorClass/a100-80gb: fits, but annotation ome.io/accelerator-class chose h100-80gb"},
		},
		{
			name:    "an annotation naming a class that does not exist",
			objs:    objects{csrs: rt(), classes: fleet(), nodes: fleetNodes(8)},
			svc:     isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "h200")),
			wantErr: []string{`annotation ome.io/accelerator-class names AcceleratorClass "h200", which does not exist`},
		},
		{
			name:    "an annotation naming a class that lacks a requirement",
			objs:    objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{RequiredCapabilities: caps(func(c *v1beta1.AcceleratorCapabilities) { c.MinComputeCapability = "9.0" })})), classes: fleet(), nodes: fleetNodes(8)},
			svc:     isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "a100-80gb")),
			wantErr: []string{"AcceleratorClass a100-80gb does not qualify: compute capability 8.0 is below the required 9.0"},
		},
		{
			name:    "an annotation naming a class the runtime does not support",
			objs:    objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{SupportedClasses: []string{"h100-80gb", "b200"}})), classes: fleet(), nodes: fleetNodes(8)},
			svc:     isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "a100-80gb")),
			wantErr: []string{"AcceleratorClass a100-80gb is not supported by ClusterServingRuntime/rt (supportedClasses: h100-80gb, b200)"},
		},
		{
			name:      "preferredClasses: the first that fits",
			objs:      objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{RequiredCapabilities: caps(func(c *v1beta1.AcceleratorCapabilities) { c.MemoryGB = ptr(resource.MustParse("80Gi")) })})), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"a100-40gb", "b200", "h100-80gb"}})),
			want:      "b200",
			available: true,
			explain: []string{
				"AcceleratorClass/h100-80gb: fits, but spec.acceleratorSelector.preferredClasses lists b200 first",
				"AcceleratorClass/a100-80gb: fits, but is not in spec.acceleratorSelector.preferredClasses",
			},
		},
		{
			name:      "preferredClasses: an available class beats an earlier full one",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: []NodeInfo{gpuNode("n1", "b200", 0), gpuNode("n2", "h100-80gb", 8)}},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"b200", "h100-80gb"}})),
			want:      "h100-80gb",
			available: true,
			explain:   []string{"AcceleratorClass/b200: fits, but its ready nodes lack 1 pod(s) × 2 nvidia.com/gpu (0 of 0 nvidia.com/gpu free on 1 Ready node); h100-80gb has room"},
		},
		{
			name:    "preferredClasses naming a class that does not exist",
			objs:    objects{csrs: rt(), classes: fleet(), nodes: fleetNodes(8)},
			svc:     isvc("m", withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"h100-80gb", "mi300x"}})),
			wantErr: []string{`spec.acceleratorSelector.preferredClasses[1] names AcceleratorClass "mi300x", which does not exist`},
		},
		{
			name: "preferenceOrder: the applicable entry with the best score",
			objs: objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{PreferenceOrder: []v1beta1.AcceleratorPreference{
				{Class: "a100-40gb", Score: 100, Conditions: []v1beta1.PreferenceCondition{{ModelSize: "<30B"}}},
				{Class: "h100-80gb", Score: 90, Conditions: []v1beta1.PreferenceCondition{{ModelSize: ">=30B"}}},
				{Class: "b200", Score: 50},
			}})), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m"),
			want:      "h100-80gb",
			available: true,
			explain: []string{
				"AcceleratorClass/b200: fits, but its preferenceOrder score 50 does not beat h100-80gb's 90",
				"AcceleratorClass/a100-40gb: fits, but no applicable preferenceOrder entry of ClusterServingRuntime/rt names it; h100-80gb scores 90",
			},
		},
		{
			name: "preferenceOrder: requestSize conditions read the request-size annotation",
			objs: objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{PreferenceOrder: []v1beta1.AcceleratorPreference{
				{Class: "a100-80gb", Score: 100, Conditions: []v1beta1.PreferenceCondition{{RequestSize: "<2048"}}},
				{Class: "h100-80gb", Score: 100, Conditions: []v1beta1.PreferenceCondition{{RequestSize: ">4096"}}},
			}})), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withAnnotation(AnnotationRequestSize, "8K")),
			want:      "h100-80gb",
			available: true,
		},
		{
			name: "preferenceOrder: no entry applies, so the strategy decides",
			objs: objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{PreferenceOrder: []v1beta1.AcceleratorPreference{
				{Class: "h100-80gb", Score: 100, Conditions: []v1beta1.PreferenceCondition{{RequestSize: ">4096"}}},
			}})), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})),
			want:      "a100-40gb",
			available: true,
		},
		{
			name:      "supportedClasses limits the candidates",
			objs:      objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{SupportedClasses: []string{"h100-80gb", "b200", "gone"}})), classes: fleet(), nodes: fleetNodes(8)},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})),
			want:      "h100-80gb",
			available: true,
			warnings:  []string{`ClusterServingRuntime/rt spec.acceleratorRequirements.supportedClasses lists AcceleratorClass "gone", which does not exist`},
		},
		{
			name:      "a class without room loses to one with room",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: []NodeInfo{gpuNode("n1", "a100-40gb", 1), gpuNode("n2", "h100-80gb", 2)}},
			svc:       isvc("m"),
			want:      "h100-80gb",
			available: true,
			explain:   []string{"AcceleratorClass/a100-40gb: fits, but its ready nodes lack 1 pod(s) × 2 nvidia.com/gpu (1 of 1 nvidia.com/gpu free on 1 Ready node); h100-80gb has room"},
		},
		{
			name:      "when no class has room, the best is chosen and marked unavailable",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: fleetNodes(1)},
			svc:       isvc("m"),
			want:      "a100-40gb",
			available: false,
			warnings:  []string{"AcceleratorClass a100-40gb currently has no room: its ready nodes lack 1 pod(s) × 2 nvidia.com/gpu (1 of 1 nvidia.com/gpu free on 1 Ready node); the service will wait for capacity"},
		},
		{
			name: "the need is GPUs per pod × pods per group, across nodes",
			objs: objects{csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(4, 2))}, classes: fleet(),
				nodes: []NodeInfo{gpuNode("a1", "a100-40gb", 8), gpuNode("h1", "h100-80gb", 8), gpuNode("h2", "h100-80gb", 4)}},
			svc:       isvc("m"),
			want:      "h100-80gb", // 3 pods × 4 GPUs: a100-40gb has room for 2, h100 for 3
			available: true,
			explain:   []string{"AcceleratorClass/a100-40gb: fits, but its ready nodes lack 3 pod(s) × 4 nvidia.com/gpu (8 of 8 nvidia.com/gpu free on 1 Ready node); h100-80gb has room"},
		},
		{
			name:      "nodes that are not Ready do not count",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: []NodeInfo{{Name: "n", Labels: map[string]string{"gpu": "a100-40gb"}, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}}, gpuNode("h", "h100-80gb", 8)}},
			svc:       isvc("m"),
			want:      "h100-80gb",
			available: true,
		},
		{
			name:      "the service's nodeSelector narrows the nodes",
			objs:      objects{csrs: rt(), classes: fleet(), nodes: []NodeInfo{gpuNode("a", "a100-40gb", 8), {Name: "h", Labels: map[string]string{"gpu": "h100-80gb", "zone": "west"}, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}, Ready: true}}},
			svc:       isvc("m", withSelector(v1beta1.AcceleratorSelector{NodeSelector: map[string]string{"zone": "west"}})),
			want:      "h100-80gb",
			available: true,
		},
		{
			name:    "no class fits: every class and why",
			objs:    objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{RequiredCapabilities: caps(func(c *v1beta1.AcceleratorCapabilities) { c.MemoryGB = ptr(resource.MustParse("1Ti")) })})), classes: fleet(), nodes: fleetNodes(8)},
			svc:     isvc("m"),
			wantErr: []string{"no AcceleratorClass qualifies for ClusterServingRuntime/rt", "  - AcceleratorClass/a100-40gb: memory 40Gi is below the required 1024Gi", "  - AcceleratorClass/b200: memory 192Gi is below the required 1024Gi"},
		},
		{
			name:      "no class in the cluster and none required: no class",
			objs:      objects{csrs: rt()},
			svc:       isvc("m"),
			want:      "",
			available: false,
			warnings:  []string{"the cluster has no AcceleratorClass, so free nvidia.com/gpu was not checked"},
		},
		{
			name:    "no class in the cluster but the runtime requires one",
			objs:    objects{csrs: rt(accel(&v1beta1.AcceleratorRequirements{SupportedClasses: []string{"h100-80gb"}}))},
			svc:     isvc("m"),
			wantErr: []string{"ClusterServingRuntime/rt requires an AcceleratorClass but the cluster has none"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.objs.cbms = model
			x := tt.objs.load()
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
			assert.Equal(t, tt.available, d.AcceleratorAvailable)
			for _, l := range tt.explain {
				assert.Contains(t, d.Explanation, l)
			}
			for _, w := range tt.warnings {
				assert.Contains(t, d.Warnings, w)
			}
		})
	}
}

func TestNodeSelectorTerms(t *testing.T) {
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	node := NodeInfo{Name: "n1", Labels: map[string]string{"gpu.product": "H100", "gpu.memory": "81920", "zone": "a"}}
	tests := []struct {
		name  string
		terms []corev1.NodeSelectorTerm
		want  bool
	}{
		{"In", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu.product", corev1.NodeSelectorOpIn, "A100", "H100")}}}, true},
		{"In misses", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu.product", corev1.NodeSelectorOpIn, "A100")}}}, false},
		{"NotIn", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu.product", corev1.NodeSelectorOpNotIn, "A100")}}}, true},
		{"NotIn of a missing label holds", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("absent", corev1.NodeSelectorOpNotIn, "x")}}}, true},
		{"Exists", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpExists)}}}, true},
		{"DoesNotExist", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpDoesNotExist)}}}, false},
		{"Gt compares integers", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu.memory", corev1.NodeSelectorOpGt, "40960")}}}, true},
		{"Gt is not a string comparison", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu.memory", corev1.NodeSelectorOpGt, "9")}}}, true},
		{"Lt", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu.memory", corev1.NodeSelectorOpLt, "81920")}}}, false},
		{"Gt with a non-integer fails", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu.product", corev1.NodeSelectorOpGt, "1")}}}, false},
		{"expressions of a term are ANDed", []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "a"), expr("gpu.product", corev1.NodeSelectorOpIn, "A100")}}}, false},
		{"terms are ORed", []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu.product", corev1.NodeSelectorOpIn, "A100")}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "a")}}}, true},
		{"an empty term matches nothing", []corev1.NodeSelectorTerm{{}}, false},
		{"metadata.name field", []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n1")}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compileClass(class("c").Discovery(v1beta1.AcceleratorDiscovery{NodeSelectorTerms: tt.terms}).Obj())
			assert.Equal(t, tt.want, c.matchesNode(node))
		})
	}

	t.Run("nodeSelector and spec.nodeSelector are one pattern, ANDed", func(t *testing.T) {
		o := class("c").Obj()
		o.Spec.Discovery.NodeSelector = map[string]string{"gpu.product": "H100"}
		o.Spec.NodeSelector = map[string]string{"gpu.memory": "81920"}
		assert.True(t, compileClass(o).matchesNode(node))
		o.Spec.NodeSelector = map[string]string{"gpu.memory": "40960"}
		assert.False(t, compileClass(o).matchesNode(node))
	})
	// Seed 002's nvidia-a100-40gb: nodeSelector names the SXM4 part and
	// nodeSelectorTerms are "alternative discovery patterns" adding PCIe.
	// The nodeSelector pattern and each term are alternatives (ORed).
	t.Run("seed 002: nodeSelector and nodeSelectorTerms are alternatives", func(t *testing.T) {
		o := class("nvidia-a100-40gb").Discovery(v1beta1.AcceleratorDiscovery{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			expr("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB")}}}}).Obj()
		o.Spec.Discovery.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
		c := compileClass(o)
		for product, want := range map[string]bool{"NVIDIA-A100-SXM4-40GB": true, "NVIDIA-A100-PCIE-40GB": true, "NVIDIA-H100-80GB-HBM3": false} {
			n := NodeInfo{Name: "n", Labels: map[string]string{"nvidia.com/gpu.product": product}}
			assert.Equal(t, want, c.matchesNode(n), product)
		}
	})
	t.Run("seed 002: AMD nodes labelled either way", func(t *testing.T) {
		o := class("amd-mi250x").Discovery(v1beta1.AcceleratorDiscovery{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			expr("gpu.amd.com/model", corev1.NodeSelectorOpIn, "mi250x", "MI250X")}}}}).Obj()
		o.Spec.Discovery.NodeSelector = map[string]string{"amd.com/gpu.product": "MI250X"}
		c := compileClass(o)
		assert.True(t, c.matchesNode(NodeInfo{Name: "a", Labels: map[string]string{"amd.com/gpu.product": "MI250X"}}))
		assert.True(t, c.matchesNode(NodeInfo{Name: "b", Labels: map[string]string{"gpu.amd.com/model": "mi250x"}}))
		assert.False(t, c.matchesNode(NodeInfo{Name: "c", Labels: map[string]string{"gpu.amd.com/model": "mi300x"}}))
	})
	t.Run("a class without any selector discovers no node", func(t *testing.T) {
		o := class("c").Obj()
		o.Spec.Discovery.NodeSelector = nil
		assert.False(t, compileClass(o).matchesNode(node))
	})
}

// Pod usage, node and class events arrive in any order; availability follows.
func TestAvailabilityUpdates(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(4, 0))}}.load()
	// A pod seen before its node still counts once the node arrives.
	x.SetPodUsage("team/p1", "n1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 6})
	x.UpsertNode(gpuNode("n1", "h100", 8))
	x.UpsertAcceleratorClass(class("h100").Obj())

	d, err := x.Select(isvc("m"))
	require.NoError(t, err)
	assert.Equal(t, "h100", d.AcceleratorClassName())
	assert.False(t, d.AcceleratorAvailable, "8 − 6 = 2 free, 4 needed")

	x.DeletePodUsage("team/p1")
	d, err = x.Select(isvc("m"))
	require.NoError(t, err)
	assert.True(t, d.AcceleratorAvailable)

	// A relabelled node leaves the class.
	x.UpsertNode(NodeInfo{Name: "n1", Labels: map[string]string{"gpu": "other"}, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}, Ready: true})
	d, err = x.Select(isvc("m"))
	require.NoError(t, err)
	assert.False(t, d.AcceleratorAvailable)

	// Replacing a pod's usage does not double count.
	x.UpsertNode(gpuNode("n1", "h100", 8))
	x.SetPodUsage("team/p2", "n1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 4})
	x.SetPodUsage("team/p2", "n1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 4})
	d, err = x.Select(isvc("m"))
	require.NoError(t, err)
	assert.True(t, d.AcceleratorAvailable, "8 − 4 = 4 free")
}

// A selected AMD class counts amd.com/gpu even when the runtime asks for
// nvidia.com/gpu: the merge package translates the resource. The runtime
// opts in to the AMD class with a configuration (its ROCm image).
func TestVendorNeutralAvailability(t *testing.T) {
	amd := class("mi300x").Memory("192Gi").Obj()
	amd.Spec.Resources = []v1beta1.AcceleratorResource{{Name: "amd.com/gpu"}}
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(4, 0), configFor("mi300x", "rocm/vllm"))},
		classes: []*v1beta1.AcceleratorClass{amd},
		nodes:   []NodeInfo{{Name: "n", Labels: map[string]string{"gpu": "mi300x"}, Allocatable: map[corev1.ResourceName]int64{"amd.com/gpu": 8}, Ready: true}}}.load()
	d, err := x.Select(isvc("m"))
	require.NoError(t, err)
	assert.Equal(t, "mi300x", d.AcceleratorClassName())
	assert.True(t, d.AcceleratorAvailable)
}

// The nodes carrying a service nodeSelector's labels are cached; any node
// label change must invalidate the cache.
func TestNodeSelectorCacheFollowsLabels(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(2, 0))},
		classes: []*v1beta1.AcceleratorClass{class("h100").Obj()}, nodes: []NodeInfo{gpuNode("n1", "h100", 8)}}.load()
	svc := isvc("m", withSelector(v1beta1.AcceleratorSelector{NodeSelector: map[string]string{"zone": "west", "pool": "serving"}}))
	west := NodeInfo{Name: "n1", Labels: map[string]string{"gpu": "h100", "zone": "west", "pool": "serving"}, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}, Ready: true}
	steps := []struct {
		name  string
		apply func()
		want  bool
	}{
		{"no node carries the labels", func() {}, false},
		{"asked again (cached)", func() {}, false},
		{"the node is relabelled", func() { x.UpsertNode(west) }, true},
		{"its pods use the GPUs", func() {
			x.SetPodUsage("team/p", "n1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 7})
		}, false},
		{"the pod goes", func() { x.DeletePodUsage("team/p") }, true},
		{"the node turns NotReady", func() { w := west; w.Ready = false; x.UpsertNode(w) }, false},
		{"a second node arrives", func() { w := west; w.Name = "n2"; x.UpsertNode(w) }, true},
		{"it is deleted", func() { x.DeleteNode("n2") }, false},
	}
	for _, s := range steps {
		s.apply()
		d, err := x.Select(svc)
		require.NoError(t, err, s.name)
		assert.Equal(t, s.want, d.AcceleratorAvailable, s.name)
	}
}

// Item 13 of issue 10: a class that matches no Ready node is said to,
// instead of "lack 1 pod(s) × 0 nvidia.com/gpu".
func TestNoReadyNodeIsSaid(t *testing.T) {
	objs := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}, classes: fleet(),
		csrs:  []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(2, 0))},
		nodes: []NodeInfo{gpuNode("h", "h100-80gb", 8), {Name: "down", Labels: map[string]string{"gpu": "a100-40gb"}, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}}}}
	x := objs.load()
	d, err := x.Select(isvc("m"))
	require.NoError(t, err)
	assert.Equal(t, "h100-80gb", d.AcceleratorClassName())
	assert.Contains(t, d.Explanation, "AcceleratorClass/a100-40gb: fits, but matches no Ready node; h100-80gb has room")
	assert.Contains(t, d.Explanation, "AcceleratorClass/b200: fits, but matches no Ready node; h100-80gb has room")

	d, err = x.Select(isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "b200")))
	require.NoError(t, err)
	assert.False(t, d.AcceleratorAvailable)
	assert.Contains(t, d.Warnings, "AcceleratorClass b200 matches no Ready node; the service will wait for one")

	d, err = x.Select(isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "h100-80gb"), withSelector(v1beta1.AcceleratorSelector{NodeSelector: map[string]string{"zone": "west"}})))
	require.NoError(t, err)
	assert.Contains(t, d.Warnings, "AcceleratorClass h100-80gb matches no Ready node with the labels of spec.acceleratorSelector.nodeSelector; the service will wait for one")

	d, err = x.Resolve(isvc("m"), KindClusterServingRuntime, "rt", "b200")
	require.NoError(t, err)
	assert.Contains(t, d.Warnings, "AcceleratorClass b200 matches no Ready node; the service will wait for one")
}
