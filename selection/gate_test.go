package selection

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/deploy"
)

// shippedClasses are deploy/accelerators' AcceleratorClasses, as `berth
// up` applies them.
func shippedClasses(t *testing.T, names ...string) []*v1beta1.AcceleratorClass {
	t.Helper()
	var out []*v1beta1.AcceleratorClass
	for _, n := range names {
		b, err := fs.ReadFile(deploy.FS, "accelerators/"+n+".yaml")
		require.NoError(t, err)
		c := &v1beta1.AcceleratorClass{}
		require.NoError(t, yaml.UnmarshalStrict(b, c))
		out = append(out, c)
	}
	return out
}

// classNodes gives each class one Ready node of 8 free GPUs that its
// discovery nodeSelector matches.
func classNodes(classes []*v1beta1.AcceleratorClass) []NodeInfo {
	var out []NodeInfo
	for _, c := range classes {
		out = append(out, NodeInfo{Name: "node-" + c.Name, Labels: c.Spec.Discovery.NodeSelector, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}, Ready: true})
	}
	return out
}

// fakeGate forbids classes and runtimes outside its allowed prefixes,
// classes whose use exceeds maxUse, and records what it was asked.
type fakeGate struct {
	policy   string
	classes  string // allowed class prefix; "" allows all
	runtimes string // allowed runtime prefix; "" allows all
	maxUse   int64  // 0: no limit
	uses     map[string]ClassUse
}

func (g *fakeGate) Runtime(kind, name string, _ map[string]string, _ *v1beta1.ServingRuntimeSpec) (string, string) {
	if g.runtimes != "" && !strings.HasPrefix(name, g.runtimes) {
		return g.policy, "not in " + g.runtimes + "*"
	}
	return "", ""
}

func (g *fakeGate) Class(c *v1beta1.AcceleratorClass, use ClassUse) (string, string) {
	if g.uses == nil {
		g.uses = map[string]ClassUse{}
	}
	g.uses[c.Name] = use
	if g.classes != "" && !strings.HasPrefix(c.Name, g.classes) {
		return g.policy, "not in " + g.classes + "*"
	}
	if g.maxUse > 0 && use.PerPod*use.Pods > g.maxUse {
		return g.policy, "too many"
	}
	return "", ""
}

// The case: namespace team-a may only use nvidia-a100-*. The
// runtime gives the H100 twice the GPUs, so a model too big for the A100's
// group still fits the H100's.
func TestSelectWithGate(t *testing.T) {
	classes := shippedClasses(t, "nvidia-a100-80gb", "nvidia-h100-80gb", "nvidia-h200-141gb")
	world := func(model string) *Index {
		rt := csr("rt", formats(format("safetensors", "")), gpus(4, 0), gpuConfig("nvidia-h100-80gb", 8),
			accel(&v1beta1.AcceleratorRequirements{SupportedClasses: []string{"nvidia-a100-80gb", "nvidia-h100-80gb"}}))
		return objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize(model))}, classes: classes, nodes: classNodes(classes),
			csrs: []*v1beta1.ClusterServingRuntime{rt, csr("other", formats(format("safetensors", "", manual())))}}.load()
	}
	perf := withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyPerformance})
	onlyA100 := &fakeGate{policy: "ServingPolicy/team-a", classes: "nvidia-a100-"}
	tests := []struct {
		name    string
		model   string
		svc     *v1beta1.InferenceService
		gate    Gate
		want    string
		explain []string
		err     *Error
	}{
		{name: "without a policy the H100 wins", model: "70B", svc: isvc("m", perf), want: "nvidia-h100-80gb",
			explain: []string{"AcceleratorClass/nvidia-a100-80gb: fits, but strategy performance ranks nvidia-h100-80gb first"}},
		{name: "team-a gets the A100, and is told why the H100 lost", model: "70B", svc: isvc("m", perf), gate: onlyA100, want: "nvidia-a100-80gb",
			explain: []string{"AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/team-a: not in nvidia-a100-*"}},
		{name: "a gate that allows everything changes nothing", model: "70B", svc: isvc("m", perf), gate: &fakeGate{policy: "ServingPolicy/p"}, want: "nvidia-h100-80gb"},
		{name: "no allowed class can serve: every candidate with its reason and policy", model: "200B", svc: isvc("m", perf), gate: onlyA100,
			err: &Error{Code: CodeForbiddenByPolicy,
				Reason: "InferenceService team/svc: every AcceleratorClass that could serve it with ClusterServingRuntime/rt is forbidden by ServingPolicy/team-a; ask the cluster admin, or change the service to fit an allowed class",
				Candidates: []string{
					"AcceleratorClass/nvidia-a100-80gb: does not hold the model: needs ≥ 480 GB, group has 4 × 80 GiB (343.6 GB; 200B parameters × 2 bytes (unquantized) × 1.2 headroom)",
					"AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/team-a: not in nvidia-a100-*",
				},
				Service: "InferenceService team/svc", Field: "spec.acceleratorSelector", CandidateFields: []string{"spec.model.name", "spec.acceleratorSelector"}}},
		{name: "a forbidden class that would not serve either is not the policy's doing", model: "400B", svc: isvc("m", perf), gate: onlyA100,
			err: &Error{Code: CodeNoAcceleratorClass,
				Reason: "InferenceService team/svc: no AcceleratorClass qualifies for ClusterServingRuntime/rt; relax the requirements or add a class that meets them",
				Candidates: []string{
					"AcceleratorClass/nvidia-a100-80gb: does not hold the model: needs ≥ 960 GB, group has 4 × 80 GiB (343.6 GB; 400B parameters × 2 bytes (unquantized) × 1.2 headroom)",
					"AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/team-a: not in nvidia-a100-*; does not hold the model: needs ≥ 960 GB, group has 8 × 80 GiB (687.2 GB; 400B parameters × 2 bytes (unquantized) × 1.2 headroom)",
				},
				Service: "InferenceService team/svc", Field: "spec.acceleratorSelector", CandidateFields: []string{"spec.model.name", "spec.acceleratorSelector"}}},
		{name: "a budget makes the bigger group lose", model: "70B", svc: isvc("m", perf), gate: &fakeGate{policy: "ServingPolicy/budget", maxUse: 4}, want: "nvidia-a100-80gb",
			explain: []string{"AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/budget: too many"}},
		{name: "the annotation names a forbidden class", model: "70B", svc: isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "nvidia-h100-80gb")), gate: onlyA100,
			err: &Error{Code: CodeForbiddenByPolicy,
				Reason:  "InferenceService team/svc: annotation ome.io/accelerator-class: AcceleratorClass nvidia-h100-80gb is forbidden by ServingPolicy/team-a: not in nvidia-a100-*; choose an allowed class or remove the annotation to auto-select one",
				Service: "InferenceService team/svc", Field: "metadata.annotations[ome.io/accelerator-class]"}},
		{name: "preferred classes all forbidden", model: "70B", svc: isvc("m", withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"nvidia-h100-80gb"}})), gate: onlyA100,
			err: &Error{Code: CodeForbiddenByPolicy,
				Reason:     "InferenceService team/svc: no class in spec.acceleratorSelector.preferredClasses fits and is allowed (forbidden by ServingPolicy/team-a); list an allowed class",
				Candidates: []string{"AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/team-a: not in nvidia-a100-*"},
				Service:    "InferenceService team/svc", Field: "spec.acceleratorSelector.preferredClasses", CandidateFields: []string{"spec.acceleratorSelector.preferredClasses[0]"}}},
		{name: "a forbidden preferred class falls through to an allowed one", model: "70B",
			svc: isvc("m", withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"nvidia-h100-80gb", "nvidia-a100-80gb"}})), gate: onlyA100, want: "nvidia-a100-80gb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := world(tt.model)
			d, err := x.SelectWith(tt.svc, SelectOptions{Gate: tt.gate})
			if tt.err != nil {
				require.Error(t, err)
				assert.Equal(t, tt.err, err)
				assert.Equal(t, tt.err.Code, Code(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.AcceleratorClassName())
			for _, l := range tt.explain {
				assert.Contains(t, d.Explanation, l)
			}
			if tt.gate == nil {
				plain, err := x.Select(tt.svc)
				require.NoError(t, err)
				assert.Equal(t, plain, d, "SelectWith without options is Select")
			}
		})
	}
}

// The gate is told what the engine would use of each class: accelerators
// per pod on it (its configuration applied), pods per group, the class's
// resource, and the chosen runtime (the gate counts groups from it).
func TestGateClassUse(t *testing.T) {
	classes := shippedClasses(t, "nvidia-a100-80gb", "nvidia-h100-80gb")
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("8B"))}, classes: classes, nodes: classNodes(classes),
		csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(2, 1), gpuConfig("nvidia-h100-80gb", 4))}}.load()
	svc := isvc("m", func(i *v1beta1.InferenceService) {
		i.Spec.Engine = &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{MinReplicas: ptr(int32(1)), MaxReplicas: ptr(int32(3))}}
	})
	g := &fakeGate{policy: "ServingPolicy/p"}
	d, err := x.SelectWith(svc, SelectOptions{Gate: g})
	require.NoError(t, err)
	rt := d.Runtime.Spec
	assert.Equal(t, map[string]ClassUse{
		"nvidia-a100-80gb": {PerPod: 2, Pods: 2, Resource: "nvidia.com/gpu", Runtime: rt},
		"nvidia-h100-80gb": {PerPod: 4, Pods: 2, Resource: "nvidia.com/gpu", Runtime: rt},
	}, g.uses)
}

func TestSelectWithGateRuntimes(t *testing.T) {
	objs := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")},
		csrs: []*v1beta1.ClusterServingRuntime{
			csr("vllm", formats(format("safetensors", "", prio(2)))),
			csr("sglang", formats(format("safetensors", "", prio(1)))),
		}}
	tests := []struct {
		name    string
		svc     *v1beta1.InferenceService
		gate    Gate
		want    string
		explain []string
		err     *Error
	}{
		{name: "without a policy the higher priority wins", svc: isvc("m"), want: "vllm"},
		{name: "a forbidden runtime loses", svc: isvc("m"), gate: &fakeGate{policy: "ServingPolicy/rt", runtimes: "sg"}, want: "sglang",
			explain: []string{"ClusterServingRuntime/vllm: forbidden by ServingPolicy/rt: not in sg*"}},
		{name: "every runtime forbidden", svc: isvc("m"), gate: &fakeGate{policy: "ServingPolicy/rt", runtimes: "trt"},
			err: &Error{Code: CodeForbiddenByPolicy,
				Reason: "InferenceService team/svc: no runtime can serve ClusterBaseModel/m (format safetensors 1.0.0, protocol openAI): every runtime that could is forbidden by ServingPolicy/rt; ask the cluster admin, or fix one of these runtimes",
				Candidates: []string{
					"ClusterServingRuntime/sglang: forbidden by ServingPolicy/rt: not in trt*",
					"ClusterServingRuntime/vllm: forbidden by ServingPolicy/rt: not in trt*",
				},
				Service: "InferenceService team/svc", Field: "spec.runtime.name", CandidateFields: []string{"spec.runtime.name", "spec.runtime.name"}}},
		{name: "the service names a forbidden runtime", svc: isvc("m", withRuntime("vllm", "")), gate: &fakeGate{policy: "ServingPolicy/rt", runtimes: "sg"},
			err: &Error{Code: CodeForbiddenByPolicy,
				Reason:  "InferenceService team/svc: spec.runtime.name: ClusterServingRuntime/vllm is forbidden by ServingPolicy/rt: not in sg*; name an allowed runtime or remove spec.runtime to auto-select one",
				Service: "InferenceService team/svc", Field: "spec.runtime.name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := objs.load().SelectWith(tt.svc, SelectOptions{Gate: tt.gate})
			if tt.err != nil {
				assert.Equal(t, tt.err, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.Runtime.Name)
			for _, l := range tt.explain {
				assert.Contains(t, d.Explanation, l)
			}
		})
	}
}
