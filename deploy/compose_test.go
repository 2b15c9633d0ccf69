package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// TestRuntimesComposePods composes every pod of every out-of-box runtime
// with merge.ComposePod, as the pod webhook would on an H100 class: the
// templates render, GPUs are requested, engine pods land on the class's
// nodes and routers do not, and multi-node pods get their group env.
func TestRuntimesComposePods(t *testing.T) {
	var h100 v1beta1.AcceleratorClass
	for _, m := range readManifests(t, acceleratorsDir) {
		if m.name() == "nvidia-h100-80gb" {
			require.NoError(t, yaml.UnmarshalStrict(m.raw, &h100))
		}
	}
	require.Equal(t, "nvidia-h100-80gb", h100.Name)
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "team-a"},
		Spec:       v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{}},
	}
	type podCase struct {
		component, role string
		workerIndex     int
	}
	for _, rt := range loadRuntimes(t) {
		t.Run(rt.Name, func(t *testing.T) {
			svc := isvc.DeepCopy()
			var pods []podCase
			for comp, cfg := range map[string]*v1beta1.WorkerSpec{v1beta1.ComponentEngine: engineWorker(rt), v1beta1.ComponentDecoder: decoderWorker(rt)} {
				if comp == v1beta1.ComponentDecoder && rt.Spec.DecoderConfig == nil {
					continue
				}
				if cfg == nil {
					pods = append(pods, podCase{comp, "", 0})
				} else {
					pods = append(pods, podCase{comp, "leader", 0}, podCase{comp, "worker", 1})
				}
			}
			if rt.Spec.DecoderConfig != nil {
				svc.Spec.Decoder = &v1beta1.DecoderSpec{}
			}
			if rt.Spec.RouterConfig != nil {
				svc.Spec.Router = &v1beta1.RouterSpec{}
				pods = append(pods, podCase{v1beta1.ComponentRouter, "", 0})
			}
			for _, pc := range pods {
				group := merge.GroupIdentity{Role: pc.role, WorkerIndex: pc.workerIndex, GroupSize: 1, LeaderAddress: ""}
				if pc.role != "" {
					group.GroupSize, group.LeaderAddress = 2, "chat-engine-0.team-a"
				}
				in := merge.Input{
					Service: svc, Component: pc.component, RuntimeKind: "ClusterServingRuntime", RuntimeName: rt.Name,
					Runtime: &rt.Spec, AcceleratorClass: &h100, Group: group,
				}
				if pc.component == v1beta1.ComponentRouter {
					in.AcceleratorClass = nil
				}
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a", Labels: map[string]string{v1beta1.LabelInferenceService: "chat"}}}
				require.NoError(t, merge.ComposePod(in, pod), "%s %s", pc.component, pc.role)
				where := pc.component + " " + pc.role
				require.NotEmpty(t, pod.Spec.Containers, where)
				main := pod.Spec.Containers[0]
				assert.NotEmpty(t, main.Image, where)
				line := strings.Join(append(slices.Clone(main.Command), main.Args...), " ")
				assert.NotContains(t, line, "{{", "%s: an unrendered template", where)
				gpus := main.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]
				if pc.component == v1beta1.ComponentRouter {
					assert.True(t, gpus.IsZero(), "the router is CPU-only")
					assert.NotContains(t, pod.Spec.NodeSelector, "nvidia.com/gpu.product", "the router gets no accelerator constraint")
					assert.Contains(t, line, "ome.io/inferenceservice=chat")
					continue
				}
				assert.False(t, gpus.IsZero(), "%s requests no GPU", where)
				assert.Equal(t, "NVIDIA-H100-80GB-HBM3", pod.Spec.NodeSelector["nvidia.com/gpu.product"], where)
				if pc.role != "worker" {
					assert.Contains(t, line, "--served-model-name chat", where)
				}
				if pc.role != "" {
					assert.Equal(t, "chat-engine-0.team-a", envOf(main.Env, merge.EnvLeaderAddress), where)
					assert.Equal(t, "2", envOf(main.Env, merge.EnvGroupSize), where)
				}
			}
		})
	}
}

func engineWorker(rt *v1beta1.ClusterServingRuntime) *v1beta1.WorkerSpec {
	if rt.Spec.EngineConfig == nil {
		return nil
	}
	return rt.Spec.EngineConfig.Worker
}

func decoderWorker(rt *v1beta1.ClusterServingRuntime) *v1beta1.WorkerSpec {
	if rt.Spec.DecoderConfig == nil {
		return nil
	}
	return rt.Spec.DecoderConfig.Worker
}

func envOf(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
