package testengine

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRouterRoundRobin(t *testing.T) {
	dir := modelDir(t, "LlamaForCausalLM")
	_, a := startEngine(t, EngineOptions{Pod: "pod-a"}, "vllm", "serve", dir, "--served-model-name", "m")
	_, b := startEngine(t, EngineOptions{Pod: "pod-b"}, "vllm", "serve", dir, "--served-model-name", "m")
	_, router := newTestRouter(t, "--worker-urls", a.URL, b.URL)
	pods := map[string]int{}
	for range 4 {
		r := call(t, "POST", router+"/v1/completions", `{"model":"m","prompt":"hi"}`)
		require.Equal(t, 200, r.status, r.body)
		pods[strings.Fields(strings.SplitAfter(r.body, "on pod ")[1])[0]]++
	}
	assert.Equal(t, map[string]int{"pod-a:": 2, "pod-b:": 2}, pods)

	models := call(t, "GET", router+"/v1/models", "")
	assert.Equal(t, 200, models.status)
	assert.Contains(t, models.body, `"owned_by":"berth-test-engine"`)

	stream := call(t, "POST", router+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stream":true}`)
	assert.Equal(t, "text/event-stream", stream.header.Get("Content-Type"))
	assert.True(t, strings.HasSuffix(strings.TrimSpace(stream.body), "data: [DONE]"))

	notFound := call(t, "POST", router+"/v1/completions", `{"model":"other","prompt":"hi"}`)
	assert.Equal(t, 404, notFound.status, "a worker's answer passes through")
	assert.Contains(t, notFound.body, "does not exist")
}

func TestRouterWorkerAPI(t *testing.T) {
	_, router := newTestRouter(t)
	steps := []struct {
		method, path string
		status       int
		contains     string
	}{
		{"GET", "/list_workers", 200, `"urls":[]`},
		{"POST", "/add_worker?url=" + url.QueryEscape("http://10.0.0.1:8080"), 200, "added regular worker http://10.0.0.1:8080"},
		{"POST", "/add_worker?url=" + url.QueryEscape("http://10.0.0.2:8080/"), 200, "added"},
		{"GET", "/list_workers", 200, `"urls":["http://10.0.0.1:8080","http://10.0.0.2:8080"]`},
		{"GET", "/list_workers", 200, `{"url":"http://10.0.0.1:8080","role":"regular","source":"api"}`},
		{"POST", "/add_worker?url=10.0.0.3", 400, "want http://host:port"},
		{"POST", "/add_worker?url=" + url.QueryEscape("http://10.0.0.3:1/v1"), 400, "without a path"},
		{"POST", "/add_worker?url=" + url.QueryEscape("http://10.0.0.3:1") + "&role=prefill", 400, "needs a router started with --pd-disaggregation"},
		{"POST", "/remove_worker?url=" + url.QueryEscape("http://10.0.0.1:8080"), 200, "removed worker http://10.0.0.1:8080"},
		{"POST", "/remove_worker?url=" + url.QueryEscape("http://10.0.0.1:8080"), 404, "no worker http://10.0.0.1:8080"},
		{"GET", "/list_workers", 200, `"urls":["http://10.0.0.2:8080"]`},
		{"GET", "/health", 200, `"status":"healthy"`},
		{"GET", "/nope", 404, "a stand-in for the SGLang router"},
	}
	for _, s := range steps {
		a := call(t, s.method, router+s.path, "")
		assert.Equal(t, s.status, a.status, "%s %s: %s", s.method, s.path, a.body)
		assert.Contains(t, a.body, s.contains, "%s %s", s.method, s.path)
		assert.Equal(t, "stand-in", a.header.Get(HeaderStandIn))
	}
}

func TestRouterPDWorkerAPI(t *testing.T) {
	_, router := newTestRouter(t, "--pd-disaggregation")
	steps := []struct {
		path     string
		status   int
		contains string
	}{
		{"/add_worker?url=http%3A%2F%2Fp%3A1", 400, "needs role=prefill or role=decode"},
		{"/add_worker?url=http%3A%2F%2Fp%3A1&role=prefill&bootstrap_port=9001", 200, "added prefill worker"},
		{"/add_worker?url=http%3A%2F%2Fq%3A1&role=prefill", 200, "added"},
		{"/add_worker?url=http%3A%2F%2Fr%3A1&role=prefill&bootstrap_port=0", 400, "bootstrap_port"},
		{"/add_worker?url=http%3A%2F%2Fd%3A1&role=decode", 200, "added decode worker"},
	}
	for _, s := range steps {
		a := call(t, "POST", router+s.path, "")
		assert.Equal(t, s.status, a.status, "%s: %s", s.path, a.body)
		assert.Contains(t, a.body, s.contains)
	}
	list := call(t, "GET", router+"/list_workers", "").body
	assert.Contains(t, list, `{"url":"http://p:1","role":"prefill","bootstrap_port":9001,"source":"api"}`)
	assert.Contains(t, list, `{"url":"http://q:1","role":"prefill","bootstrap_port":8998,"source":"api"}`)
}

func TestRouterNoWorkers(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		contains []string
	}{
		{name: "regular", args: []string{"--service-discovery", "--service-discovery-namespace", "team", "--service-discovery-port", "8080",
			"--selector", "app=x", "component=engine"},
			contains: []string{"no regular worker", "--worker-urls", "namespace team with labels app=x,component=engine (port 8080)"}},
		{name: "PD", args: []string{"--pd-disaggregation", "--service-discovery", "--service-discovery-namespace", "team", "--service-discovery-port", "8080",
			"--prefill-selector", "ome.io/component=engine", "--decode-selector", "ome.io/component=decoder"},
			contains: []string{"no prefill worker", "--prefill", "labels ome.io/component=engine"}},
		{name: "static", args: nil, contains: []string{"no regular worker", "POST /add_worker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, router := newTestRouter(t, tt.args...)
			a := call(t, "POST", router+"/v1/completions", `{"prompt":"x"}`)
			assert.Equal(t, 503, a.status)
			for _, c := range tt.contains {
				assert.Contains(t, a.body, c)
			}
			assert.Equal(t, 503, call(t, "GET", router+"/v1/models", "").status)
		})
	}
}

func TestRouterWorkerDown(t *testing.T) {
	_, router := newTestRouter(t, "--worker-urls", "http://127.0.0.1:1")
	a := call(t, "POST", router+"/v1/completions", `{"prompt":"x"}`)
	assert.Equal(t, 502, a.status)
	assert.Contains(t, a.body, "regular worker http://127.0.0.1:1")
}

func TestNewRouterRejectsBadURLs(t *testing.T) {
	cfg, err := Parse([]string{"python3", "-m", "sglang_router.launch_router", "--worker-urls", "localhost:8000"})
	require.NoError(t, err)
	_, err = NewRouter(cfg, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--worker-urls: worker URL "localhost:8000": want http://host:port`)
}
