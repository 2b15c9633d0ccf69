package realnode

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/node"
	"github.com/berthdev/berth/internal/testing/e2eutil"
)

// onRealNode places a pod spec on the real node.
func onRealNode(spec *corev1.PodSpec) {
	sel, tol := node.Placement()
	spec.NodeSelector = sel
	spec.Tolerations = append(spec.Tolerations, tol...)
}

// newNamespace creates a namespace for one test, deleted after it.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	return e2eutil.Namespace(t, env.Kube, prefix)
}

// waitPod waits until cond holds for the pod, or fails with its status.
func waitPod(t *testing.T, ns, name string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	return e2eutil.WaitPod(t, env.Kube, ns, name, timeout, cond)
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

// A pod of berth's pause image runs on the real node, gets an address on
// the pod network, and the kwok fleet is still there.
func TestPlainPodRunsOnRealNode(t *testing.T) {
	needNode(t)
	ns := newNamespace(t, "plain")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pause"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "pause", Image: devenv.PauseImage, ImagePullPolicy: corev1.PullNever}},
	}}
	onRealNode(&pod.Spec)
	_, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	got := waitPod(t, ns, "pause", 2*time.Minute, running)
	require.Equal(t, node.Name, got.Spec.NodeName)
	_, cidr, _ := net.ParseCIDR(node.PodCIDR)
	require.True(t, cidr.Contains(net.ParseIP(got.Status.PodIP)), "pod IP %s in %s", got.Status.PodIP, node.PodCIDR)
}
