package e2e

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

// env is the environment every test of the suite shares.
var env *devenv.Env

func TestMain(m *testing.M) {
	os.Setenv(cluster.WatchListEnv, "false")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// A cold build of the Kubernetes binaries takes about 15 minutes on 2
	// cores; a warm start takes seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// Ctrl-C while starting cancels the start, which stops what already runs.
	startCtx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	var err error
	env, err = startEnv(startCtx)
	stopSignals()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: cannot start the environment: %v\n", err)
		return 1
	}
	defer env.Stop()
	release := env.Cluster.StopOnSignal()
	defer release()
	fmt.Fprintf(os.Stderr, "e2e: kubeconfig %s\n", env.Cluster.KubeconfigPath)
	return m.Run()
}

func startEnv(ctx context.Context) (*devenv.Env, error) {
	if os.Getenv("BERTH_E2E_CLUSTER") == "kind" {
		return startKind(ctx)
	}
	return devenv.Up(ctx, devenv.Options{Log: os.Stderr, KeepRunDir: os.Getenv("BERTH_E2E_KEEP") != ""})
}
