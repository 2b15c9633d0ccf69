package e2e

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
	"k8s.io/client-go/rest"
)

var (
	// env is the environment every test of the suite shares.
	env *devenv.Env
	// webhook is env's berth webhook: its certificates, URLs and process.
	webhook *devenv.WebhookComponent
	// reconciler is env's berth reconciler: its probes and supervised
	// process (Kill sends SIGKILL; the supervisor restarts it).
	reconciler *devenv.ProcessComponent
	// componentBin holds berth's commands built for this run
	// (berth-webhook, berth-reconciler, berth).
	componentBin string
	// hub is the local Hugging Face Hub (internal/hubtest, behind a gate)
	// the reconciler reads hf:// models' metadata from.
	hub *gatedHub
)

func TestMain(m *testing.M) {
	os.Setenv(cluster.WatchListEnv, "false")
	// berth's admission warnings are part of what the tests check, through
	// a handler of their own (see policy_admission_test.go); printed to
	// stderr by client-go's default handler they bury a failure's output.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// A cold build of the Kubernetes binaries takes about 15 minutes on 2
	// cores; a warm start takes seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// Ctrl-C while starting cancels the start, which stops what already runs.
	startCtx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	bin, err := buildComponents(startCtx)
	if err != nil {
		stopSignals()
		fmt.Fprintf(os.Stderr, "e2e: FAIL: %v\n", err)
		return 1
	}
	defer os.RemoveAll(bin)
	componentBin = bin
	webhook = devenv.Webhook(filepath.Join(bin, "berth-webhook"))
	hub = startHub()
	defer hub.Close()
	// The same flags as berth up, with short recreate backoffs so the
	// recovery tests see several recreates in seconds, and hf:// models'
	// metadata read from the local test Hub (short retries: a test holds
	// the Hub for a moment).
	reconciler = devenv.Reconciler(filepath.Join(bin, "berth-reconciler"),
		"--leader-elect-namespace=kube-system", "--leader-elect-identity=e2e-reconciler",
		"--recreate-backoff-base=2s", "--recreate-backoff-max=20s",
		"--hf-endpoint="+hub.URL(), "--model-retry-base=1s", "--model-retry-max=5s")
	env, err = startEnv(startCtx, []devenv.Component{webhook, reconciler})
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

// buildComponents builds the berth component binaries of this checkout
// once for the suite, into a new temporary folder it returns. This is the
// test harness's job: `berth up` and `berth demo` build nothing, they run
// the binaries of `make build`.
func buildComponents(ctx context.Context) (string, error) {
	root, err := cluster.RepoRoot(".")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "berth-e2e-bin-")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./cmd/berth-webhook", "./cmd/berth-reconciler", "./cmd/berth")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build the berth components (go build ./cmd/berth-webhook ./cmd/berth-reconciler ./cmd/berth in %s): %v\n%s", root, err, out)
	}
	return dir, nil
}

func startEnv(ctx context.Context, comps []devenv.Component) (*devenv.Env, error) {
	if os.Getenv("BERTH_E2E_CLUSTER") == "kind" {
		return startKind(ctx, comps)
	}
	return devenv.Up(ctx, devenv.Options{Components: comps, Log: os.Stderr, KeepRunDir: os.Getenv("BERTH_E2E_KEEP") != ""})
}
