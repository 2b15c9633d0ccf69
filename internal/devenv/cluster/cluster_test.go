package cluster

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
	"k8s.io/client-go/tools/clientcmd"
)

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
			assert.Equal(t, tc.want, tailLines([]byte(tc.in), tc.n))
		})
	}
}

func TestFreePortsAreDistinctLoopbackPorts(t *testing.T) {
	ports, err := FreePorts(8)
	require.NoError(t, err)
	require.Len(t, ports, 8)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.Greater(t, p, 0)
		assert.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
}

func TestWriteKubeconfigIsUsable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	require.NoError(t, WriteKubeconfig(path, "https://127.0.0.1:6443", ca, "s3cret"))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, "s3cret", cfg.BearerToken)
	assert.Equal(t, ca, cfg.CAData)
}

// Every component listens on loopback only and the apiserver carries the
// flags measured to work with Debian's etcd 3.4.
func TestArgsBindLoopbackOnly(t *testing.T) {
	p := &pki{CAFile: "ca", CertFile: "crt", KeyFile: "key", SAKeyFile: "sa", TokensFile: "tok"}
	all := map[string][]string{
		"etcd":               etcdArgs("/d", 1, 2),
		"kube-apiserver":     apiserverArgs(p, "http://127.0.0.1:1", 3, "/c"),
		"kube-scheduler":     schedulerArgs("k", 4, "/c"),
		"controller-manager": controllerManagerArgs("k", p, 5, "/c"),
		"kwok":               kwokArgs("k", []string{"a.yaml", "b.yaml"}, 6),
	}
	for name, args := range all {
		joined := strings.Join(args, " ")
		for _, wildcard := range []string{"=0.0.0.0", "//0.0.0.0", "[::]", "localhost"} {
			assert.NotContains(t, joined, wildcard, name)
		}
		for _, a := range args {
			if strings.HasPrefix(a, "--bind-address=") || strings.HasPrefix(a, "--listen-") || strings.HasPrefix(a, "--server-address=") {
				assert.Contains(t, a, "127.0.0.1", "%s: %s", name, a)
			}
		}
	}
	assert.Contains(t, all["etcd"], "--unsafe-no-fsync")
	assert.Contains(t, all["kube-apiserver"], "--watch-cache=false")
	assert.Contains(t, all["kube-apiserver"], "--service-account-signing-key-file=sa")
	assert.Contains(t, all["controller-manager"], "--service-account-private-key-file=sa")
	assert.Equal(t, 2, strings.Count(strings.Join(all["kwok"], " "), "--config="), "one --config per Stage file")
}

func TestMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("x"), 0o644))
	b := Binaries{Etcd: exe, APIServer: exe, ControllerManager: exe, Scheduler: plain, Kubectl: filepath.Join(dir, "nope"), Kwok: exe}
	assert.Equal(t, []string{
		"kube-scheduler (" + plain + ")",
		"kubectl (" + filepath.Join(dir, "nope") + ")",
	}, b.Missing())
	b.Scheduler, b.Kubectl = exe, exe
	assert.Empty(t, b.Missing())
}

func TestRepoRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/berthdev/berth\n\ngo 1.26.0\n"), 0o644))
	sub := filepath.Join(root, "hack", "kube-build")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	// A nested module of another name is skipped over.
	require.NoError(t, os.WriteFile(filepath.Join(sub, "go.mod"), []byte("module berth/hack/kube-build\n"), 0o644))
	got, err := RepoRoot(sub)
	require.NoError(t, err)
	assert.Equal(t, root, got)

	_, err = RepoRoot(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not inside the berth repository")
}

func TestWaitReadyNamesTheDeadProcessAndQuotesItsLog(t *testing.T) {
	p, err := startProcess("fake-apiserver", t.TempDir(), "/bin/sh", []string{"-c", "echo starting; echo 'E0101 bind: address already in use' >&2; exit 3"}, nil)
	require.NoError(t, err)
	err = p.WaitReady(context.Background(), 10*time.Second, func(context.Context) error { return assert.AnError })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fake-apiserver exited (exit status 3) before it became ready")
	assert.Contains(t, err.Error(), "address already in use")
	assert.Contains(t, err.Error(), p.LogPath)
}

func TestWaitReadyTimesOutWithTheLastCheck(t *testing.T) {
	p, err := startProcess("slow", t.TempDir(), "/bin/sh", []string{"-c", "echo waiting for etcd; sleep 30"}, nil)
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
	p, err := startProcess("ok", t.TempDir(), "/bin/sh", []string{"-c", "sleep 30"}, nil)
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
	p, err := startProcess("stubborn", dir, "/bin/sh", []string{"-c", "trap '' TERM; sleep 60 & echo $! > " + pidFile + "; wait"}, nil)
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

// A process that dies during Start fails it with the process's name and
// log, and leaves no run folder behind (this once panicked on the nil
// named result in the cleanup).
func TestStartFailureNamesTheProcessAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	fail := filepath.Join(dir, "fake-etcd")
	require.NoError(t, os.WriteFile(fail, []byte("#!/bin/sh\necho 'etcdmain: listen tcp 127.0.0.1:2379: bind: address already in use' >&2\nexit 1\n"), 0o755))
	b := Binaries{Etcd: fail, APIServer: fail, ControllerManager: fail, Scheduler: fail, Kubectl: fail, Kwok: fail}
	tmp := t.TempDir() // Start's run folder goes here, away from other runs
	t.Setenv("TMPDIR", tmp)

	c, err := Start(context.Background(), Options{Binaries: b, Timeout: 10 * time.Second})
	require.Error(t, err)
	assert.Nil(t, c)
	assert.Contains(t, err.Error(), "etcd exited (exit status 1) before it became ready")
	assert.Contains(t, err.Error(), "bind: address already in use")

	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "Start left its run folder behind")
}

func TestStartRefusesMissingBinaries(t *testing.T) {
	_, err := Start(context.Background(), Options{Binaries: Binaries{Etcd: "/nonexistent/etcd"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing binaries: etcd (/nonexistent/etcd)")
	assert.Contains(t, err.Error(), "run `make deps`")
}
