package realnode

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/internal/testing/e2eutil"
)

// startupBatch is how many pods start at once: the real node has 2 cores
// and each engine asks for 50m.
const startupBatch = 10

// TestPodStartupLatency measures pod create → Ready on the real node, 50
// plain pods of berth-test-engine against 50 engine pods of
// InferenceServices (the reconciler's skeleton, completed by the in-cluster
// webhook), and logs p50 and p99. It runs with BERTH_E2E_PERF=1 (a few
// minutes); it fails only when a pod never gets Ready.
func TestPodStartupLatency(t *testing.T) {
	needNode(t)
	if os.Getenv("BERTH_E2E_PERF") == "" {
		t.Skip("a measurement: run with BERTH_E2E_PERF=1")
	}
	c := berthClient(t)
	applyTestEngineRuntime(t)
	plain := measure(t, "plain", func(t *testing.T, ns string, i int) string {
		return createPlainEngine(t, ns, fmt.Sprintf("plain-%d", i))
	})
	berth := measure(t, "berth", func(t *testing.T, ns string, i int) string {
		name := fmt.Sprintf("svc-%d", i)
		newChatService(t, c, ns, name, 1)
		return name + "-engine-0"
	})
	p := func(d []time.Duration, q float64) time.Duration { return d[int(q*float64(len(d)-1))] }
	t.Logf("create → Ready over %d pods: plain p50 %s p99 %s; through berth p50 %s p99 %s",
		len(plain), p(plain, .5).Round(time.Millisecond), p(plain, .99).Round(time.Millisecond),
		p(berth, .5).Round(time.Millisecond), p(berth, .99).Round(time.Millisecond))
}

// measure creates 50 pods in batches (create returns the pod's name) and
// returns, sorted, the time from each create call (the pod's, or the
// InferenceService's) to the moment a watch saw the pod Ready.
func measure(t *testing.T, prefix string, create func(*testing.T, string, int) string) []time.Duration {
	var out []time.Duration
	for b := 0; b < 50/startupBatch; b++ {
		ns := newNamespace(t, fmt.Sprintf("%s-%d", prefix, b))
		w, err := env.Kube.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		started := map[string]time.Time{}
		for i := 0; i < startupBatch; i++ {
			at := time.Now()
			started[create(t, ns, i)] = at
		}
		readyAt := map[string]time.Time{}
		timeout := time.After(3 * time.Minute)
		for len(readyAt) < len(started) {
			select {
			case ev := <-w.ResultChan():
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				if _, mine := started[p.Name]; mine && readyAt[p.Name].IsZero() && e2eutil.PodReady(p) {
					readyAt[p.Name] = time.Now()
				}
			case <-timeout:
				t.Fatalf("%d of %d pods Ready in 3 minutes in %s", len(readyAt), len(started), ns)
			}
		}
		w.Stop()
		for name, at := range readyAt {
			out = append(out, at.Sub(started[name]))
		}
		require.NoError(t, env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// createPlainEngine creates the pod an InferenceService's engine would be,
// by hand: berth-test-engine as SGLang with the same probe and resources.
func createPlainEngine(t *testing.T, ns, name string) string {
	dir := writeModelDir(t, "LlamaForCausalLM")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "engine", Image: TestEngineImage,
			Command: []string{"python3", "-m", "sglang.launch_server", "--host", "0.0.0.0", "--port", "8080", "--model-path", "/mnt/models"},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 2, FailureThreshold: 3},
			VolumeMounts: []corev1.VolumeMount{{Name: "model", MountPath: "/mnt/models", ReadOnly: true}}}},
		Volumes: []corev1.Volume{{Name: "model", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}},
	}}
	onRealNode(&pod.Spec)
	_, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	return name
}
