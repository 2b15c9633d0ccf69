package realnode

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/install"
)

// certManagerVersion is the github.com/cert-manager/cert-manager go.mod
// pins (the Makefile's CERT_MANAGER_VERSION).
const certManagerVersion = "v1.20.0"

// startCertManager installs cert-manager's CRDs and runs its controller
// and CA injector (built from the served module by `make deps`) next to the
// control plane: no image of cert-manager's can be pulled here.
func startCertManager(ctx context.Context, t *testing.T) {
	t.Helper()
	objs, err := install.ReadObjects(env.Path("e2e", "testdata", "cert-manager-crds"))
	require.NoError(t, err)
	_, err = env.Applier.InstallCRDs(ctx, objs, time.Minute)
	require.NoError(t, err)
	dir := env.Path("bin", "cert-manager-"+certManagerVersion)
	for _, name := range []string{"cert-manager-controller", "cert-manager-cainjector"} {
		bin := filepath.Join(dir, name)
		_, err := os.Stat(bin)
		require.NoError(t, err, "run `make deps`: it builds %s", name)
		_, err = env.Cluster.Supervise(ctx, name, bin, []string{"--kubeconfig", env.Cluster.KubeconfigPath}, nil)
		require.NoError(t, err)
	}
}

// berth installed with the cert-manager overlay on the real node: cert-manager
// issues the webhook's serving certificate, cainjector fills caBundle, and
// the in-cluster webhook pins, mutates and serves.
func TestCertManagerOverlayServes(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	uninstallKustomize(ctx, t)
	overlay, err := filepath.Abs(filepath.Join("testdata", "cert-manager"))
	require.NoError(t, err)
	t.Cleanup(func() {
		if _, err := kubectl(ctx, env, "delete", "--ignore-not-found", "--wait", "--timeout=2m", "-k", overlay); err != nil {
			t.Logf("removing the cert-manager install: %v", err)
		}
		waitNamespaceGone(ctx, t, BerthNamespace)
		require.NoError(t, installKustomize(ctx, env), "putting the kustomize install back")
	})
	startCertManager(ctx, t)
	start := time.Now()
	_, err = kubectl(ctx, env, "apply", "--server-side", "-k", overlay)
	require.NoError(t, err)
	require.NoError(t, waitInstalled(ctx, env, 3*time.Minute))
	t.Logf("berth with cert-manager's certificates serving in %s", time.Since(start).Round(100*time.Millisecond))

	secret, err := env.Kube.CoreV1().Secrets(BerthNamespace).Get(ctx, "berth-webhook-tls", metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, secret.Annotations, "cert-manager.io/certificate-name", "cert-manager issued the serving certificate")

	ns := newNamespace(t, "certmanager")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	newChatService(t, c, ns, "chat", 1)
	isvc := waitServiceReady(t, c, ns, "chat", 3*time.Minute)
	require.Equal(t, "ClusterServingRuntime/berth-test-engine-rt", isvc.Annotations[v1beta1.AnnotationResolvedRuntime])
	require.Contains(t, chatFromPod(t, ns, "client", "http://chat."+ns+".svc"), "berth-test-engine")
}
