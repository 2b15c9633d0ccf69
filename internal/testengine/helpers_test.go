package testengine

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// modelDir is a model directory with a config.json naming arch.
func modelDir(t *testing.T, arch string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config.json"), `{"architectures":["`+arch+`"],"model_type":"llama","max_position_embeddings":4096}`)
	return dir
}

// adapterDir is a LoRA adapter directory with adapter_config.json.
func adapterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "adapter_config.json"), `{"r":8,"peft_type":"LORA"}`)
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// startEngine parses argv, loads the model and serves the engine on a
// loopback httptest server, ready unless opts say otherwise.
func startEngine(t *testing.T, opts EngineOptions, argv ...string) (*Engine, *httptest.Server) {
	t.Helper()
	cfg, err := Parse(argv)
	require.NoError(t, err)
	model, err := LoadModel(cfg.ModelPath)
	require.NoError(t, err)
	if opts.Pod == "" {
		opts.Pod = "pod-a"
	}
	e, err := NewEngine(cfg, model, opts)
	require.NoError(t, err)
	e.SetReady()
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return e, srv
}

type answer struct {
	status int
	header http.Header
	body   string
}

func call(t *testing.T, method, url, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

// newLoopback serves h on 127.0.0.1 for the test and returns its URL.
func newLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
