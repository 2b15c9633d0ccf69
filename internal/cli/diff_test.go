package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPodDiff: every field the render sets is compared; fields only the
// running pod has (defaults, what other admission adds) are not.
func TestPodDiff(t *testing.T) {
	running := &corev1.Pod{Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"gpu": "a100"},
		Containers: []corev1.Container{{
			Name: "ome-container", Image: "sglang:v1", Args: []string{"--tp=1"},
			Env:       []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "GONE", Value: "x"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
		}, {Name: "sidecar"}},
		ServiceAccountName: "engine",
	}}
	running.Labels = map[string]string{"ome.io/component": "engine", "added-by-someone": "x"}
	rendered := running.DeepCopy()
	rendered.Labels = map[string]string{"ome.io/component": "engine"}
	// What the apiserver and its admission plugins add to the running pod.
	running.Spec.NodeName = "node-1"
	running.Spec.SchedulerName = "default-scheduler"
	running.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	running.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	running.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-x7k2p"}}
	assert.Empty(t, PodDiff(running, rendered), "defaults and others' additions are not changes")

	rendered.Labels["scheduling.x-k8s.io/pod-group"] = "svc-engine-0"
	rendered.Spec.SchedulerName = "scheduler-plugins-scheduler"
	rendered.Spec.ServiceAccountName = "svc-router"
	rendered.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
	rendered.Spec.NodeSelector = map[string]string{"gpu": "h100", "zone": "a"}
	c := &rendered.Spec.Containers[0]
	c.Image, c.Args = "sglang:v2", []string{"--tp=2"}
	c.Env = []corev1.EnvVar{{Name: "A", Value: "2"}, {Name: "NEW", Value: "y"}}
	c.Resources.Limits = corev1.ResourceList{"cpu": resource.MustParse("2")}
	rendered.Spec.Containers = rendered.Spec.Containers[:1]
	rendered.Spec.InitContainers = []corev1.Container{{Name: "model-downloader"}}
	assert.Equal(t, []string{
		"metadata.labels scheduling.x-k8s.io/pod-group: added svc-engine-0",
		`spec.containers[ome-container].args: ["--tp=1"] -> ["--tp=2"]`,
		"spec.containers[ome-container].env[A].value: 1 -> 2",
		"spec.containers[ome-container].env[GONE]: removed",
		"spec.containers[ome-container].env[NEW]: added",
		"spec.containers[ome-container].image: sglang:v1 -> sglang:v2",
		"spec.containers[ome-container].resources.limits.cpu: added 2",
		"spec.containers[ome-container].resources.limits.nvidia.com/gpu: removed (was 1)",
		"spec.containers[sidecar]: removed",
		"spec.initContainers[model-downloader]: added",
		"spec.nodeSelector.gpu: a100 -> h100",
		"spec.nodeSelector.zone: added a",
		"spec.schedulerName: default-scheduler -> scheduler-plugins-scheduler",
		"spec.serviceAccountName: engine -> svc-router",
		`spec.tolerations: added {"key":"nvidia.com/gpu","operator":"Exists"}`,
	}, PodDiff(running, rendered))
}
