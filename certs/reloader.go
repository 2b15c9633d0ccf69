package certs

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultReloadInterval is used when NewReloader gets a non-positive
// interval. The kubelet refreshes Secret volumes about once a minute and
// cert-manager renews well before expiry, so ten seconds is plenty while
// costing two small file reads.
const DefaultReloadInterval = 10 * time.Second

// settleDelay is how long a failed load waits before its one retry.
const settleDelay = 100 * time.Millisecond

// Reloader serves a key pair from certFile/keyFile and reloads it when the
// files change.
//
// It polls the files' content instead of watching them: fsnotify is not an
// allowed dependency, and comparing content also catches what mtime misses —
// a Kubernetes Secret volume swaps its `..data` symlink (the files' own
// mtimes may not change), and `cp -p` or a same-second rewrite keep mtime.
//
// A pair that does not load (corrupt, half written, certificate and key not
// matching) is logged and counted once, and the previous certificate keeps
// being served: once the Reloader served a certificate it never serves
// nothing. The broken content is retried only after it changes again.
type Reloader struct {
	certFile, keyFile string
	interval          time.Duration
	log               *slog.Logger

	current atomic.Pointer[tls.Certificate]

	reloads, failures atomic.Uint64
	startOnce         sync.Once
	sleep             func(time.Duration) // time.Sleep; tests finish a write in it

	mu        sync.Mutex // guards the fields below
	servedSum [sha256.Size]byte
	failedSum [sha256.Size]byte // zero: no failure pending
	onReload  []func(*x509.Certificate)
	onError   []func(error)
}

// NewReloader loads the key pair once and returns a Reloader serving it.
// It fails when the initial pair cannot be loaded: starting a webhook with no
// certificate would only move the failure to every admission. interval <= 0
// means DefaultReloadInterval; a nil log discards messages.
func NewReloader(certFile, keyFile string, interval time.Duration, log *slog.Logger) (*Reloader, error) {
	if interval <= 0 {
		interval = DefaultReloadInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, interval: interval, log: log, sleep: time.Sleep}
	sum, cert, err := r.load()
	if err != nil {
		return nil, err
	}
	r.install(sum, cert)
	return r, nil
}

// Start polls the files every interval in a background goroutine until ctx
// is done. It returns at once; calling it again has no effect.
func (r *Reloader) Start(ctx context.Context) {
	r.startOnce.Do(func() {
		go func() {
			ticker := time.NewTicker(r.interval)
			defer ticker.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-ticker.C:
					r.check()
				}
			}
		}()
	})
}

// GetCertificate returns the current certificate; use it as
// tls.Config.GetCertificate so every handshake sees the latest pair.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.current.Load(), nil
}

// TLSConfig returns a server configuration with TLS 1.2 as the minimum
// version and certificates from GetCertificate. It offers only HTTP/1.1:
// controller-runtime disabled HTTP/2 on webhook servers after the HTTP/2
// rapid-reset and stream-exhaustion CVEs, and the apiserver needs nothing
// more. Each call returns a new config the caller may adjust.
func (r *Reloader) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.GetCertificate,
		NextProtos:     []string{"http/1.1"},
	}
}

// OnReload registers a callback, e.g. to count reloads or set a
// certificate-expiry metric. It is called after every successful reload, from
// the polling goroutine; not for the initial load (use Leaf for that).
func (r *Reloader) OnReload(fn func(*x509.Certificate)) {
	if fn == nil {
		return
	}
	r.mu.Lock()
	r.onReload = append(r.onReload, fn)
	r.mu.Unlock()
}

// OnError registers a callback for every failed reload, e.g. to count it in
// a metric. The error names the files and what is wrong with them.
func (r *Reloader) OnError(fn func(error)) {
	if fn == nil {
		return
	}
	r.mu.Lock()
	r.onError = append(r.onError, fn)
	r.mu.Unlock()
}

// Leaf returns the parsed certificate being served.
func (r *Reloader) Leaf() *x509.Certificate {
	return r.current.Load().Leaf
}

// Reloads counts successful reloads after the initial load.
func (r *Reloader) Reloads() uint64 { return r.reloads.Load() }

// Failures counts pairs that could not be loaded (each distinct content once).
func (r *Reloader) Failures() uint64 { return r.failures.Load() }

// check reloads the pair if the files' content changed since the pair being
// served, unless that exact content already failed.
func (r *Reloader) check() {
	sum, cert, err := r.load()
	if err != nil && !r.alreadyHandled(sum) {
		// Writers replace the two files one after the other (WriteFiles,
		// cp, a cert-manager-less script): a poll between the renames sees
		// a new certificate with the old key. Look again shortly before
		// calling it a failure, so a normal rotation logs no warning.
		r.sleep(min(r.interval, settleDelay))
		sum, cert, err = r.load()
	}
	r.mu.Lock()
	if sum == r.servedSum || (err != nil && sum == r.failedSum) {
		r.mu.Unlock()
		return
	}
	if err != nil {
		r.failedSum = sum
		callbacks := slices.Clone(r.onError)
		r.mu.Unlock()
		r.failures.Add(1)
		r.log.Warn("serving certificate not reloaded; still serving the previous one",
			"certFile", r.certFile, "keyFile", r.keyFile, "error", err.Error())
		for _, fn := range callbacks {
			fn(err)
		}
		return
	}
	r.mu.Unlock()
	r.install(sum, cert)
	r.reloads.Add(1)
	r.mu.Lock()
	callbacks := slices.Clone(r.onReload)
	r.mu.Unlock()
	for _, fn := range callbacks {
		fn(cert.Leaf)
	}
}

// alreadyHandled reports whether sum is the content being served or the
// content that already failed.
func (r *Reloader) alreadyHandled(sum [sha256.Size]byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sum == r.servedSum || sum == r.failedSum
}

// install makes cert the served certificate and logs what it is.
func (r *Reloader) install(sum [sha256.Size]byte, cert *tls.Certificate) {
	r.mu.Lock()
	r.servedSum, r.failedSum = sum, [sha256.Size]byte{}
	r.mu.Unlock()
	r.current.Store(cert)
	leaf := cert.Leaf
	attrs := []any{"certFile", r.certFile, "serial", leaf.SerialNumber.Text(16),
		"notAfter", leaf.NotAfter.UTC().Format(time.RFC3339), "dnsNames", leaf.DNSNames}
	if now := time.Now(); now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		// Served anyway: refusing would not make admissions work, and the
		// next rotation is picked up as soon as it lands.
		r.log.Warn("serving certificate is outside its validity period", attrs...)
		return
	}
	r.log.Info("serving certificate loaded", attrs...)
}

// load reads and parses the pair. The returned sum identifies the content
// (or the read error), so an unchanged state is recognised on the next poll.
func (r *Reloader) load() ([sha256.Size]byte, *tls.Certificate, error) {
	certPEM, certErr := os.ReadFile(r.certFile)
	keyPEM, keyErr := os.ReadFile(r.keyFile)
	h := sha256.New()
	for _, part := range []struct {
		data []byte
		err  error
	}{{certPEM, certErr}, {keyPEM, keyErr}} {
		if part.err != nil {
			h.Write([]byte("error:" + part.err.Error()))
		} else {
			h.Write(part.data)
		}
		h.Write([]byte{0}) // separator: cert "ab"+key "c" differs from "a"+"bc"
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	if certErr != nil {
		return sum, nil, fmt.Errorf("reading serving certificate %s: %w", r.certFile, certErr)
	}
	if keyErr != nil {
		return sum, nil, fmt.Errorf("reading serving key %s: %w", r.keyFile, keyErr)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return sum, nil, fmt.Errorf("loading key pair %s / %s: %w; write both files again (certificate and matching key, PEM)", r.certFile, r.keyFile, err)
	}
	if cert.Leaf == nil { // X509KeyPair fills Leaf since Go 1.23; stay safe
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return sum, nil, fmt.Errorf("parsing serving certificate %s: %w", r.certFile, err)
		}
		cert.Leaf = leaf
	}
	return sum, &cert, nil
}
