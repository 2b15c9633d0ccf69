// Package realnode is the end-to-end suite of the real node: berth's and a
// service's containers really run (containerd, kubelet, kube-proxy,
// CoreDNS next to the kwok fleet; see internal/devenv/node). Where this
// machine cannot run a real node (not root, no cgroups, no images), every
// test skips and says why, and so does the summary TestMain prints.
package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/cluster"
)

var (
	// env is the environment every test shares; env.Node is nil when the
	// real node could not start (env.NodeErr says why).
	env *devenv.Env
)

func TestMain(m *testing.M) {
	os.Setenv(cluster.WatchListEnv, "false")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	startCtx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	bin, err := buildComponents(startCtx)
	if err != nil {
		stopSignals()
		fmt.Fprintf(os.Stderr, "realnode: FAIL: %v\n", err)
		return 1
	}
	defer os.RemoveAll(bin)
	comps := []devenv.Component{
		devenv.Webhook(filepath.Join(bin, "berth-webhook")),
		devenv.Reconciler(filepath.Join(bin, "berth-reconciler"),
			"--leader-elect-namespace=kube-system", "--leader-elect-identity=realnode-reconciler"),
	}
	env, err = devenv.Up(startCtx, devenv.Options{Components: comps, Log: os.Stderr, RealNode: devenv.RealNodeAuto,
		KeepRunDir: os.Getenv("BERTH_E2E_KEEP") != ""})
	stopSignals()
	if err != nil {
		fmt.Fprintf(os.Stderr, "realnode: FAIL: cannot start the environment: %v\n", err)
		return 1
	}
	defer env.Stop()
	release := env.Cluster.StopOnSignal()
	defer release()
	if env.Node == nil {
		fmt.Fprintf(os.Stderr, "realnode: SKIP: every test of the real node skips here: %v\n", env.NodeErr)
	}
	code := m.Run()
	if env.Node == nil {
		fmt.Fprintf(os.Stderr, "realnode: the real node did not run on this machine (%v): its tests were skipped\n", env.NodeErr)
	}
	return code
}

// needNode skips t when no real node runs, saying why.
func needNode(t *testing.T) {
	t.Helper()
	if env.Node == nil {
		t.Skipf("no real node on this machine: %v", env.NodeErr)
	}
}

// buildComponents builds berth-webhook and berth-reconciler of this
// checkout into a new temporary folder (the harness's job, as in e2e/).
func buildComponents(ctx context.Context) (string, error) {
	root, err := cluster.RepoRoot(".")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "berth-realnode-bin-")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./cmd/berth-webhook", "./cmd/berth-reconciler")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build ./cmd/berth-webhook ./cmd/berth-reconciler in %s: %v\n%s", root, err, out)
	}
	return dir, nil
}
