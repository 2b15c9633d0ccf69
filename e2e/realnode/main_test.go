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
	"os/signal"
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
	// No berth process on the host: berth runs in the cluster, installed
	// as users install it, once the real node is up.
	var err error
	env, err = devenv.Up(startCtx, devenv.Options{Log: os.Stderr, RealNode: devenv.RealNodeAuto,
		SecondNode: true, KeepRunDir: os.Getenv("BERTH_E2E_KEEP") != ""})
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
	} else {
		if err := startModelServers(); err != nil {
			fmt.Fprintf(os.Stderr, "realnode: FAIL: the local Hub and S3 server: %v\n", err)
			return 1
		}
		defer stopModelServers()
		t := time.Now()
		if err := installKustomize(ctx, env); err != nil {
			fmt.Fprintf(os.Stderr, "realnode: FAIL: berth in-cluster (kubectl apply --server-side -k): %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "realnode: berth installed in-cluster with kubectl apply -k in %s\n", time.Since(t).Round(100*time.Millisecond))
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
