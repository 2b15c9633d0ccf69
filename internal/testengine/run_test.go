package testengine

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func envOf(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestRunExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-model")
	tests := []struct {
		name   string
		argv   []string
		env    map[string]string
		code   int
		stdout string
		stderr string
	}{
		{name: "help", argv: []string{"berth-test-engine", "-h"}, code: 0, stdout: "It is NOT an inference engine"},
		{name: "bad command line", argv: []string{"python3", "-m", "sglang.launch_server", "--model-path", "/m", "extra"}, code: 2,
			stderr: `berth-test-engine: unexpected argument "extra"`},
		{name: "no config.json", argv: []string{"vllm", "serve", missing, "--host", "127.0.0.1", "--port", "1"}, code: 1,
			stderr: "cannot read " + filepath.Join(missing, "config.json")},
		{name: "unexpanded MODEL_PATH", argv: []string{"python3", "-m", "sglang.launch_server", "--model-path", "$(MODEL_PATH)"}, code: 1,
			stderr: "the container has no env MODEL_PATH"},
		{name: "bad delay", argv: []string{"vllm", "serve", "/m"}, env: map[string]string{EnvDelay: "soon"}, code: 1,
			stderr: "BERTH_TEST_ENGINE_DELAY=\\\"soon\\\" is not a duration"},
		{name: "discovery without a cluster", argv: []string{"python3", "-m", "sglang_router.launch_router", "--service-discovery",
			"--service-discovery-namespace", "ns", "--service-discovery-port", "1", "--selector", "a=b", "--kubeconfig", missing}, code: 1,
			stderr: "--kubeconfig " + missing},
		{name: "ray start returns", argv: []string{"ray", "start", "--head", "--port=6379"}, code: 0, stderr: "NOT Ray"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), tt.argv, envOf(tt.env), &out, &errb)
			assert.Equal(t, tt.code, code, errb.String())
			assert.Contains(t, out.String(), tt.stdout)
			assert.Contains(t, errb.String(), tt.stderr)
		})
	}
}

func TestRunPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	var errb bytes.Buffer
	code := Run(context.Background(), []string{"vllm", "serve", modelDir(t, "X"), "--host", "127.0.0.1", "--port",
		strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}, envOf(nil), &bytes.Buffer{}, &errb)
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "listen on 127.0.0.1:")
}

// TestRunServesAndDrains starts the program, sees /health go from 503 to
// 200, and stops it (as SIGTERM does) with a request in flight, which
// completes; Run then returns 0.
func TestRunServesAndDrains(t *testing.T) {
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"python3", "-m", "sglang.launch_server", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--model-path", modelDir(t, "LlamaForCausalLM"), "--tp-size", "8"},
			envOf(map[string]string{EnvLoadDelay: "400ms", EnvDelay: "600ms", "POD_NAME": "engine-0"}), &bytes.Buffer{}, logs)
	}()
	healthy := func() int {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Eventually(t, func() bool { return healthy() == 503 }, 5*time.Second, 20*time.Millisecond, "503 while loading")
	require.Eventually(t, func() bool { return healthy() == 200 }, 5*time.Second, 20*time.Millisecond, logs.String())

	var wg sync.WaitGroup
	var inflight answer
	wg.Add(1)
	go func() {
		defer wg.Done()
		inflight = call(t, "POST", base+"/v1/completions", `{"prompt":"drain me"}`)
	}()
	require.Eventually(t, func() bool {
		return bytes.Contains([]byte(call(t, "GET", base+"/metrics", "").body), []byte("berth_test_engine_running_requests 1"))
	}, 5*time.Second, 20*time.Millisecond)
	cancel()
	wg.Wait()
	assert.Equal(t, 200, inflight.status)
	assert.Contains(t, inflight.body, "on pod engine-0: drain me")
	select {
	case code := <-done:
		assert.Equal(t, 0, code, logs.String())
	case <-time.After(drainTimeout + 5*time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	for _, want := range []string{"NOT an inference engine", "ignored flag --tp-size 8: the test engine has no GPU",
		"architecture=LlamaForCausalLM", "ready: /health answers 200", `msg="request answered" endpoint=/v1/completions`, "draining", "msg=stopped"} {
		assert.Contains(t, logs.String(), want)
	}
}

func TestQueueDepth(t *testing.T) {
	_, srv := startEngine(t, EngineOptions{Delay: 400 * time.Millisecond}, "python3", "-m", "sglang.launch_server",
		"--model-path", modelDir(t, "X"), "--max-running-requests", "1")
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(t, "POST", srv.URL+"/v1/completions", `{"prompt":"x"}`)
		}()
	}
	assert.Eventually(t, func() bool {
		m := call(t, "GET", srv.URL+"/metrics", "").body
		return bytes.Contains([]byte(m), []byte("sglang:num_queue_reqs 1")) && bytes.Contains([]byte(m), []byte("sglang:num_running_reqs 1"))
	}, 5*time.Second, 10*time.Millisecond)
	wg.Wait()
}

func TestRayBlockWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"ray", "start", "--address=10.0.0.1:6379", "--block"}, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{})
	}()
	select {
	case <-done:
		t.Fatal("ray start --block returned before its context ended")
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	assert.Equal(t, 0, <-done)
}
