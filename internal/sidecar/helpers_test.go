package sidecar

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/internal/testengine"
)

// swappable serves through a handler that a test replaces: a restarted
// router or engine at the same address.
type swappable struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *swappable) set(h http.Handler) { s.mu.Lock(); s.h = h; s.mu.Unlock() }
func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// newRouter is berth-test-engine's stand-in for the SGLang router, started
// with argv after the launcher.
func newRouter(t *testing.T, args ...string) http.Handler {
	t.Helper()
	cfg, err := testengine.Parse(append([]string{"python3", "-m", "sglang_router.launch_router"}, args...))
	require.NoError(t, err)
	r, err := testengine.NewRouter(cfg, nil)
	require.NoError(t, err)
	return r.Handler()
}

// startRouter serves a PD router that a test can restart (swap).
func startRouter(t *testing.T) (*swappable, *httptest.Server) {
	t.Helper()
	sw := &swappable{h: newRouter(t, "--pd-disaggregation")}
	srv := httptest.NewServer(sw)
	t.Cleanup(srv.Close)
	return sw, srv
}

// newEngine is berth-test-engine's stand-in for kind (sglang or vllm) with
// LoRA on.
func newEngine(t *testing.T, kind string) http.Handler {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"architectures":["LlamaForCausalLM"]}`), 0o644))
	argv := []string{"python3", "-m", "sglang.launch_server", "--model-path", dir, "--served-model-name", "base", "--enable-lora"}
	if kind == EngineVLLM {
		argv = []string{"vllm", "serve", dir, "--served-model-name", "base", "--enable-lora"}
	}
	cfg, err := testengine.Parse(argv)
	require.NoError(t, err)
	model, err := testengine.LoadModel(dir)
	require.NoError(t, err)
	e, err := testengine.NewEngine(cfg, model, testengine.EngineOptions{Pod: "pod-a", RuntimeLoRA: true})
	require.NoError(t, err)
	e.SetReady()
	return e.Handler()
}

func startEngine(t *testing.T, kind string) (*swappable, *httptest.Server) {
	t.Helper()
	sw := &swappable{h: newEngine(t, kind)}
	srv := httptest.NewServer(sw)
	t.Cleanup(srv.Close)
	return sw, srv
}

// adapterDir is a LoRA adapter directory the stand-in accepts.
func adapterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"r":8,"peft_type":"LORA"}`), 0o644))
	return dir
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

var httpGet = http.Get
