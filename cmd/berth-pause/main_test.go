package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunExitsOnTerm(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	done := make(chan int)
	go func() { done <- run(sigs) }()
	sigs <- syscall.SIGCHLD // reaps, keeps running
	select {
	case <-done:
		t.Fatal("SIGCHLD stopped the pause process")
	case <-time.After(100 * time.Millisecond):
	}
	sigs <- syscall.SIGTERM
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not stop the pause process")
	}
}

// The built program stops on SIGTERM with exit code 0.
func TestProcessStopsOnSIGTERM(t *testing.T) {
	bin := t.TempDir() + "/berth-pause"
	require.NoError(t, exec.Command("go", "build", "-o", bin, ".").Run())
	cmd := exec.Command(bin)
	require.NoError(t, cmd.Start())
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
}
