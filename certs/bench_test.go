package certs

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkGenerate: a CA plus a serving certificate, as the self-managed
// mode does on first start and the e2e harness per run.
func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		if _, err := Generate([]string{"berth-webhook.berth-system.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReloaderPollUnchanged: the cost of one poll when nothing changed
// (two file reads and a hash), paid every interval.
func BenchmarkReloaderPollUnchanged(b *testing.B) {
	dir := b.TempDir()
	bundle, err := Generate([]string{"localhost"}, nil, time.Hour, time.Now())
	require.NoError(b, err)
	require.NoError(b, bundle.WriteFiles(dir))
	r, err := NewReloader(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile), time.Hour, nil)
	require.NoError(b, err)
	for b.Loop() {
		r.check()
	}
	if r.Reloads() != 0 || r.Failures() != 0 {
		b.Fatalf("unchanged files caused %d reloads, %d failures", r.Reloads(), r.Failures())
	}
}

// BenchmarkHandshake compares full TLS handshakes served through
// Reloader.GetCertificate with a static tls.Config.Certificates: the reload
// support must cost nothing measurable per connection.
func BenchmarkHandshake(b *testing.B) {
	dir := b.TempDir()
	bundle, err := Generate([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now())
	require.NoError(b, err)
	require.NoError(b, bundle.WriteFiles(dir))
	r, err := NewReloader(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile), time.Hour, nil)
	require.NoError(b, err)
	static, err := tls.X509KeyPair(bundle.ServingCert, bundle.ServingKey)
	require.NoError(b, err)
	roots, err := ParseCertificates(bundle.CACert)
	require.NoError(b, err)

	configs := map[string]*tls.Config{
		"reloader": r.TLSConfig(),
		"static":   {MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{static}},
	}
	for _, name := range []string{"reloader", "static"} {
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			defer func() { _ = ln.Close() }()
			go func() {
				for {
					raw, err := ln.Accept()
					if err != nil {
						return
					}
					s := tls.Server(raw, configs[name])
					_ = s.Handshake()
					_ = raw.Close()
				}
			}()
			clientConfig := &tls.Config{RootCAs: newPool(roots), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
			for b.Loop() {
				raw, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				if err := tls.Client(raw, clientConfig).Handshake(); err != nil {
					b.Fatal(err)
				}
				_ = raw.Close()
			}
		})
	}
}

func newPool(certs []*x509.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool
}
