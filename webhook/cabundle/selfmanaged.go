package cabundle

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Defaults of SelfManaged.
const (
	DefaultValidity   = 90 * 24 * time.Hour
	DefaultCheckEvery = time.Hour
)

// SelfManaged is the certificate loop of a webhook replica installed with
// deploy/overlays/self-managed: keep the shared Secret current (EnsureSecret),
// write its pair into CertDir (where a certs.Reloader picks it up), and make
// sure both webhook configurations trust its CA (Inject).
//
// Call Sync once before creating the certs.Reloader (the files must exist),
// then Run in a goroutine.
type SelfManaged struct {
	Client                       kubernetes.Interface
	Namespace, SecretName        string // berth-system, berth-webhook-tls
	ServiceName                  string // berth-webhook: the serving certificate covers its DNS names
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
	if s.Client == nil || s.Namespace == "" || s.SecretName == "" || s.ServiceName == "" || s.CertDir == "" {
		return errors.New("cabundle: SelfManaged needs Client, Namespace, SecretName, ServiceName and CertDir (see deploy/overlays/self-managed for the values)")
	}
	validity := s.Validity
	if validity <= 0 {
		validity = DefaultValidity
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	b, err := EnsureSecret(ctx, s.Client, s.Namespace, s.SecretName, ServiceDNSNames(s.ServiceName, s.Namespace), validity, now())
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
