package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/devenv/install"
)

// TestInstallSidecarRuntimesInOneApply: on a cluster with berth and its
// out-of-box runtimes but no engine runtime profile, the webhook denies a
// sidecar runtime on its own (its profile does not exist), and the one
// command docs/engine-sidecar.md gives, kubectl apply --server-side -k
// deploy/runtimes-sidecar, installs the profiles and every sidecar runtime:
// kustomize orders the profiles first and the webhook waits for its cache.
func TestInstallSidecarRuntimesInOneApply(t *testing.T) {
	ensureOutOfBox(t)
	bc := berthClient(t)
	ctx := ctxT(t, 2*time.Minute)
	profiles, err := install.ReadObjects(env.Path("deploy", "profiles"))
	require.NoError(t, err)
	runtimes, err := install.ReadObjects(env.Path("deploy", "runtimes-sidecar"))
	require.NoError(t, err)
	require.NotEmpty(t, runtimes)
	remove := func() {
		for _, o := range runtimes {
			err := bc.OmeV1beta1().ClusterServingRuntimes().Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", o, err)
			}
		}
		for _, o := range profiles {
			err := bc.OmeV1beta1().ClusterEngineRuntimeProfiles().Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", o, err)
			}
		}
	}
	remove() // a fresh cluster has none of them
	t.Cleanup(remove)
	waitFor(t, "", "the profiles gone from the webhook's cache", func() bool {
		out, err := kubectl(t, "", "apply", "--server-side", "--dry-run=server", "-f",
			filepath.Join(env.Root, "deploy", "runtimes-sidecar", runtimes[0].GetName()+".yaml"))
		return err != nil && strings.Contains(out, `ClusterEngineRuntimeProfile "sglang-pd-engine-runtime" does not exist`)
	})

	out, err := kubectl(t, "", "apply", "--server-side", "-k", filepath.Join(env.Root, "deploy", "runtimes-sidecar"))
	require.NoError(t, err, out)
	for _, o := range profiles {
		assert.Contains(t, out, "clusterengineruntimeprofile.ome.io/"+o.GetName()+" serverside-applied")
	}
	for _, o := range runtimes {
		assert.Contains(t, out, "clusterservingruntime.ome.io/"+o.GetName()+" serverside-applied")
		_, err := bc.OmeV1beta1().ClusterServingRuntimes().Get(ctx, o.GetName(), metav1.GetOptions{})
		assert.NoError(t, err, "%s is stored", o)
	}
	assert.Equal(t, len(profiles)+len(runtimes), strings.Count(out, "serverside-applied"), out)

	// The plain out-of-box runtimes still pass next to them (no tie).
	out, err = kubectl(t, "", "apply", "--server-side", "--dry-run=server", "-k", filepath.Join(env.Root, "deploy", "runtimes"))
	require.NoError(t, err, out)
}
