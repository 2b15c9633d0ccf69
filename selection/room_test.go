package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func withEngine(ext v1beta1.ComponentExtensionSpec) isvcOpt {
	return func(i *v1beta1.InferenceService) { i.Spec.Engine = &v1beta1.EngineSpec{ComponentExtensionSpec: ext} }
}

// A class has room when its free accelerators cover every group of the
// engine (groups × pods per group × accelerators per pod), not one pod.
// "b200" (first under performance) has 4 of 8 GPUs free on its one node,
// "h100-80gb" 8.
func TestRoomForTheWholeService(t *testing.T) {
	model := []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}
	classes := []*v1beta1.AcceleratorClass{fleet()[2], fleet()[3]} // h100-80gb, b200
	perf := withAnnotation(v1beta1.AnnotationSelectionStrategy, string(v1beta1.StrategyPerformance))
	for _, c := range []struct {
		name      string
		gpus      int64
		workers   int32
		svc       []isvcOpt
		class     string
		available bool
		line      string // an explanation line, or a warning when the winner has no room
	}{
		{name: "one group fits the busy class", gpus: 1, svc: []isvcOpt{perf},
			class: "b200", available: true},
		{name: "four groups fit it exactly", gpus: 1, svc: []isvcOpt{perf, withEngine(v1beta1.ComponentExtensionSpec{Replicas: ptr(int32(4))})},
			class: "b200", available: true},
		{name: "six groups do not: the class with room wins", gpus: 1, svc: []isvcOpt{perf, withEngine(v1beta1.ComponentExtensionSpec{Replicas: ptr(int32(6))})},
			class: "h100-80gb", available: true,
			line: "AcceleratorClass/b200: fits, but its ready nodes lack 6 group(s) × 1 pod(s) × 1 nvidia.com/gpu (4 of 8 nvidia.com/gpu free on 1 Ready node); h100-80gb has room"},
		{name: "minReplicas counts when above replicas", gpus: 1, svc: []isvcOpt{perf, withEngine(v1beta1.ComponentExtensionSpec{Replicas: ptr(int32(1)), MinReplicas: ptr(int32(5))})},
			class: "h100-80gb", available: true},
		{name: "maxReplicas caps the groups", gpus: 1, svc: []isvcOpt{perf, withEngine(v1beta1.ComponentExtensionSpec{Replicas: ptr(int32(9)), MaxReplicas: ptr(int32(4))})},
			class: "b200", available: true},
		{name: "pods per group count: 3 groups of a leader and a worker", gpus: 1, workers: 1, svc: []isvcOpt{perf, withEngine(v1beta1.ComponentExtensionSpec{Replicas: ptr(int32(3))})},
			class: "h100-80gb", available: true},
		{name: "pinned by annotation without room: admitted with the numbers", gpus: 1,
			svc:   []isvcOpt{withAnnotation(v1beta1.AnnotationAcceleratorClass, "b200"), withEngine(v1beta1.ComponentExtensionSpec{Replicas: ptr(int32(6))})},
			class: "b200", available: false,
			line: "AcceleratorClass b200 currently has no room: its ready nodes lack 6 group(s) × 1 pod(s) × 1 nvidia.com/gpu (4 of 8 nvidia.com/gpu free on 1 Ready node); the service will wait for capacity"},
		{name: "no class has room: the best, with the numbers", gpus: 2, svc: []isvcOpt{perf, withEngine(v1beta1.ComponentExtensionSpec{Replicas: ptr(int32(6))})},
			class: "b200", available: false,
			line: "AcceleratorClass b200 currently has no room: its ready nodes lack 6 group(s) × 1 pod(s) × 2 nvidia.com/gpu (4 of 8 nvidia.com/gpu free on 1 Ready node); the service will wait for capacity"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := objects{cbms: model, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(c.gpus, c.workers))},
				classes: classes, nodes: []NodeInfo{gpuNode("b1", "b200", 8), gpuNode("h1", "h100-80gb", 8)}}.load()
			x.SetPodUsage("other/p", "b1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 4})
			d, err := x.Select(isvc("m", c.svc...))
			require.NoError(t, err)
			assert.Equal(t, c.class, d.AcceleratorClassName())
			assert.Equal(t, c.available, d.AcceleratorAvailable)
			if c.line != "" {
				assert.Contains(t, append(d.Explanation, d.Warnings...), c.line)
			}
		})
	}
}

func TestEngineGroups(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	rtExt := func(ext v1beta1.ComponentExtensionSpec) *v1beta1.ServingRuntimeSpec {
		return &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{ComponentExtensionSpec: ext}}
	}
	for _, c := range []struct {
		name string
		svc  v1beta1.ComponentExtensionSpec
		rt   *v1beta1.ServingRuntimeSpec
		want int64
	}{
		{name: "nothing set: one group", want: 1},
		{name: "replicas", svc: v1beta1.ComponentExtensionSpec{Replicas: i32(6)}, want: 6},
		{name: "minReplicas above replicas", svc: v1beta1.ComponentExtensionSpec{Replicas: i32(2), MinReplicas: i32(3)}, want: 3},
		{name: "maxReplicas caps", svc: v1beta1.ComponentExtensionSpec{Replicas: i32(9), MaxReplicas: i32(4)}, want: 4},
		{name: "the runtime's minReplicas", rt: rtExt(v1beta1.ComponentExtensionSpec{MinReplicas: i32(2)}), want: 2},
		{name: "the service over the runtime", svc: v1beta1.ComponentExtensionSpec{Replicas: i32(5)}, rt: rtExt(v1beta1.ComponentExtensionSpec{Replicas: i32(2)}), want: 5},
		{name: "scale to zero still needs room for one", svc: v1beta1.ComponentExtensionSpec{MinReplicas: i32(0)}, want: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := isvc("m", withEngine(c.svc))
			assert.Equal(t, c.want, EngineGroups(s, c.rt))
		})
	}
}
