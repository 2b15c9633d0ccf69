package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffDelay(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		n    int
		want time.Duration
	}{
		{"defaults: first death waits 1s", Backoff{}, 1, time.Second},
		{"defaults: doubles", Backoff{}, 3, 4 * time.Second},
		{"defaults: capped at 30s", Backoff{}, 6, 30 * time.Second},
		{"defaults: stays capped", Backoff{}, 100, 30 * time.Second},
		{"n below 1 is the first", Backoff{}, 0, time.Second},
		{"custom", Backoff{Initial: 50 * time.Millisecond, Max: 300 * time.Millisecond}, 3, 200 * time.Millisecond},
		{"custom cap", Backoff{Initial: 50 * time.Millisecond, Max: 300 * time.Millisecond}, 4, 300 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.b.Delay(tc.n))
		})
	}
}

func TestBackoffStreak(t *testing.T) {
	tests := []struct {
		name   string
		before int
		uptime time.Duration
		want   int
	}{
		{"first death", 0, time.Second, 1},
		{"quick deaths add up", 3, 2 * time.Second, 4},
		{"a minute of uptime starts again", 5, time.Minute, 1},
		{"just under a minute does not", 5, time.Minute - time.Millisecond, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Backoff{}.Streak(tc.before, tc.uptime))
		})
	}
}

// lockedBuffer is a progress writer the watch loop and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fast is a supervised shell process with a short backoff; each start
// writes "started <pid>" to the log and then sleeps.
func fast(t *testing.T, script string) (SupervisedSpec, *lockedBuffer) {
	t.Helper()
	out := &lockedBuffer{}
	return SupervisedSpec{
		Spec:         sh(t, "berth-test", script),
		Ready:        func(context.Context) error { return nil },
		ReadyTimeout: 5 * time.Second,
		Backoff:      Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond, Reset: time.Hour},
		Grace:        time.Second,
		Log:          out,
	}, out
}

func TestSupervisedIsRestartedWithBackoffAfterKill(t *testing.T) {
	spec, out := fast(t, `echo "started $$"; exec sleep 60`)
	// Ready once this start has written its line: a kill before that
	// would lose a line of the log checked below.
	var sup atomic.Pointer[Supervised]
	spec.Ready = func(context.Context) error {
		want := 1
		if s := sup.Load(); s != nil {
			want += s.Restarts()
		}
		if log, _ := os.ReadFile(spec.LogPath); strings.Count(string(log), "started ") < want {
			return errors.New("not started yet")
		}
		return nil
	}
	s, err := Supervise(context.Background(), spec)
	require.NoError(t, err)
	sup.Store(s)
	t.Cleanup(s.Stop)
	first := s.Process().PID()

	for i := 1; i <= 4; i++ {
		require.NoError(t, s.Kill())
		require.Eventually(t, func() bool { return s.Restarts() == i && s.Ready() }, 5*time.Second, 10*time.Millisecond, "restart %d", i)
	}
	assert.NotEqual(t, first, s.Process().PID(), "a new process runs")
	deaths := s.Deaths()
	require.Len(t, deaths, 4)
	var delays []time.Duration
	for i, d := range deaths {
		assert.Equal(t, "berth-test", d.Name)
		assert.EqualError(t, d.Err, "signal: killed")
		assert.Equal(t, i+1, d.Restart)
		assert.NotZero(t, d.PID)
		assert.Equal(t, spec.LogPath, d.LogPath)
		assert.False(t, d.At.IsZero())
		delays = append(delays, d.Delay)
	}
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}, delays)
	assert.Equal(t, first, deaths[0].PID)

	log, err := os.ReadFile(spec.LogPath)
	require.NoError(t, err)
	assert.Equal(t, 5, strings.Count(string(log), "started "), "one log file, appended by every start:\n%s", log)
	progress := out.String()
	assert.Contains(t, progress, "berth: berth-test (pid ")
	assert.Contains(t, progress, "signal: killed; restart 1 in 50ms; log "+spec.LogPath)
	assert.Contains(t, progress, "berth: berth-test restarted (restart 4, pid ")
	assert.Contains(t, progress, "berth: berth-test ready again")
}

func TestSupervisedProcessThatExitsOnItsOwnIsRestarted(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran-once")
	// The first run fails like a bad start; the second one serves.
	spec, out := fast(t, `if [ -e `+marker+` ]; then exec sleep 60; fi; touch `+marker+`; echo "E: cannot load config" >&2; exit 3`)
	spec.Ready = nil
	s, err := Supervise(context.Background(), spec)
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	require.Eventually(t, func() bool { return s.Restarts() == 1 && s.Ready() }, 5*time.Second, 10*time.Millisecond)
	deaths := s.Deaths()
	require.Len(t, deaths, 1)
	assert.EqualError(t, deaths[0].Err, "exit status 3")
	assert.Contains(t, out.String(), "E: cannot load config", "the report quotes the log")
}

func TestStopIsNotADeath(t *testing.T) {
	spec, out := fast(t, `echo "started $$"; exec sleep 60`)
	s, err := Supervise(context.Background(), spec)
	require.NoError(t, err)
	p := s.Process()
	s.Stop()
	exited, _ := p.Exited()
	assert.True(t, exited)
	time.Sleep(300 * time.Millisecond) // longer than any backoff of the spec
	assert.Empty(t, s.Deaths())
	assert.Zero(t, s.Restarts())
	assert.Same(t, p, s.Process(), "nothing was started again")
	assert.NotContains(t, out.String(), "died")
	err = s.Kill()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "berth-test: it was stopped")
	s.Stop() // twice is fine
}

// Stop during the backoff wait ends the supervision without a restart.
func TestStopDuringBackoff(t *testing.T) {
	spec, _ := fast(t, `exec sleep 60`)
	spec.Backoff = Backoff{Initial: time.Hour}
	s, err := Supervise(context.Background(), spec)
	require.NoError(t, err)
	require.NoError(t, s.Kill())
	require.Eventually(t, func() bool { return len(s.Deaths()) == 1 }, 5*time.Second, 10*time.Millisecond)
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waited for the backoff")
	}
	assert.Zero(t, s.Restarts())
}

// A restart that cannot start the binary is a death too, and the
// supervisor keeps trying: once the binary is back, the process runs.
func TestRestartOfAMissingBinaryIsRetried(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "berth-fake")
	script := []byte("#!/bin/sh\necho \"started $$\"\nexec sleep 60\n")
	require.NoError(t, os.WriteFile(bin, script, 0o755))
	spec, _ := fast(t, "")
	spec.Bin, spec.Args = bin, nil
	s, err := Supervise(context.Background(), spec)
	require.NoError(t, err)
	t.Cleanup(s.Stop)

	require.NoError(t, os.Remove(bin))
	require.NoError(t, s.Kill())
	require.Eventually(t, func() bool { return len(s.Deaths()) >= 2 }, 5*time.Second, 10*time.Millisecond)
	failed := s.Deaths()[1]
	assert.Zero(t, failed.PID)
	assert.Contains(t, failed.Err.Error(), "start berth-test ("+bin+")")
	assert.Contains(t, failed.String(), "berth-test could not be started")

	require.NoError(t, os.WriteFile(bin, script, 0o755))
	require.Eventually(t, s.Ready, 5*time.Second, 10*time.Millisecond)
	exited, _ := s.Process().Exited()
	assert.False(t, exited)
}

func TestSuperviseFailsWhenNeverReady(t *testing.T) {
	spec, _ := fast(t, `echo "listening on :0 failed"; exec sleep 60`)
	spec.Ready = func(context.Context) error { return assert.AnError }
	spec.ReadyTimeout = 300 * time.Millisecond
	_, err := Supervise(context.Background(), spec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "berth-test not ready after 300ms")
	assert.Contains(t, err.Error(), "listening on :0 failed")
}
