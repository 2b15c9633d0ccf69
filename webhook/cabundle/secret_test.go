package cabundle

import (
	"context"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/berthdev/berth/certs"
)

const (
	ns         = "berth-system"
	secretName = "berth-webhook-tls"
	validity   = 90 * 24 * time.Hour
)

var (
	names   = ServiceDNSNames("berth-webhook", ns)
	created = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
)

func TestEnsureSecret(t *testing.T) {
	stored, err := certs.Generate(names, nil, validity, created)
	require.NoError(t, err)

	tests := []struct {
		name        string
		existing    *certs.Bundle // nil: no Secret
		garbage     bool          // Secret exists with unusable content
		shipped     bool          // the empty Opaque Secret of deploy/overlays/self-managed
		now         time.Time
		dnsNames    []string
		ips         []net.IP
		wantWrite   string // "", "create" or "update"
		wantSameCA  bool   // the CA of the existing Secret is kept
		wantSameAll bool   // nothing changed at all
		wantCAs     int    // certificates in the returned CACert
	}{
		{name: "no Secret: generated and created", now: created, dnsNames: names, wantWrite: "create", wantCAs: 1},
		{name: "valid Secret is used as is", existing: stored, now: created.Add(24 * time.Hour), dnsNames: names, wantSameAll: true, wantCAs: 1},
		{name: "last third of validity: renewed, same CA", existing: stored, now: created.Add(validity * 7 / 10), dnsNames: names, wantWrite: "update", wantSameCA: true, wantCAs: 1},
		{name: "a name not covered: renewed, same CA", existing: stored, now: created.Add(time.Hour), dnsNames: append([]string{"extra.berth-system.svc"}, names...), wantWrite: "update", wantSameCA: true, wantCAs: 1},
		{name: "an IP not covered: renewed, same CA", existing: stored, now: created.Add(time.Hour), dnsNames: names, ips: []net.IP{net.ParseIP("127.0.0.1")}, wantWrite: "update", wantSameCA: true, wantCAs: 1},
		{name: "CA too old for another serving cert: new CA, old one still trusted", existing: stored, now: created.Add(validity*3 + 24*time.Hour), dnsNames: names, wantWrite: "update", wantCAs: 2},
		{name: "CA expired: new CA alone", existing: stored, now: created.Add(validity * 5), dnsNames: names, wantWrite: "update", wantCAs: 1},
		{name: "empty Secret shipped by the overlay: filled", shipped: true, now: created, dnsNames: names, wantWrite: "update", wantCAs: 1},
		{name: "unparsable Secret: new CA", garbage: true, now: created, dnsNames: names, wantWrite: "update", wantCAs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.existing != nil {
				objects = append(objects, newSecret(ns, secretName, tc.existing))
			}
			if tc.garbage {
				objects = append(objects, &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns},
					Data:       map[string][]byte{"tls.crt": []byte("garbage")},
				})
			}
			if tc.shipped {
				objects = append(objects, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns}})
			}
			client := fake.NewClientset(objects...)

			got, err := EnsureSecret(context.Background(), client, ns, secretName, tc.dnsNames, tc.ips, validity, tc.now)
			require.NoError(t, err)

			assert.Equal(t, tc.wantWrite, writeVerb(client), "write to the Secret")
			secret, err := client.CoreV1().Secrets(ns).Get(context.Background(), secretName, metav1.GetOptions{})
			require.NoError(t, err)
			if tc.wantWrite == "create" || tc.existing != nil {
				assert.Equal(t, corev1.SecretTypeTLS, secret.Type)
			} else {
				assert.Empty(t, secret.Type, "an update never changes the immutable type")
			}
			assert.Equal(t, secretData(got), secret.Data, "the returned bundle is what the Secret holds")

			cas, err := certs.ParseCertificates(got.CACert)
			require.NoError(t, err)
			require.Len(t, cas, tc.wantCAs)
			if tc.existing != nil {
				assert.Equal(t, tc.wantSameCA || tc.wantSameAll, string(got.CACert) == string(tc.existing.CACert), "CA kept")
				assert.Equal(t, tc.wantSameAll, string(got.ServingCert) == string(tc.existing.ServingCert), "serving cert kept")
			}
			if tc.wantCAs == 2 {
				oldCA, err := certs.ParseCertificates(tc.existing.CACert)
				require.NoError(t, err)
				assert.True(t, cas[1].Equal(oldCA[0]), "the old CA follows the new one")
			}
			assertServes(t, got, tc.dnsNames, tc.ips, tc.now)
		})
	}
}

// TestEnsureSecretLosesCreateRace: two replicas start together; the one whose
// create fails with AlreadyExists must use the winner's certificate, so both
// serve certificates of the CA that ends up in caBundle.
func TestEnsureSecretLosesCreateRace(t *testing.T) {
	winner, err := certs.Generate(names, nil, validity, created)
	require.NoError(t, err)
	client := fake.NewClientset()
	client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		// The other replica's create lands first.
		require.NoError(t, client.Tracker().Add(newSecret(ns, secretName, winner)))
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, secretName)
	})

	got, err := EnsureSecret(context.Background(), client, ns, secretName, names, nil, validity, created)
	require.NoError(t, err)
	assert.Equal(t, string(winner.CACert), string(got.CACert))
	assert.Equal(t, string(winner.ServingCert), string(got.ServingCert))
}

func TestEnsureSecretErrors(t *testing.T) {
	tests := []struct {
		name     string
		verb     string
		err      error
		dnsNames []string
		wantErr  []string
	}{
		{"forbidden", "get", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, secretName, nil), names,
			[]string{"Secret berth-system/berth-webhook-tls", "needs get and update"}},
		{"missing and not creatable", "create", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, secretName, nil), names,
			[]string{"Secret berth-system/berth-webhook-tls", "may not be created", "re-apply deploy/overlays/self-managed"}},
		{"apiserver down", "get", apierrors.NewServiceUnavailable("etcd"), names,
			[]string{"Secret berth-system/berth-webhook-tls", "etcd"}},
		{"no names", "", nil, nil, []string{"at least one"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tc.verb != "" {
				client.PrependReactor(tc.verb, "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.err
				})
			}
			got, err := EnsureSecret(context.Background(), client, ns, secretName, tc.dnsNames, nil, validity, created)
			require.Error(t, err)
			assert.Nil(t, got)
			for _, want := range tc.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func writeVerb(client *fake.Clientset) string {
	for _, a := range client.Actions() {
		if v := a.GetVerb(); v == "create" || v == "update" {
			return v
		}
	}
	return ""
}

// assertServes checks the serving certificate verifies for every name
// against the returned CA bundle and is not due for renewal.
func assertServes(t *testing.T, b *certs.Bundle, dnsNames []string, ips []net.IP, now time.Time) {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(b.CACert))
	leafs, err := certs.ParseCertificates(b.ServingCert)
	require.NoError(t, err)
	hosts := append([]string(nil), dnsNames...)
	for _, ip := range ips {
		hosts = append(hosts, ip.String())
	}
	for _, n := range hosts {
		_, err := leafs[0].Verify(x509.VerifyOptions{DNSName: n, Roots: roots, CurrentTime: now})
		assert.NoError(t, err, n)
	}
	assert.True(t, usable(b, dnsNames, ips, validity, now))
}
