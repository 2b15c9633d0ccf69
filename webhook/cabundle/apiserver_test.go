//go:build e2e

// Against a real kube-apiserver (internal/devenv/cluster; `make deps` builds it):
//
//	go test -tags e2e -count=1 -run TestAgainstAPIServer ./webhook/cabundle
//
// It applies deploy/overlays/self-managed with `kubectl apply --server-side`,
// runs SelfManaged as the webhook's ServiceAccount (impersonated), so the
// overlay's RBAC is proven sufficient and no wider, and re-applies the
// overlay to show a re-apply keeps the Secret and caBundle the webhook wrote.

package cabundle

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/certs"
	"github.com/berthdev/berth/internal/devenv/cluster"
)

func TestAgainstAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := cluster.RepoRoot(".")
	require.NoError(t, err)
	c, err := cluster.Start(ctx, cluster.Options{Binaries: cluster.DefaultBinaries(root), Timeout: 3 * time.Minute})
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	admin, err := c.Clientset()
	require.NoError(t, err)

	apply := func() {
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.KubeconfigPath, "apply", "--server-side",
			"-k", filepath.Join(root, "deploy", "overlays", "self-managed"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	apply()

	// Everything the webhook does, with only the webhook's permissions.
	cfg := c.RESTConfig()
	cfg.Impersonate.UserName = "system:serviceaccount:berth-system:berth-webhook"
	asWebhook, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	s := &SelfManaged{
		Client: asWebhook, Namespace: "berth-system", SecretName: "berth-webhook-tls", ServiceName: "berth-webhook",
		MutatingName: "berth-mutating", ValidatingName: "berth-validating", CertDir: t.TempDir(),
	}
	require.NoError(t, s.Sync(ctx))

	secret, err := admin.CoreV1().Secrets("berth-system").Get(ctx, "berth-webhook-tls", metav1.GetOptions{})
	require.NoError(t, err)
	caPEM := secret.Data[SecretKeyCACert]
	_, err = certs.ParseCertificates(caPEM)
	require.NoError(t, err)
	assertInjected := func() {
		t.Helper()
		m, err := admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "berth-mutating", metav1.GetOptions{})
		require.NoError(t, err)
		v, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "berth-validating", metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, m.Webhooks, 2)
		require.Len(t, v.Webhooks, 5)
		for _, w := range m.Webhooks {
			assert.Equal(t, string(caPEM), string(w.ClientConfig.CABundle), w.Name)
			require.NotNil(t, w.ClientConfig.Service, "%s: the patch kept the service reference", w.Name)
		}
		for _, w := range v.Webhooks {
			assert.Equal(t, string(caPEM), string(w.ClientConfig.CABundle), w.Name)
		}
	}
	assertInjected()
	onDisk, err := os.ReadFile(filepath.Join(s.CertDir, certs.CertFile))
	require.NoError(t, err)
	assert.Equal(t, secret.Data[SecretKeyCert], onDisk)

	// A second round writes nothing.
	m1, err := admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "berth-mutating", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Sync(ctx))
	m2, err := admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "berth-mutating", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, m1.ResourceVersion, m2.ResourceVersion)

	// No wider than that.
	forbidden := map[string]error{}
	_, forbidden["create a Secret"] = asWebhook.CoreV1().Secrets("berth-system").Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
	_, forbidden["read another Secret"] = asWebhook.CoreV1().Secrets("berth-system").Get(ctx, "other", metav1.GetOptions{})
	_, forbidden["read another webhook configuration"] = asWebhook.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "other", metav1.GetOptions{})
	_, forbidden["create a pod"] = asWebhook.CoreV1().Pods("default").Create(ctx,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})
	for what, err := range forbidden {
		assert.True(t, apierrors.IsForbidden(err), "the webhook must not %s: %v", what, err)
	}
	_, err = asWebhook.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	assert.NoError(t, err, "the caches list nodes")

	// Re-applying the manifests keeps what the webhook wrote.
	apply()
	again, err := admin.CoreV1().Secrets("berth-system").Get(ctx, "berth-webhook-tls", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(secret.Data[SecretKeyCert], again.Data[SecretKeyCert]), "re-apply kept the certificate")
	assertInjected()

	// The webhook pods pass the namespace's restricted Pod Security level.
	require.Eventually(t, func() bool {
		pods, err := admin.CoreV1().Pods("berth-system").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 2
	}, time.Minute, time.Second, "the ReplicaSet could not create the webhook pods")
}
