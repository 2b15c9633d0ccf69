package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

const h100Product = "NVIDIA-H100-80GB-HBM3"

// gpuPod selects the fake H100 pool and asks for gpus nvidia.com/gpu.
func gpuPod(ns, name string, gpus int64) *corev1.Pod {
	return wrappers.MakePod(ns, name).Container("engine", "docker.io/lmsysorg/sglang:v0.4.6").
		NodeSelector("nvidia.com/gpu.product", h100Product).GPUs("nvidia.com/gpu", gpus).Obj()
}

// A plain pod selecting the H100 pool with 2 GPUs is bound by the real
// scheduler to an H100 node and made Running by kwok.
func TestGPUPodRunsOnH100Node(t *testing.T) {
	ns := e2eutil.Namespace(t, env.Kube, "e2e-gpu")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, gpuPod(ns, "two-gpus", 2), metav1.CreateOptions{})
	require.NoError(t, err)

	pod := e2eutil.WaitPod(t, env.Kube, ns, "two-gpus", 60*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	require.NotEmpty(t, pod.Spec.NodeName)
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	node, err := env.Kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, h100Product, node.Labels["nvidia.com/gpu.product"], "scheduled on %s", node.Name)
	assert.True(t, strings.HasPrefix(node.Name, "h100-"), "scheduled on %s", node.Name)
	gpus := node.Status.Allocatable["nvidia.com/gpu"]
	assert.Equal(t, int64(8), gpus.Value())
}

// A pod asking for 9 GPUs fits no node (8 per node): it stays Pending, and
// the scheduler says why, both in the PodScheduled condition and in a
// FailedScheduling event.
func TestNineGPUPodStaysPendingWithReason(t *testing.T) {
	ns := e2eutil.Namespace(t, env.Kube, "e2e-gpu")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, gpuPod(ns, "nine-gpus", 9), metav1.CreateOptions{})
	require.NoError(t, err)

	pod := e2eutil.WaitPod(t, env.Kube, ns, "nine-gpus", 60*time.Second, func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})
	assert.Equal(t, corev1.PodPending, pod.Status.Phase)
	assert.Empty(t, pod.Spec.NodeName)
	var msg string
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			msg = c.Message
		}
	}
	assert.Contains(t, msg, "Insufficient nvidia.com/gpu")

	// The event a person sees in `kubectl describe pod`.
	var event *corev1.Event
	for event == nil && ctx.Err() == nil {
		evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "nine-gpus").String(),
		})
		require.NoError(t, err)
		for i := range evs.Items {
			if evs.Items[i].Reason == "FailedScheduling" {
				event = &evs.Items[i]
			}
		}
		if event == nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	require.NotNil(t, event, "no FailedScheduling event for nine-gpus")
	assert.Contains(t, event.Message, "Insufficient nvidia.com/gpu")

	// Still Pending a moment later: no node ever fits.
	time.Sleep(2 * time.Second)
	again, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "nine-gpus", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodPending, again.Status.Phase)
	assert.Empty(t, again.Spec.NodeName)
}

// Every pool of the fleet is present and Ready with its GPUs allocatable.
func TestFleetNodesReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, want := range env.Fleet.Nodes() {
		got, err := env.Kube.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		require.NoError(t, err)
		for k, v := range want.Labels {
			assert.Equal(t, v, got.Labels[k], "node %s label %s", want.Name, k)
		}
		for res, q := range want.Status.Allocatable {
			gotQ := got.Status.Allocatable[res]
			assert.Zero(t, q.Cmp(gotQ), "node %s allocatable %s: want %s, got %s", want.Name, res, q.String(), gotQ.String())
		}
		var ready bool
		for _, c := range got.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		assert.True(t, ready, "node %s is not Ready", want.Name)
	}
}
