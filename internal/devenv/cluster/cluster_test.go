package cluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

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
		"kube-apiserver":     apiserverArgs(p, "http://127.0.0.1:1", 3, "/c", "", false),
		"kube-scheduler":     schedulerArgs("k", 4, "/c"),
		"controller-manager": controllerManagerArgs("k", p, 5, "/c"),
		"kwok":               kwokArgs("k", []string{"a.yaml", "b.yaml"}, 6),
		"scheduler-plugins":  gangSchedulerArgs("cfg", "k", 7, "/c"),
		"sp-controller":      gangControllerArgs("k", 8),
	}
	for name, args := range all {
		joined := strings.Join(args, " ")
		for _, wildcard := range []string{"=0.0.0.0", "//0.0.0.0", "[::]", "localhost"} {
			assert.NotContains(t, joined, wildcard, name)
		}
		for _, a := range args {
			if strings.HasPrefix(a, "--bind-address=") || strings.HasPrefix(a, "--listen-") || strings.HasPrefix(a, "--server-address=") || strings.HasPrefix(a, "--probeAddr=") {
				assert.Contains(t, a, "127.0.0.1", "%s: %s", name, a)
			}
		}
	}
	assert.Contains(t, all["etcd"], "--unsafe-no-fsync")
	assert.Contains(t, all["kube-apiserver"], "--watch-cache=false")
	assert.Contains(t, all["kube-apiserver"], "--profiling=false")
	assert.Contains(t, apiserverArgs(p, "http://127.0.0.1:1", 3, "/c", "", true), "--profiling=true", "Options.Profiling")
	assert.Contains(t, all["kube-apiserver"], "--service-account-signing-key-file=sa")
	assert.Contains(t, all["controller-manager"], "--service-account-private-key-file=sa")
	assert.Equal(t, 2, strings.Count(strings.Join(all["kwok"], " "), "--config="), "one --config per Stage file")
	assert.Contains(t, all["sp-controller"], "--metricsAddr=0", "no metrics server (its default is :8080 on every address)")
	assert.Contains(t, all["sp-controller"], "--enableLeaderElection=false")
}

// With a real node the apiserver also listens where pods reach it, and
// advertises the node's gateway for the "kubernetes" Service; pods get
// service-account tokens. Without one, no pod can mount a token.
func TestAPIServerArgsWithRealNode(t *testing.T) {
	p := &pki{CAFile: "ca", CertFile: "crt", KeyFile: "key", SAKeyFile: "sa", TokensFile: "tok", KubeletClientCert: "kc", KubeletClientKey: "kk"}
	without := apiserverArgs(p, "http://127.0.0.1:1", 3, "/c", "", false)
	assert.Contains(t, without, "--disable-admission-plugins=ServiceAccount")
	assert.Contains(t, without, "--endpoint-reconciler-type=none")
	with := apiserverArgs(p, "http://127.0.0.1:1", 3, "/c", "10.244.0.1", false)
	assert.NotContains(t, with, "--disable-admission-plugins=ServiceAccount")
	assert.Contains(t, with, "--advertise-address=10.244.0.1")
	assert.Contains(t, with, "--bind-address=0.0.0.0")
	assert.Contains(t, with, "--endpoint-reconciler-type=lease")
	assert.Contains(t, with, "--kubelet-client-certificate=kc")
}

func TestMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("x"), 0o644))
	b := Binaries{Etcd: exe, APIServer: exe, ControllerManager: exe, Scheduler: plain, Kubectl: filepath.Join(dir, "nope"), Kwok: exe,
		SchedulerPlugins: exe}
	assert.Equal(t, []string{
		"kube-scheduler (" + plain + ")",
		"kubectl (" + filepath.Join(dir, "nope") + ")",
		"scheduler-plugins-controller ()",
	}, b.Missing())
	b.Scheduler, b.Kubectl, b.SchedulerPluginsController = exe, exe, exe
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

// A process that dies during Start fails it with the process's name and
// log, and leaves no run folder behind (this once panicked on the nil
// named result in the cleanup).
func TestStartFailureNamesTheProcessAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	fail := filepath.Join(dir, "fake-etcd")
	require.NoError(t, os.WriteFile(fail, []byte("#!/bin/sh\necho 'etcdmain: listen tcp 127.0.0.1:2379: bind: address already in use' >&2\nexit 1\n"), 0o755))
	b := Binaries{Etcd: fail, APIServer: fail, ControllerManager: fail, Scheduler: fail, Kubectl: fail, Kwok: fail,
		SchedulerPlugins: fail, SchedulerPluginsController: fail}
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

func TestSearchDirs(t *testing.T) {
	tests := []struct {
		name                 string
		envDir, root, exeDir string
		want                 []string
	}{
		{"checkout, no env", "", "/src/berth", "/src/berth/bin", []string{"/src/berth/bin"}},
		{"env first", "/opt/k8s", "/src/berth", "/tmp/go-build1/exe", []string{"/opt/k8s", "/src/berth/bin", "/tmp/go-build1/exe"}},
		{"installed, outside a checkout", "", "", "/usr/local/bin", []string{"/usr/local/bin"}},
		{"nothing known", "", "", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SearchDirs(tc.envDir, tc.root, tc.exeDir))
		})
	}
}

func TestLocate(t *testing.T) {
	noPath := func(string) (string, error) { return "", os.ErrNotExist }
	tests := []struct {
		name        string
		files       []string
		path        map[string]string
		wantAPI     string
		wantKwok    string
		wantSP      string
		wantSPCtrl  string
		wantMissing []string
	}{
		{
			name: "the make deps layout in the first folder wins",
			files: []string{"/a/k8s-v1.34.4/kube-apiserver", "/a/kube-apiserver", "/b/k8s-v1.34.4/kube-apiserver", "/a/kwok-v0.8.0/kwok",
				"/b/scheduler-plugins-v0.32.7/scheduler-plugins-scheduler", "/a/scheduler-plugins-controller"},
			path:        map[string]string{"etcd": "/usr/bin/etcd"},
			wantAPI:     "/a/k8s-v1.34.4/kube-apiserver",
			wantKwok:    "/a/kwok-v0.8.0/kwok",
			wantSP:      "/b/scheduler-plugins-v0.32.7/scheduler-plugins-scheduler",
			wantSPCtrl:  "/a/scheduler-plugins-controller",
			wantMissing: []string{"kube-controller-manager", "kube-scheduler", "kubectl"},
		},
		{
			name:       "a flat folder, then a later folder",
			files:      []string{"/a/kube-apiserver", "/b/kwok", "/a/scheduler-plugins-scheduler", "/b/scheduler-plugins-controller"},
			path:       map[string]string{"etcd": "/usr/bin/etcd", "kube-controller-manager": "/usr/bin/kube-controller-manager", "kube-scheduler": "/usr/bin/kube-scheduler", "kubectl": "/usr/bin/kubectl"},
			wantAPI:    "/a/kube-apiserver",
			wantKwok:   "/b/kwok",
			wantSP:     "/a/scheduler-plugins-scheduler",
			wantSPCtrl: "/b/scheduler-plugins-controller",
		},
		{
			name:        "PATH last",
			path:        map[string]string{"kube-apiserver": "/usr/local/bin/kube-apiserver"},
			wantAPI:     "/usr/local/bin/kube-apiserver",
			wantKwok:    "kwok",
			wantSP:      "scheduler-plugins-scheduler",
			wantSPCtrl:  "scheduler-plugins-controller",
			wantMissing: []string{"etcd", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "scheduler-plugins-scheduler", "scheduler-plugins-controller"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isExec := func(p string) bool { return slices.Contains(tc.files, p) }
			lookPath := noPath
			if tc.path != nil {
				lookPath = func(n string) (string, error) {
					if p, ok := tc.path[n]; ok {
						return p, nil
					}
					return "", os.ErrNotExist
				}
			}
			b, missing := Locate([]string{"/a", "/b"}, isExec, lookPath)
			assert.Equal(t, tc.wantAPI, b.APIServer)
			assert.Equal(t, tc.wantKwok, b.Kwok)
			assert.Equal(t, tc.wantSP, b.SchedulerPlugins)
			assert.Equal(t, tc.wantSPCtrl, b.SchedulerPluginsController)
			assert.Equal(t, tc.wantMissing, missing)
		})
	}
}

func TestFindBinariesSaysWhatToDo(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(KubeBinDirEnv, empty)
	t.Setenv("PATH", empty)
	_, err := FindBinaries("")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, scheduler-plugins-scheduler, scheduler-plugins-controller")
	assert.Contains(t, err.Error(), "scheduler-plugins v0.32.7")
	assert.Contains(t, err.Error(), "not found in "+empty)
	assert.Contains(t, err.Error(), "`make deps`")
	assert.Contains(t, err.Error(), KubeBinDirEnv)
}

func TestWriteStages(t *testing.T) {
	stages := fstest.MapFS{"b.yaml": {Data: []byte("kind: Stage\n")}, "a.yaml": {Data: []byte("kind: Stage\n")}, "README": {Data: []byte("x")}}
	dir := filepath.Join(t.TempDir(), "kwok-stages")
	paths, err := writeStages(stages, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")}, paths)
	_, err = writeStages(fstest.MapFS{}, dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no kwok Stage files")
}

// Components supervised by a cluster are stopped with it, without being
// counted as deaths, and nothing is supervised once it stopped.
func TestSupervisedComponentsStopWithTheCluster(t *testing.T) {
	c := &Cluster{RunDir: t.TempDir(), opts: Options{}.withDefaults()}
	s, err := c.Supervise(context.Background(), "berth-fake", "/bin/sh", []string{"-c", "exec sleep 60"}, nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(c.RunDir, "berth-fake.log"), s.LogPath)
	require.Len(t, c.Supervised(), 1)
	p := s.Process()
	c.Stop()
	exited, _ := p.Exited()
	assert.True(t, exited)
	assert.Empty(t, c.Deaths())
	assert.Nil(t, c.Died(), "a supervised component is not a control plane process")

	_, err = c.Supervise(context.Background(), "berth-late", "/bin/sh", []string{"-c", "exec sleep 60"}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start berth-late: the local control plane was stopped meanwhile")
}

// StopFirst's functions run once, at the start of Stop, the latest first.
func TestStopFirst(t *testing.T) {
	c := &Cluster{}
	var order []string
	c.StopFirst(func() { order = append(order, "a") })
	c.StopFirst(func() { order = append(order, "b") })
	c.Stop()
	c.Stop()
	assert.Equal(t, []string{"b", "a"}, order)
}
