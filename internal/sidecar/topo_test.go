package sidecar

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func workers(t *testing.T, router string) string {
	t.Helper()
	status, body := get(t, router+"/workers")
	require.Equal(t, 200, status, body)
	return body
}

func TestTopologyRegistersHealsAndUnregisters(t *testing.T) {
	routerSW, router := startRouter(t)
	_, engine := startEngine(t, EngineSGLang)
	c := http.DefaultClient
	topo := &Topology{Router: SGLangRouter{Base: router.URL, Client: c},
		Engine:    Engine{Kind: EngineSGLang, Base: engine.URL, HealthPath: "/health", Client: c},
		Worker:    Worker{URL: "http://10.244.0.9:8080", Type: WorkerPrefill, BootstrapPort: 9001},
		Heartbeat: 50 * time.Millisecond, Log: quiet(), Metrics: NewMetrics()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { topo.Run(ctx); close(done) }()

	require.Eventually(t, topo.Registered, 2*time.Second, 10*time.Millisecond)
	assert.Contains(t, workers(t, router.URL), `"url":"http://10.244.0.9:8080","worker_type":"prefill","bootstrap_port":9001`)

	routerSW.set(newRouter(t, "--pd-disaggregation")) // the router restarts and knows no worker
	assert.NotContains(t, workers(t, router.URL), "10.244.0.9")
	start := time.Now()
	require.Eventually(t, func() bool { return strings.Contains(workers(t, router.URL), "10.244.0.9") }, 2*time.Second, 5*time.Millisecond)
	t.Logf("re-registered %s after the router restart (heartbeat 50ms)", time.Since(start))

	cancel()
	<-done
	require.NoError(t, topo.Stop(context.Background()))
	assert.NotContains(t, workers(t, router.URL), "10.244.0.9")
	assert.False(t, topo.Registered())
	require.NoError(t, topo.Stop(context.Background()), "unregistering a worker the router does not know is no error")
}

func TestTopologyUnregistersAnUnhealthyEngine(t *testing.T) {
	_, router := startRouter(t)
	var healthy atomic.Bool
	healthy.Store(true)
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(503)
		}
	}))
	defer engine.Close()
	topo := &Topology{Router: SGLangRouter{Base: router.URL, Client: http.DefaultClient},
		Engine:    Engine{Kind: EngineVLLM, Base: engine.URL, HealthPath: "/health", Client: http.DefaultClient},
		Worker:    Worker{URL: "http://10.244.0.9:8080", Type: WorkerDecode},
		Heartbeat: 20 * time.Millisecond, Log: quiet(), Metrics: NewMetrics()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go topo.Run(ctx)
	require.Eventually(t, topo.Registered, 2*time.Second, 5*time.Millisecond)
	healthy.Store(false)
	require.Eventually(t, func() bool { return !topo.Registered() }, 2*time.Second, 5*time.Millisecond)
	assert.NotContains(t, workers(t, router.URL), "10.244.0.9", "an unhealthy engine is out of the router")
	healthy.Store(true)
	require.Eventually(t, topo.Registered, 2*time.Second, 5*time.Millisecond)
	assert.Contains(t, workers(t, router.URL), `"worker_type":"decode"`)
}

func TestSGLangRouterErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		_, _ = w.Write([]byte("boom"))
	}))
	defer srv.Close()
	r := SGLangRouter{Base: srv.URL, Client: http.DefaultClient}
	w := Worker{URL: "http://1.2.3.4:5", Type: WorkerRegular}
	assert.ErrorContains(t, r.Register(context.Background(), w), "router POST /workers: 500 boom")
	assert.ErrorContains(t, r.Unregister(context.Background(), w), "500 boom")
	_, err := r.Registered(context.Background(), w)
	assert.ErrorContains(t, err, "router GET /workers: 500 boom")
	_, err = SGLangRouter{Base: "http://127.0.0.1:1", Client: http.DefaultClient}.Registered(context.Background(), w)
	assert.Error(t, err)
}

func TestWaitEngineBacksOffAndGivesUp(t *testing.T) {
	var calls atomic.Int32
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(503)
		}
	}))
	defer engine.Close()
	e := Engine{Kind: EngineSGLang, Base: engine.URL, HealthPath: "/health", Client: http.DefaultClient}
	require.NoError(t, WaitEngine(context.Background(), e, 5*time.Second, quiet()))
	assert.Equal(t, int32(3), calls.Load())

	e.Base = "http://127.0.0.1:1"
	err := WaitEngine(context.Background(), e, 300*time.Millisecond, quiet())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "was not healthy within 300ms")
}
