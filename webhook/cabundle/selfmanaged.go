package cabundle

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Defaults of SelfManaged.
const (
	DefaultValidity = 90 * 24 * time.Hour
	// DefaultCheckEvery is short because a re-created webhook configuration
	// (re-applied manifests, an emergency delete undone) has no caBundle and
	// fails every admission until the next round; a round that changes
	// nothing costs three GETs.
	DefaultCheckEvery = time.Minute
)

// SelfManaged is the certificate loop of a webhook replica installed with
// deploy/overlays/self-managed: keep the shared Secret current (EnsureSecret),
// write its pair into CertDir (where a certs.Reloader picks it up), and make
// sure both webhook configurations trust its CA (Inject).
//
// Call Sync once before creating the certs.Reloader (the files must exist),
// then Run in a goroutine.
type SelfManaged struct {
	Client                kubernetes.Interface
	Namespace, SecretName string // berth-system, berth-webhook-tls
	// DNSNames and IPs the serving certificate covers. Empty DNSNames: the
	// names of the Service ServiceName in Namespace.
	DNSNames                     []string
	IPs                          []net.IP
	ServiceName                  string // berth-webhook
	MutatingName, ValidatingName string // berth-mutating, berth-validating
	CertDir                      string // /certs
	Validity                     time.Duration
	CheckEvery                   time.Duration
	Log                          *slog.Logger
	Now                          func() time.Time // nil: time.Now
}

// Sync runs one round: Secret, files, caBundle. The files are written before
// caBundle is patched, and a replaced CA is injected together with the old
// one (see EnsureSecret), so no admission sees a certificate the apiserver
// does not trust yet.
func (s *SelfManaged) Sync(ctx context.Context) error {
	if s.Client == nil || s.Namespace == "" || s.SecretName == "" || s.CertDir == "" || (len(s.DNSNames) == 0 && s.ServiceName == "") {
		return errors.New("cabundle: SelfManaged needs Client, Namespace, SecretName, CertDir and DNSNames or ServiceName (see deploy/overlays/self-managed for the values)")
	}
	dnsNames := s.DNSNames
	if len(dnsNames) == 0 {
		dnsNames = ServiceDNSNames(s.ServiceName, s.Namespace)
	}
	validity := s.Validity
	if validity <= 0 {
		validity = DefaultValidity
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	b, err := EnsureSecret(ctx, s.Client, s.Namespace, s.SecretName, dnsNames, s.IPs, validity, now())
	if err != nil {
		return err
	}
	if err := b.WriteFiles(s.CertDir); err != nil {
		return err
	}
	return Inject(ctx, s.Client, s.MutatingName, s.ValidatingName, b.CACert)
}

// Run calls Sync every CheckEvery until ctx is done. A failed round is logged
// and retried on the next tick: the certificate being served stays valid for
// weeks after renewal is first due.
func (s *SelfManaged) Run(ctx context.Context) {
	every := s.CheckEvery
	if every <= 0 {
		every = DefaultCheckEvery
	}
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := s.Sync(ctx); err != nil {
				log.Error("self-managed certificates not refreshed; will retry", "secret", s.Namespace+"/"+s.SecretName, "error", err.Error())
			}
		}
	}
}
