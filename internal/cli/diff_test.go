package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPodDiff: what a rollout would change, field by field, and nothing
// for fields berth does not compose.
func TestPodDiff(t *testing.T) {
	running := &corev1.Pod{Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"gpu": "a100"},
		Containers: []corev1.Container{{
			Name: "ome-container", Image: "sglang:v1", Args: []string{"--tp=1"},
			Env:       []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "GONE", Value: "x"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
		}, {Name: "sidecar"}},
		ServiceAccountName: "ignored",
	}}
	rendered := running.DeepCopy()
	rendered.Spec.ServiceAccountName = "other"
	assert.Empty(t, PodDiff(running, rendered), "serviceAccountName is not berth's")

	rendered.Spec.NodeSelector = map[string]string{"gpu": "h100"}
	c := &rendered.Spec.Containers[0]
	c.Image, c.Args = "sglang:v2", []string{"--tp=2"}
	c.Env = []corev1.EnvVar{{Name: "A", Value: "2"}, {Name: "NEW", Value: "y"}}
	c.Resources.Limits["nvidia.com/gpu"] = resource.MustParse("2")
	rendered.Spec.Containers = rendered.Spec.Containers[:1]
	rendered.Spec.InitContainers = []corev1.Container{{Name: "model-downloader"}}
	assert.Equal(t, []string{
		"nodeSelector gpu: a100 -> h100",
		"initContainers[model-downloader]: added",
		"containers[ome-container].image: sglang:v1 -> sglang:v2",
		"containers[ome-container].args: [--tp=1] -> [--tp=2]",
		"containers[ome-container].env A: 1 -> 2",
		"containers[ome-container].env GONE: removed (was x)",
		"containers[ome-container].env NEW: added y",
		"containers[ome-container].resources.limits nvidia.com/gpu: 1 -> 2",
		"containers[sidecar]: removed",
	}, PodDiff(running, rendered))
}
