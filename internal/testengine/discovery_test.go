package testengine

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

func pod(name, ip string, labels map[string]string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: labels},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func notReadyPod(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func TestWorkerFromPod(t *testing.T) {
	annotated := func(v string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations = map[string]string{DefaultBootstrapPortAnno: v} }
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		role   string
		worker Worker
		why    string
	}{
		{name: "ready pod", pod: pod("a", "10.0.0.1", nil), role: RoleRegular,
			worker: Worker{URL: "http://10.0.0.1:8080", Role: RoleRegular, Source: SourceDiscovery, Pod: "team/a"}},
		{name: "IPv6", pod: pod("a", "fd00::1", nil), role: RoleDecode,
			worker: Worker{URL: "http://[fd00::1]:8080", Role: RoleDecode, Source: SourceDiscovery, Pod: "team/a"}},
		{name: "prefill, default bootstrap port", pod: pod("p", "10.0.0.2", nil), role: RolePrefill,
			worker: Worker{URL: "http://10.0.0.2:8080", Role: RolePrefill, BootstrapPort: 8998, Source: SourceDiscovery, Pod: "team/p"}},
		{name: "prefill, annotated bootstrap port", pod: pod("p", "10.0.0.2", nil, annotated("9001")), role: RolePrefill,
			worker: Worker{URL: "http://10.0.0.2:8080", Role: RolePrefill, BootstrapPort: 9001, Source: SourceDiscovery, Pod: "team/p"}},
		{name: "decode ignores the annotation", pod: pod("d", "10.0.0.3", nil, annotated("x")), role: RoleDecode,
			worker: Worker{URL: "http://10.0.0.3:8080", Role: RoleDecode, Source: SourceDiscovery, Pod: "team/d"}},
		{name: "bad annotation", pod: pod("p", "10.0.0.2", nil, annotated("x")), role: RolePrefill, why: `annotation sglang.ai/bootstrap-port: "x" is not a TCP port`},
		{name: "pending", pod: pod("a", "", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), role: RoleRegular, why: "phase Pending, not Running"},
		{name: "not ready", pod: pod("a", "10.0.0.1", nil, notReadyPod), role: RoleRegular, why: "not Ready"},
		{name: "no ready condition", pod: pod("a", "10.0.0.1", nil, func(p *corev1.Pod) { p.Status.Conditions = nil }), role: RoleRegular, why: "not Ready"},
		{name: "no IP", pod: pod("a", "", nil), role: RoleRegular, why: "no pod IP"},
		{name: "terminating", pod: pod("a", "10.0.0.1", nil, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
			role: RoleRegular, why: "terminating"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, why := WorkerFromPod(tt.pod, tt.role, 8080, DefaultBootstrapPortAnno)
			assert.Equal(t, tt.why, why)
			assert.Equal(t, tt.worker, w)
		})
	}
}

// discoveryRouter is a PD router discovering pods of namespace team through
// client, with its log captured.
func discoveryRouter(t *testing.T, client *fake.Clientset) (*Router, *syncBuffer) {
	t.Helper()
	cfg, err := Parse([]string{"python3", "-m", "sglang_router.launch_router", "--pd-disaggregation", "--service-discovery",
		"--service-discovery-namespace", "team", "--service-discovery-port", "8080",
		"--prefill-selector", "component=engine", "app=x", "--decode-selector", "component=decoder", "app=x"})
	require.NoError(t, err)
	logs := &syncBuffer{}
	r, err := NewRouter(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	synced := r.StartDiscovery(ctx, client)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), synced...))
	return r, logs
}

func urls(ws []Worker) map[string]string {
	out := map[string]string{}
	for _, w := range ws {
		out[w.URL] = w.Role
	}
	return out
}

func TestDiscoveryWithFakeClientset(t *testing.T) {
	engine := map[string]string{"component": "engine", "app": "x"}
	decoder := map[string]string{"component": "decoder", "app": "x"}
	client := fake.NewClientset(
		pod("e0", "10.0.0.1", engine),
		pod("d0", "10.0.0.2", decoder),
		pod("d1", "10.0.0.3", decoder, notReadyPod),
		pod("other", "10.0.0.9", map[string]string{"component": "engine", "app": "y"}),
	)
	r, logs := discoveryRouter(t, client)
	assert.Equal(t, map[string]string{"http://10.0.0.1:8080": RolePrefill, "http://10.0.0.2:8080": RoleDecode}, urls(r.workers.all()))

	ctx := context.Background()
	pods := client.CoreV1().Pods("team")
	_, err := pods.Update(ctx, pod("d1", "10.0.0.3", decoder), metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = pods.Create(ctx, pod("e1", "10.0.0.4", engine, func(p *corev1.Pod) {
		p.Annotations = map[string]string{DefaultBootstrapPortAnno: "9100"}
	}), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, pods.Delete(ctx, "d0", metav1.DeleteOptions{}))
	_, err = pods.Update(ctx, pod("e0", "10.0.0.1", engine, notReadyPod), metav1.UpdateOptions{})
	require.NoError(t, err)

	want := map[string]string{"http://10.0.0.3:8080": RoleDecode, "http://10.0.0.4:8080": RolePrefill}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, urls(r.workers.all())) }, 5*time.Second, 10*time.Millisecond,
		"workers: %v", r.workers.all())
	p, ok := r.workers.pick(RolePrefill)
	require.True(t, ok)
	assert.Equal(t, 9100, p.BootstrapPort)
	assert.Equal(t, "team/e1", p.Pod)
	assert.Contains(t, logs.String(), `msg="worker removed" url=http://10.0.0.2:8080 role=decode pod=team/d0 reason=deleted`)
	assert.Contains(t, logs.String(), `reason="not Ready"`)
	assert.Equal(t, 200, healthStatus(t, r))
}

func TestDiscoveryForbidden(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
			errString(`User "system:serviceaccount:team:default" cannot list resource "pods" in API group "" in the namespace "team"`))
	})
	cfg, err := Parse([]string{"python3", "-m", "sglang_router.launch_router", "--service-discovery",
		"--service-discovery-namespace", "team", "--service-discovery-port", "8080", "--selector", "app=x"})
	require.NoError(t, err)
	logs := &syncBuffer{}
	r, err := NewRouter(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.StartDiscovery(ctx, client)
	require.Eventually(t, func() bool { return len(r.discoveryProblems()) > 0 }, 5*time.Second, 10*time.Millisecond)

	srv := newLoopback(t, r.Handler())
	h := call(t, "GET", srv+"/health", "")
	assert.Equal(t, 503, h.status)
	for _, want := range []string{`"status":"unhealthy"`, "cannot list pods in namespace team for regular workers (selector app=x)",
		"cannot list resource", "needs get, list and watch on pods"} {
		assert.Contains(t, h.body, want)
	}
	gen := call(t, "POST", srv+"/v1/completions", `{"prompt":"x"}`)
	assert.Equal(t, 503, gen.status)
	assert.Contains(t, gen.body, "service discovery fails")
	assert.Contains(t, logs.String(), "level=ERROR msg=\"SERVICE DISCOVERY FAILING")
}

func healthStatus(t *testing.T, r *Router) int {
	t.Helper()
	return call(t, "GET", newLoopback(t, r.Handler())+"/health", "").status
}

type errString string

func (e errString) Error() string { return string(e) }

// syncBuffer is a log sink safe for the informers' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
