package sidecar

import (
	"bytes"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a log the test reads while Main writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// The program's whole life: it waits for the engine, registers, is ready
// only while registered, serves its metrics, and unregisters on SIGTERM
// before exiting 0.
func TestMainRegistersAndUnregistersOnSIGTERM(t *testing.T) {
	_, router := startRouter(t)
	_, engine := startEngine(t, EngineSGLang)
	listen := freeAddr(t)
	env := envOf(map[string]string{"TOPO_TYPE": "sglang", "SGL_ROUTER_URL": router.URL, "POD_IP": "10.244.0.5",
		"ENGINE_URL": engine.URL, "INSTANCE_INFO": `{"data":{"port":8080,"worker_type":"decode"}}`, "HEARTBEAT_INTERVAL": "100ms"})
	sigs := make(chan os.Signal, 1)
	var log syncBuffer
	code := make(chan int, 1)
	go func() { code <- Main([]string{"--listen", listen}, env, &log, sigs) }()

	require.Eventually(t, func() bool {
		s, _ := getMaybe("http://" + listen + "/readyz")
		return s == 200
	}, 5*time.Second, 20*time.Millisecond, log.String())
	assert.Contains(t, workers(t, router.URL), `"url":"http://10.244.0.5:8080","worker_type":"decode"`)
	s, body := get(t, "http://"+listen+"/metrics")
	assert.Equal(t, 200, s)
	assert.Contains(t, body, "berth_engine_sidecar_registered 1")
	s, _ = get(t, "http://"+listen+"/healthz")
	assert.Equal(t, 200, s)
	s, body = get(t, "http://"+listen+"/adapters")
	assert.Equal(t, 404, s)
	assert.Contains(t, body, "LORA_ADAPTERS_FILE")

	sigs <- syscall.SIGTERM
	select {
	case c := <-code:
		assert.Equal(t, 0, c, log.String())
	case <-time.After(5 * time.Second):
		t.Fatalf("Main did not return after SIGTERM:\n%s", log.String())
	}
	assert.NotContains(t, workers(t, router.URL), "10.244.0.5")
	assert.Contains(t, log.String(), "worker unregistered")
}

func TestMainExitCodes(t *testing.T) {
	var log syncBuffer
	assert.Equal(t, 2, Main([]string{"--engine", "tgi"}, envOf(nil), &log, nil))
	assert.Contains(t, log.String(), "bad configuration")
	assert.Equal(t, 0, Main([]string{"-h"}, envOf(nil), &log, nil))

	log = syncBuffer{}
	env := envOf(map[string]string{"TOPO_TYPE": "none", "ENGINE_URL": "http://127.0.0.1:1", "INSTANCE_INFO": `{"port":1}`,
		"ENGINE_READY_TIMEOUT": "300ms"})
	assert.Equal(t, 1, Main([]string{"--listen", freeAddr(t)}, env, &log, make(chan os.Signal)))
	assert.True(t, strings.Contains(log.String(), "was not healthy within 300ms"), log.String())
}

func getMaybe(url string) (int, error) {
	resp, err := httpGet(url)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
