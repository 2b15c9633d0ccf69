package cabundle

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/berthdev/berth/certs"
)

func newSelfManaged(t *testing.T, now *atomic.Int64) (*SelfManaged, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(
		// As deploy/overlays/self-managed ships it.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns}},
		mutating("berth-mutating", nil, "pods.mutate.ome.io", "inferenceservices.mutate.ome.io"),
		validating("berth-validating", nil, "a.validate.ome.io"),
	)
	return &SelfManaged{
		Client: client, Namespace: ns, SecretName: secretName, ServiceName: "berth-webhook",
		MutatingName: "berth-mutating", ValidatingName: "berth-validating",
		CertDir: filepath.Join(t.TempDir(), "certs"), Validity: validity,
		Now: func() time.Time { return time.Unix(now.Load(), 0) },
	}, client
}

func TestSelfManagedSync(t *testing.T) {
	var now atomic.Int64
	now.Store(created.Unix())
	s, client := newSelfManaged(t, &now)

	require.NoError(t, s.Sync(context.Background()))
	secret, err := client.CoreV1().Secrets(ns).Get(context.Background(), secretName, metav1.GetOptions{})
	require.NoError(t, err)
	for key, file := range map[string]string{SecretKeyCert: certs.CertFile, SecretKeyKey: certs.KeyFile, SecretKeyCACert: certs.CACertFile} {
		data, err := os.ReadFile(filepath.Join(s.CertDir, file))
		require.NoError(t, err)
		assert.Equal(t, secret.Data[key], data, "%s holds the Secret's %s", file, key)
	}
	bundles := currentBundles(t, client)
	require.Len(t, bundles, 3)
	for hook, ca := range bundles {
		assert.Equal(t, string(secret.Data[SecretKeyCACert]), string(ca), hook)
	}
	// The files serve: a Reloader loads them.
	_, err = certs.NewReloader(filepath.Join(s.CertDir, certs.CertFile), filepath.Join(s.CertDir, certs.KeyFile), time.Second, nil)
	require.NoError(t, err)

	// A second round a day later changes nothing in the cluster.
	now.Add(int64((24 * time.Hour).Seconds()))
	client.ClearActions()
	require.NoError(t, s.Sync(context.Background()))
	assert.Equal(t, "", writeVerb(client))
	assert.Zero(t, countVerb(client, "patch"))

	// When renewal is due the serving certificate changes, the CA does not,
	// so caBundle is not patched again.
	now.Add(int64((validity * 7 / 10).Seconds()))
	client.ClearActions()
	require.NoError(t, s.Sync(context.Background()))
	assert.Equal(t, "update", writeVerb(client))
	assert.Zero(t, countVerb(client, "patch"))
	renewed, err := client.CoreV1().Secrets(ns).Get(context.Background(), secretName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, secret.Data[SecretKeyCACert], renewed.Data[SecretKeyCACert])
	assert.NotEqual(t, secret.Data[SecretKeyCert], renewed.Data[SecretKeyCert])
	onDisk, err := os.ReadFile(filepath.Join(s.CertDir, certs.CertFile))
	require.NoError(t, err)
	assert.Equal(t, renewed.Data[SecretKeyCert], onDisk)
}

func TestSelfManagedRunRefreshesUntilCancelled(t *testing.T) {
	var now atomic.Int64
	now.Store(created.Unix())
	s, client := newSelfManaged(t, &now)
	s.CheckEvery = 5 * time.Millisecond
	require.NoError(t, s.Sync(context.Background()))
	first, err := os.ReadFile(filepath.Join(s.CertDir, certs.CertFile))
	require.NoError(t, err)

	now.Add(int64((validity * 7 / 10).Seconds())) // renewal due
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(s.CertDir, certs.CertFile))
		return err == nil && string(data) != string(first)
	}, 5*time.Second, 5*time.Millisecond, "Run renews the files")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	assert.NotEmpty(t, client.Actions())
}

func TestSelfManagedNeedsItsSettings(t *testing.T) {
	s := &SelfManaged{Client: fake.NewClientset(), Namespace: ns}
	err := s.Sync(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SecretName")
}

func countVerb(client *fake.Clientset, verb string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == verb {
			n++
		}
	}
	return n
}
