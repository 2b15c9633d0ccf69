package cabundle

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/berthdev/berth/certs"
)

// Keys of the self-managed Secret. ca.crt, tls.crt and tls.key are what
// cert-manager writes too; ca.key is extra, so that any replica can re-issue
// the serving certificate with the same CA.
const (
	SecretKeyCACert = certs.CACertFile
	SecretKeyCAKey  = "ca.key"
	SecretKeyCert   = corev1.TLSCertKey
	SecretKeyKey    = corev1.TLSPrivateKeyKey
)

// renewFraction: the serving certificate is renewed once less than this
// share of its validity is left (cert-manager renews at 2/3 of the lifetime).
const renewFraction = 3

// EnsureSecret returns the CA and serving certificate kept in the Secret
// namespace/name, creating the Secret when it is missing and renewing its
// content when the serving certificate does not cover dnsNames and ips, is in the
// last third of its validity, or does not parse.
//
// Every replica calls it at start and periodically; the Secret is the one
// source of truth, so all replicas serve certificates of the same CA, which is
// the one Inject registers. Races between replicas resolve through the
// apiserver: a lost create (AlreadyExists) or update (Conflict) re-reads and
// uses the winner's content.
//
// A renewal keeps the CA while it outlives the new serving certificate, so
// the caBundle does not change. When the CA itself has to be replaced, the
// returned CACert holds the new CA followed by the old one (while it is still
// valid): injected as caBundle, it lets the apiserver trust both while
// replicas switch over.
func EnsureSecret(ctx context.Context, client kubernetes.Interface, namespace, name string,
	dnsNames []string, ips []net.IP, validity time.Duration, now time.Time,
) (*certs.Bundle, error) {
	secrets := client.CoreV1().Secrets(namespace)
	var result *certs.Bundle
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			b, err := certs.Generate(dnsNames, ips, validity, now)
			if err != nil {
				return err
			}
			_, err = secrets.Create(ctx, newSecret(namespace, name, b), metav1.CreateOptions{FieldManager: FieldManager})
			if apierrors.IsForbidden(err) {
				// The self-managed overlay ships the Secret empty instead of
				// granting create, which RBAC cannot restrict to one name.
				return fmt.Errorf("it does not exist and may not be created (%w); re-apply deploy/overlays/self-managed, which ships it empty", err)
			}
			if err == nil {
				result = b
			}
			return err
		}
		if err != nil {
			return err
		}
		b, fresh, err := refresh(secret, dnsNames, ips, validity, now)
		if err != nil {
			return err
		}
		if !fresh {
			result = b
			return nil
		}
		updated := secret.DeepCopy()
		updated.Data = secretData(b) // the type is immutable: keep whatever it is

		if _, err := secrets.Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return err
		}
		result = b
		return nil
	})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("cabundle: not allowed to manage Secret %s/%s: %w; the webhook's ServiceAccount needs get and update on it (deploy/overlays/self-managed grants them)", namespace, name, err)
		}
		return nil, fmt.Errorf("cabundle: keeping the serving certificate in Secret %s/%s: %w", namespace, name, err)
	}
	return result, nil
}

// refresh decides whether the Secret's bundle can be used as is. It returns
// the bundle to use and whether it is new (must be written back).
func refresh(secret *corev1.Secret, dnsNames []string, ips []net.IP, validity time.Duration, now time.Time) (*certs.Bundle, bool, error) {
	b := &certs.Bundle{
		CACert:      secret.Data[SecretKeyCACert],
		CAKey:       secret.Data[SecretKeyCAKey],
		ServingCert: secret.Data[SecretKeyCert],
		ServingKey:  secret.Data[SecretKeyKey],
	}
	if usable(b, dnsNames, ips, validity, now) {
		return b, false, nil
	}
	// Re-issue with the same CA when it can; the caBundle then stays put.
	renewed := *b
	if err := renewed.RenewServing(dnsNames, ips, validity, now); err == nil {
		return &renewed, true, nil
	}
	fresh, err := certs.Generate(dnsNames, ips, validity, now)
	if err != nil {
		return nil, false, err
	}
	// Keep trusting the old CA while it is valid: replicas that still serve
	// its certificate must not fail admissions during the switch.
	if old, err := certs.ParseCertificates(b.CACert); err == nil && now.Before(old[0].NotAfter) {
		fresh.CACert = append(slices.Clone(fresh.CACert), pemOf(old[0])...)
	}
	return fresh, true, nil
}

// usable reports whether the serving certificate parses, matches its key,
// chains to the CA, covers every name and IP and is not due for renewal.
func usable(b *certs.Bundle, dnsNames []string, ips []net.IP, validity time.Duration, now time.Time) bool {
	cas, err := certs.ParseCertificates(b.CACert)
	if err != nil || len(b.CAKey) == 0 {
		return false
	}
	leafs, err := certs.ParseCertificates(b.ServingCert)
	if err != nil || !keyMatches(b) {
		return false
	}
	leaf := leafs[0]
	remaining := leaf.NotAfter.Sub(now)
	if remaining < leaf.NotAfter.Sub(leaf.NotBefore)/renewFraction || remaining < validity/renewFraction {
		return false
	}
	roots := x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
	}
	hosts := slices.Clone(dnsNames)
	for _, ip := range ips {
		hosts = append(hosts, ip.String())
	}
	for _, n := range hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: n, Roots: roots, CurrentTime: now}); err != nil {
			return false
		}
	}
	return true
}

func keyMatches(b *certs.Bundle) bool {
	_, err := tlsPair(b.ServingCert, b.ServingKey)
	return err == nil
}

func newSecret(namespace, name string, b *certs.Bundle) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "berth-webhook", "app.kubernetes.io/managed-by": "berth-webhook"},
		},
		Type: corev1.SecretTypeTLS,
		Data: secretData(b),
	}
}

func secretData(b *certs.Bundle) map[string][]byte {
	return map[string][]byte{
		SecretKeyCACert: b.CACert,
		SecretKeyCAKey:  b.CAKey,
		SecretKeyCert:   b.ServingCert,
		SecretKeyKey:    b.ServingKey,
	}
}

// ServiceDNSNames are the names the apiserver may use to reach a webhook
// Service: it dials <service>.<namespace>.svc.
func ServiceDNSNames(service, namespace string) []string {
	base := service + "." + namespace
	return []string{base + ".svc", base + ".svc.cluster.local", base, service}
}

func tlsPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	return tls.X509KeyPair(certPEM, keyPEM)
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
