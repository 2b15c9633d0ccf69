package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// imageRuntime is an auto-selectable runtime of rtGPUs' shape with its
// engine image and priority.
func imageRuntime(name, image string, priority int32) *v1beta1.ClusterServingRuntime {
	rt := rtGPUs()
	rt.Name = name
	rt.Spec.EngineConfig.Runner.Image = image
	rt.Spec.SupportedModelFormats[0].Priority = ptr(priority)
	return rt
}

// The gate judges images: a runtime whose image no policy allows loses to
// one whose image is allowed; a class whose acceleratorConfigurations entry
// swaps in such an image loses to one without; an image the service sets
// itself forbids no runtime (admission names the service's field).
func TestGateJudgesImages(t *testing.T) {
	registries := MakePolicy("registries").Images("registry.example.com").Obj()
	evil := "docker.io/evil/x:1"
	evilWhy := "image docker.io/evil/x:1 is not from an allowed registry (allowed: registry.example.com)"
	h100Evil := func(rt *v1beta1.ClusterServingRuntime) {
		rt.Spec.AcceleratorConfigurations[0].Runner = &v1beta1.RunnerSpec{Image: evil}
	}
	tests := []struct {
		name     string
		policies []*v1alpha1.ServingPolicy
		runtimes []*v1beta1.ClusterServingRuntime
		svcImage string
		runtime  string
		class    string
		explain  string
		err      *selection.Error
	}{
		{name: "no policy: the higher priority", runtimes: []*v1beta1.ClusterServingRuntime{imageRuntime("fast", evil, 10), imageRuntime("plain", "registry.example.com/vllm:1", 5)},
			runtime: "fast", class: "nvidia-h100-80gb"},
		{name: "the runtime with a forbidden image loses", policies: []*v1alpha1.ServingPolicy{registries},
			runtimes: []*v1beta1.ClusterServingRuntime{imageRuntime("fast", evil, 10), imageRuntime("plain", "registry.example.com/vllm:1", 5)},
			runtime:  "plain", class: "nvidia-h100-80gb", explain: "ClusterServingRuntime/fast: forbidden by ServingPolicy/registries: " + evilWhy},
		{name: "a Warn policy does not change the choice", policies: []*v1alpha1.ServingPolicy{MakePolicy("warn").Actions(v1alpha1.Warn).Images("registry.example.com").Obj()},
			runtimes: []*v1beta1.ClusterServingRuntime{imageRuntime("fast", evil, 10), imageRuntime("plain", "registry.example.com/vllm:1", 5)},
			runtime:  "fast", class: "nvidia-h100-80gb"},
		{name: "every runtime forbidden: denied, naming the policy", policies: []*v1alpha1.ServingPolicy{registries},
			runtimes: []*v1beta1.ClusterServingRuntime{imageRuntime("fast", evil, 10)},
			err: &selection.Error{Code: selection.CodeForbiddenByPolicy,
				Reason:     "InferenceService team-a/chat: no runtime can serve ClusterBaseModel/m (format safetensors, size 70B, protocol openAI): every runtime that could is forbidden by ServingPolicy/registries; ask the cluster admin, or fix one of these runtimes",
				Candidates: []string{"ClusterServingRuntime/fast: forbidden by ServingPolicy/registries: " + evilWhy},
				Service:    "InferenceService team-a/chat", Field: "spec.runtime.name", CandidateFields: []string{"spec.runtime.name"}}},
		{name: "the service's own image forbids no runtime", policies: []*v1alpha1.ServingPolicy{registries},
			runtimes: []*v1beta1.ClusterServingRuntime{imageRuntime("fast", "registry.example.com/a:1", 10), imageRuntime("plain", "registry.example.com/vllm:1", 5)},
			svcImage: evil, runtime: "fast", class: "nvidia-h100-80gb"},
		{name: "a class whose configuration swaps in a forbidden image loses", policies: []*v1alpha1.ServingPolicy{registries},
			runtimes: []*v1beta1.ClusterServingRuntime{func() *v1beta1.ClusterServingRuntime {
				rt := imageRuntime("rt", "registry.example.com/vllm:1", 10)
				h100Evil(rt)
				return rt
			}()},
			runtime: "rt", class: "nvidia-a100-80gb", explain: "AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/registries: " + evilWhy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := world(t, "70B")
			x.DeleteClusterServingRuntime("rt")
			for _, rt := range tt.runtimes {
				x.UpsertClusterServingRuntime(rt)
			}
			set := Compile(tt.policies, Options{})
			svc := performanceService("team-a")
			if tt.svcImage != "" {
				svc.Spec.Engine = &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Image: tt.svcImage}}
			}
			sub := Subject{Namespace: "team-a", NamespaceLabels: map[string]string{}}
			d, err := x.SelectWith(svc, selection.SelectOptions{Gate: set.Gate(sub, svc, nil)})
			if tt.err != nil {
				assert.Equal(t, tt.err, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.runtime, d.Runtime.Name)
			assert.Equal(t, tt.class, d.AcceleratorClassName())
			if tt.explain != "" {
				assert.Contains(t, d.Explanation, tt.explain)
			}
			if tt.svcImage == "" && len(tt.policies) > 0 && tt.policies[0].Name == "registries" {
				// What the gate let through is not denied at admission.
				assert.Empty(t, Enforce(set.CheckService(composed(t, sub, svc, d, nil))).Deny)
			}
		})
	}
}
