package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sh(t *testing.T, name, script string) Spec {
	t.Helper()
	return Spec{Name: name, Bin: "/bin/sh", Args: []string{"-c", script}, LogPath: filepath.Join(t.TempDir(), name+".log")}
}

func TestTailLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"fewer lines than asked", "a\nb\n", 5, "a\nb"},
		{"keeps the last n", "1\n2\n3\n4\n", 2, "3\n4"},
		{"skips blank lines", "a\n\n  \nb\n\n", 2, "a\nb"},
		{"empty", "", 3, ""},
		{"no trailing newline", "x\ny", 1, "y"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, TailLines([]byte(tc.in), tc.n))
		})
	}
}

func TestWaitReadyNamesTheDeadProcessAndQuotesItsLog(t *testing.T) {
	p, err := Start(sh(t, "fake-apiserver", "echo starting; echo 'E0101 bind: address already in use' >&2; exit 3"))
	require.NoError(t, err)
	err = p.WaitReady(context.Background(), 10*time.Second, func(context.Context) error { return assert.AnError })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fake-apiserver exited (exit status 3) before it became ready")
	assert.Contains(t, err.Error(), "address already in use")
	assert.Contains(t, err.Error(), p.LogPath)
}

func TestWaitReadyTimesOutWithTheLastCheck(t *testing.T) {
	p, err := Start(sh(t, "slow", "echo waiting for etcd; sleep 30"))
	require.NoError(t, err)
	defer p.Stop(time.Second)
	err = p.WaitReady(context.Background(), 300*time.Millisecond, func(context.Context) error {
		return assert.AnError
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "slow not ready after 300ms")
	assert.Contains(t, err.Error(), assert.AnError.Error())
	assert.Contains(t, err.Error(), "waiting for etcd")
}

func TestWaitReadySucceeds(t *testing.T) {
	p, err := Start(sh(t, "ok", "sleep 30"))
	require.NoError(t, err)
	defer p.Stop(time.Second)
	calls := 0
	require.NoError(t, p.WaitReady(context.Background(), 5*time.Second, func(context.Context) error {
		if calls++; calls < 3 {
			return assert.AnError
		}
		return nil
	}))
	assert.Equal(t, 3, calls)
}

// Stop ends the whole process group: a child the process forked does not
// survive it.
func TestStopKillsTheProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The shell ignores TERM, so Stop must escalate to KILL; its child
	// (sleep) must die with it.
	p, err := Start(sh(t, "stubborn", "trap '' TERM; sleep 60 & echo $! > "+pidFile+"; wait"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := os.Stat(pidFile); return err == nil }, 5*time.Second, 20*time.Millisecond)
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	var child int
	_, err = fmt.Sscan(strings.TrimSpace(string(data)), &child)
	require.NoError(t, err)

	p.Stop(200 * time.Millisecond)
	exited, _ := p.Exited()
	assert.True(t, exited)
	assert.Eventually(t, func() bool { return syscall.Kill(child, 0) != nil }, 5*time.Second, 20*time.Millisecond,
		"child %d of the stopped process is still alive", child)
}

func TestKillIsSIGKILLAndRefusesAnEndedProcess(t *testing.T) {
	p, err := Start(sh(t, "victim", "trap '' TERM; sleep 60"))
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	<-p.Done()
	_, how := p.Exited()
	assert.EqualError(t, how, "signal: killed")
	err = p.Kill()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kill victim")
	assert.Contains(t, err.Error(), "already exited")
}

func TestStartNamesTheMissingBinary(t *testing.T) {
	spec := sh(t, "berth-webhook", "")
	spec.Bin = "/nonexistent/berth-webhook"
	_, err := Start(spec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start berth-webhook (/nonexistent/berth-webhook)")
}
