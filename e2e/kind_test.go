package e2e

import (
	"context"
	"os"
	"path/filepath"

	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/kind"
)

// startKind runs the suite against a kind cluster (BERTH_E2E_CLUSTER=kind):
// kind makes the control plane, kwok adds the fake GPU fleet to it, and the
// cluster is deleted when the suite ends. Without a Docker engine it fails
// with the reason; it never falls back silently to another cluster.
func startKind(ctx context.Context, comps []devenv.Component) (*devenv.Env, error) {
	dir, err := os.MkdirTemp("", "berth-kind-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	deleteCluster, err := kind.Create(ctx, kind.Options{}, kubeconfig)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	env, err := devenv.Up(ctx, devenv.Options{
		Components: comps,
		Log:        os.Stderr,
		Kubeconfig: kubeconfig,
		OnStop: func() error {
			defer os.RemoveAll(dir)
			return deleteCluster()
		},
	})
	if err != nil {
		// Up may have failed before it owned the cluster: delete it here
		// too (deleting twice is harmless).
		_ = deleteCluster()
		os.RemoveAll(dir)
	}
	return env, err
}
