package realnode

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/node"
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
	ns, err := env.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// waitPod waits until cond holds for the pod, or fails with its status.
func waitPod(t *testing.T, ns, name string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	require.NoError(t, err, "pod %s/%s: %s", ns, name, describePod(last))
	return last
}

func describePod(p *corev1.Pod) string {
	if p == nil {
		return "never seen"
	}
	s := fmt.Sprintf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		s += fmt.Sprintf("; %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			s += fmt.Sprintf("; %s waiting %s: %s", cs.Name, w.Reason, w.Message)
		}
		if term := cs.State.Terminated; term != nil {
			s += fmt.Sprintf("; %s terminated %s (exit %d): %s", cs.Name, term.Reason, term.ExitCode, term.Message)
		}
	}
	return s
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
