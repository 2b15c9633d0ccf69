package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
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

// reap collects exited children: a zombie left by a process of the pod is
// gone after it (what PID 1 must do).
func TestReapCollectsZombies(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 3")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(stat)
		// The state follows the command name in parentheses: "Z" is a zombie.
		return err == nil && strings.HasPrefix(string(data[strings.LastIndexByte(string(data), ')')+1:]), " Z")
	}, 5*time.Second, 10*time.Millisecond, "the child exits and stays a zombie until reaped")
	reap()
	_, err := os.Stat(stat)
	assert.True(t, os.IsNotExist(err), "reaped: /proc/%d is gone", pid)
	reap() // nothing left to reap: returns at once
}
