package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSIGTERM starts the program as SGLang on loopback, waits for /health,
// sends SIGTERM and expects exit 0 within a few seconds.
func TestSIGTERM(t *testing.T) {
	model := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(model, "config.json"), []byte(`{"architectures":["LlamaForCausalLM"]}`), 0o644))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	self, err := os.Executable()
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "python3")
	require.NoError(t, os.Symlink(self, link))
	cmd := exec.Command(link, "-m", "sglang.launch_server", "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--model-path", model)
	cmd.Env = append(os.Environ(), asMain+"=1")
	var errb limitedBuffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()

	require.Eventually(t, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("no exit 10s after SIGTERM; stderr:\n%s", errb.String())
	}
	assert.Contains(t, errb.String(), "msg=stopped")
}
