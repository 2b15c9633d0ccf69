package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
)

const h100Product = "NVIDIA-H100-80GB-HBM3"

// gpuPod selects the fake H100 pool and asks for gpus nvidia.com/gpu.
func gpuPod(ns, name string, gpus int64) *corev1.Pod {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"nvidia.com/gpu.product": h100Product},
			Containers: []corev1.Container{{
				Name:  "engine",
				Image: "docker.io/lmsysorg/sglang:v0.4.6",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"nvidia.com/gpu": q},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": q},
				},
			}},
		},
	}
}

// testNamespace creates a namespace for one test and deletes it afterwards.
func testNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ns, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = env.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// waitPod polls the pod until done answers true, and on timeout fails with
// the pod's last phase and conditions.
func waitPod(t *testing.T, ns, name string, timeout time.Duration, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last *corev1.Pod
	for {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if done(p) {
				return p
			}
		}
		select {
		case <-ctx.Done():
			require.FailNowf(t, "timeout", "pod %s/%s: condition not reached after %s; last status: %s", ns, name, timeout, describePod(last))
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func describePod(p *corev1.Pod) string {
	if p == nil {
		return "(never read)"
	}
	var conds []string
	for _, c := range p.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s %s %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("phase %s node %q conditions [%s]", p.Status.Phase, p.Spec.NodeName, strings.Join(conds, "; "))
}

// A plain pod selecting the H100 pool with 2 GPUs is bound by the real
// scheduler to an H100 node and made Running by kwok.
func TestGPUPodRunsOnH100Node(t *testing.T) {
	ns := testNamespace(t, "e2e-gpu")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, gpuPod(ns, "two-gpus", 2), metav1.CreateOptions{})
	require.NoError(t, err)

	pod := waitPod(t, ns, "two-gpus", 60*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
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
	ns := testNamespace(t, "e2e-gpu")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, gpuPod(ns, "nine-gpus", 9), metav1.CreateOptions{})
	require.NoError(t, err)

	pod := waitPod(t, ns, "nine-gpus", 60*time.Second, func(p *corev1.Pod) bool {
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
