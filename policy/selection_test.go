package policy

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/deploy"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
)

// shippedClass reads one of deploy/accelerators' AcceleratorClasses.
func shippedClass(t testing.TB, name string) *v1beta1.AcceleratorClass {
	t.Helper()
	b, err := fs.ReadFile(deploy.FS, "accelerators/"+name+".yaml")
	require.NoError(t, err)
	c := &v1beta1.AcceleratorClass{}
	require.NoError(t, yaml.UnmarshalStrict(b, c))
	return c
}

func gpuList(n int64) corev1.ResourceList {
	return corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}
}

// rtGPUs is a runtime whose engine asks 4 GPUs per pod, 8 on an H100,
// for the shipped A100 and H100 classes.
func rtGPUs() *v1beta1.ClusterServingRuntime {
	return &v1beta1.ClusterServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "rt"}, Spec: v1beta1.ServingRuntimeSpec{
		SupportedModelFormats: []v1beta1.SupportedModelFormat{{ModelFormat: &v1beta1.ModelFormat{Name: "safetensors"}, AutoSelect: ptr(true)}},
		EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Name: "engine", Image: "registry.example.com/vllm:1",
			Resources: corev1.ResourceRequirements{Requests: gpuList(4), Limits: gpuList(4)}}},
		AcceleratorRequirements: &v1beta1.AcceleratorRequirements{SupportedClasses: []string{"nvidia-a100-80gb", "nvidia-h100-80gb"}},
		AcceleratorConfigurations: []v1beta1.AcceleratorConfiguration{{Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: "nvidia-h100-80gb"},
			Resources: corev1.ResourceRequirements{Requests: gpuList(8), Limits: gpuList(8)}}},
	}}
}

// world is the shipped A100 and H100 classes with a node each, the
// runtime and a model of the given size.
func world(t testing.TB, size string) *selection.Index {
	x := selection.NewIndex()
	for _, n := range []string{"nvidia-a100-80gb", "nvidia-h100-80gb"} {
		c := shippedClass(t, n)
		x.UpsertAcceleratorClass(c)
		x.UpsertNode(selection.NodeInfo{Name: "node-" + n, Labels: c.Spec.Discovery.NodeSelector, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}, Ready: true})
	}
	x.UpsertClusterServingRuntime(rtGPUs())
	x.UpsertClusterBaseModel(&v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: v1beta1.BaseModelSpec{ModelFormat: v1beta1.ModelFormat{Name: "safetensors"}, ModelParameterSize: ptr(size)}})
	return x
}

func performanceService(ns string) *v1beta1.InferenceService {
	return &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chat"}, Spec: v1beta1.InferenceServiceSpec{
		Model: &v1beta1.ModelRef{Name: "m"}, AcceleratorSelector: &v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyPerformance}}}
}

// Policy-aware selection end to end: real policies, their Gate, the
// shipped classes. Without a policy the performance strategy picks the
// H100.
func TestPolicyAwareSelection(t *testing.T) {
	teamAOnlyA100 := MakePolicy("team-a").Namespaces(map[string]string{"team": "a"}).Classes(allow("nvidia-a100-*")).Obj()
	tests := []struct {
		name     string
		policies []*v1alpha1.ServingPolicy
		ns       string
		size     string
		inUse    map[corev1.ResourceName]int64
		want     string
		explain  string
		err      *selection.Error
		warn     []string // what admission then warns
	}{
		{name: "no policy: the H100", ns: "team-a", size: "70B", want: "nvidia-h100-80gb"},
		{name: "team-a may use only nvidia-a100-*", policies: []*v1alpha1.ServingPolicy{teamAOnlyA100}, ns: "team-a", size: "70B",
			want: "nvidia-a100-80gb", explain: "AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/team-a: not in nvidia-a100-*"},
		{name: "another namespace is not selected", policies: []*v1alpha1.ServingPolicy{teamAOnlyA100}, ns: "team-b", size: "70B", want: "nvidia-h100-80gb"},
		{name: "no allowed class can serve: denied, naming the policy", policies: []*v1alpha1.ServingPolicy{teamAOnlyA100}, ns: "team-a", size: "200B",
			err: &selection.Error{Code: selection.CodeForbiddenByPolicy,
				Reason: "InferenceService team-a/chat: every AcceleratorClass that could serve it with ClusterServingRuntime/rt is forbidden by ServingPolicy/team-a; ask the cluster admin, or change the service to fit an allowed class",
				Candidates: []string{
					"AcceleratorClass/nvidia-a100-80gb: does not hold the model: needs ≥ 480 GB, group has 4 × 80 GiB (343.6 GB; 200B parameters × 2 bytes (unquantized) × 1.2 headroom)",
					"AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/team-a: not in nvidia-a100-*",
				},
				Service: "InferenceService team-a/chat", Field: "spec.acceleratorSelector", CandidateFields: []string{"spec.model.name", "spec.acceleratorSelector"}}},
		{name: "a class above maxCostPerHour loses, the cheaper one wins", policies: []*v1alpha1.ServingPolicy{MakePolicy("cost").MaxCost("30").Obj()}, ns: "team-a", size: "70B",
			want: "nvidia-a100-80gb", explain: "AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/cost: would cost 40.96/hour (8 × 5.12/hour), above the maximum of 30/hour"},
		{name: "the namespace budget leaves room for the smaller group", policies: []*v1alpha1.ServingPolicy{MakePolicy("gpu-budget").MaxPerNamespace(16).Obj()}, ns: "team-a", size: "70B",
			inUse: map[corev1.ResourceName]int64{"nvidia.com/gpu": 12}, want: "nvidia-a100-80gb",
			explain: "AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/gpu-budget: namespace team-a would use 20 nvidia.com/gpu, above its budget of 16 (12 of 16 nvidia.com/gpu in use)"},
		{name: "a Warn policy does not change the choice", policies: []*v1alpha1.ServingPolicy{MakePolicy("warn").Actions(v1alpha1.Warn).Classes(allow("nvidia-a100-*")).Obj()},
			ns: "team-a", size: "70B", want: "nvidia-h100-80gb",
			warn: []string{"ServingPolicy/warn: AcceleratorClass nvidia-h100-80gb is not allowed in namespace team-a: not in nvidia-a100-*"}},
		{name: "berth's namespace is exempt", policies: []*v1alpha1.ServingPolicy{MakePolicy("all").Classes(allow("nvidia-a100-*")).Obj()}, ns: "berth-system", size: "70B", want: "nvidia-h100-80gb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := Compile(tt.policies, Options{ExemptNamespaces: []string{"berth-system"}})
			svc := performanceService(tt.ns)
			sub := Subject{Namespace: tt.ns, NamespaceLabels: map[string]string{"team": tt.ns[len(tt.ns)-1:]}}
			d, err := world(t, tt.size).SelectWith(svc, selection.SelectOptions{Gate: set.Gate(sub, svc, tt.inUse)})
			if tt.err != nil {
				assert.Equal(t, tt.err, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.AcceleratorClassName())
			if tt.explain != "" {
				assert.Contains(t, d.Explanation, tt.explain)
			}
			// Admission then checks the composed service: what the gate
			// let through is not denied (a Warn policy only warns).
			o := Enforce(set.CheckService(composed(t, sub, svc, d, tt.inUse)))
			assert.Empty(t, o.Deny)
			assert.Equal(t, tt.warn, o.Warn)
		})
	}
}

// composed is the Service admission checks for a decision.
func composed(t testing.TB, sub Subject, svc *v1beta1.InferenceService, d *selection.Decision, inUse map[corev1.ResourceName]int64) Service {
	t.Helper()
	roles, errs := merge.ComposeService(merge.ServiceInput{Service: svc, RuntimeKind: d.Runtime.Kind, RuntimeName: d.Runtime.Name, Runtime: d.Runtime.Spec,
		ClassFor: func(string) *v1beta1.AcceleratorClass { return d.AcceleratorClass }})
	require.Empty(t, errs)
	return Service{Subject: sub, Service: svc, RuntimeKind: d.Runtime.Kind, RuntimeName: d.Runtime.Name, RuntimeSpec: d.Runtime.Spec,
		Classes: map[string]*v1beta1.AcceleratorClass{"engine": d.AcceleratorClass}, Roles: roles, NamespaceInUse: inUse}
}

// A pinned H100 checked by admission: the composed pods count 8 GPUs and
// 40.96/hour, as the gate did.
func TestCheckServiceOnComposedPods(t *testing.T) {
	svc := performanceService("team-a")
	d, err := world(t, "70B").Select(svc)
	require.NoError(t, err)
	require.Equal(t, "nvidia-h100-80gb", d.AcceleratorClassName())
	set := Compile([]*v1alpha1.ServingPolicy{
		MakePolicy("cost").MaxCost("30").Obj(),
		MakePolicy("gpu-budget").MaxPerNamespace(16).Obj(),
		MakePolicy("registries").Actions(v1alpha1.Audit).Images("ghcr.io/berthdev").Obj(),
	}, Options{})
	sub := Subject{Namespace: "team-a"}
	vs := set.CheckService(composed(t, sub, svc, d, map[corev1.ResourceName]int64{"nvidia.com/gpu": 16}))
	audit := []v1alpha1.ValidationAction{v1alpha1.Audit}
	assert.Equal(t, []Violation{
		{Policy: "cost", Actions: deny, Rule: RuleMaxCostPerHour,
			Message: "ServingPolicy/cost: InferenceService team-a/chat would cost 40.96/hour (8 × nvidia-h100-80gb at 5.12/hour), above the maximum of 30/hour"},
		{Policy: "gpu-budget", Actions: deny, Rule: RuleMaxAcceleratorsPerNamespace,
			Message: "ServingPolicy/gpu-budget: namespace team-a would use 24 nvidia.com/gpu, above its budget of 16 (16 of 16 nvidia.com/gpu in use)"},
		{Policy: "registries", Actions: audit, Rule: RuleImages,
			Message: "ServingPolicy/registries: ClusterServingRuntime/rt spec.engineConfig.runner.image: image registry.example.com/vllm:1 is not from an allowed registry (allowed: ghcr.io/berthdev)"},
	}, vs)
	o := Enforce(vs)
	assert.Len(t, o.Deny, 2)
	assert.Empty(t, o.Warn)
	assert.Equal(t, map[string]string{"registries": vs[2].Message}, o.Audit)
}
