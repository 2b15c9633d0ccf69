package e2eutil

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// fatalRecorder is a testing.TB whose Fatal records the message and ends
// the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatal(args ...any) {
	r.mu.Lock()
	for _, a := range args {
		r.msg += a.(string)
	}
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with the recorder in a goroutine of its own and returns
// the recorded failure ("" when f returned).
func run(t *testing.T, f func(tb testing.TB)) string {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r.msg
}

func TestPollReturnsTheFirstValueDone(t *testing.T) {
	n := 0
	got := Poll(t, time.Minute, "three reads", func(context.Context) (int, error) {
		n++
		if n == 1 {
			return 0, errors.New("not yet")
		}
		return n, nil
	}, func(v int) bool { return v >= 3 }, nil)
	assert.Equal(t, 3, got)
}

func TestPollFailsExplaining(t *testing.T) {
	msg := run(t, func(tb testing.TB) {
		Poll(tb, 600*time.Millisecond, "the answer", func(context.Context) (int, error) { return 41, errors.New("flaky read") },
			func(v int) bool { return v == 42 }, func(last int) string { return "explained" })
	})
	assert.True(t, strings.HasPrefix(msg, "the answer: not reached after 600ms (last error: flaky read)\nexplained"), msg)
}

func TestWaitPodAndDescribePod(t *testing.T) {
	kube := kubefake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "engine",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "no such image"}}}}}})
	running := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }
	msg := run(t, func(tb testing.TB) { WaitPod(tb, kube, "ns", "p", 600*time.Millisecond, running) })
	assert.Contains(t, msg, `pod ns/p: not reached after 600ms`)
	assert.Contains(t, msg, `phase Pending on "n1"; engine waiting ErrImagePull: no such image`)

	p, err := kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	require.NoError(t, err)
	p.Status.Phase = corev1.PodRunning
	_, err = kube.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodRunning, WaitPod(t, kube, "ns", "p", time.Minute, running).Status.Phase)
	assert.Equal(t, "(never read)", DescribePod(nil))
}

func TestNamespaceAsksForAGeneratedNameAndDeletesIt(t *testing.T) {
	kube := kubefake.NewClientset()
	t.Run("inner", func(t *testing.T) {
		Namespace(t, kube, "e2e-x")
		list, err := kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		assert.Equal(t, "e2e-x-", list.Items[0].GenerateName)
	})
	list, err := kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "deleted when the test ended")
}
