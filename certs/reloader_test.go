package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	pollInterval = 10 * time.Millisecond
	waitFor      = 5 * time.Second
)

// TestReloaderRotatesUnderLoad runs a TLS server on Reloader.TLSConfig while
// clients keep opening new connections, rewrites the files, and checks that
// the new certificate is served without a restart and no handshake failed.
func TestReloaderRotatesUnderLoad(t *testing.T) {
	tests := []struct {
		name string
		next func(t *testing.T, current *Bundle) *Bundle
	}{
		{
			name: "serving certificate renewed by the same CA",
			next: func(t *testing.T, current *Bundle) *Bundle {
				renewed := *current
				require.NoError(t, renewed.RenewServing([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now()))
				return &renewed
			},
		},
		{
			name: "new CA, clients trusting old and new during the rotation",
			next: func(t *testing.T, _ *Bundle) *Bundle { return generateLoopback(t) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first := generateLoopback(t)
			require.NoError(t, first.WriteFiles(dir))
			logs := &syncBuffer{}
			r := startReloader(t, dir, logs)
			second := tc.next(t, first)

			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(first.CACert)
			roots.AppendCertsFromPEM(second.CACert)
			url := serveTLS(t, r.TLSConfig())
			load := startClients(t, url, roots, 3)

			firstSerial := parseOne(t, first.ServingCert).SerialNumber
			secondSerial := parseOne(t, second.ServingCert).SerialNumber
			require.Eventually(t, func() bool { return load.sawSerial(firstSerial) }, waitFor, pollInterval)

			require.NoError(t, second.WriteFiles(dir))
			require.Eventually(t, func() bool { return load.sawSerial(secondSerial) }, waitFor, pollInterval,
				"clients never saw the rotated certificate")
			before := load.requests.Load()
			require.Eventually(t, func() bool { return load.requests.Load() > before+20 }, waitFor, pollInterval)

			load.stop()
			assert.Empty(t, load.errors(), "no request may fail while certificates rotate")
			assert.Equal(t, uint64(1), r.Reloads())
			assert.Equal(t, secondSerial, r.Leaf().SerialNumber)
			assert.Contains(t, logs.String(), "serving certificate loaded")
		})
	}
}

// TestReloaderKeepsServingOnBadRewrite writes broken pairs and checks that
// the previous certificate stays in service, each failure is logged and
// counted once, and a good pair afterwards is picked up.
func TestReloaderKeepsServingOnBadRewrite(t *testing.T) {
	good := generateLoopback(t)
	other := generateLoopback(t)
	tests := []struct {
		name    string
		write   func(t *testing.T, dir string)
		wantLog string
	}{
		{
			name: "corrupt certificate",
			write: func(t *testing.T, dir string) {
				writeFile(t, dir, CertFile, []byte("-----BEGIN CERTIFICATE-----\ngarbage"))
			},
			wantLog: "loading key pair",
		},
		{
			name:    "truncated key",
			write:   func(t *testing.T, dir string) { writeFile(t, dir, KeyFile, good.ServingKey[:40]) },
			wantLog: "loading key pair",
		},
		{
			name:    "certificate of another key (half-written rotation)",
			write:   func(t *testing.T, dir string) { writeFile(t, dir, CertFile, other.ServingCert) },
			wantLog: "private key does not match public key",
		},
		{
			name:    "key file removed",
			write:   func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, KeyFile))) },
			wantLog: "reading serving key",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, good.WriteFiles(dir))
			logs := &syncBuffer{}
			r := startReloader(t, dir, logs)
			var reported atomic.Int32
			r.OnError(func(err error) {
				assert.Contains(t, err.Error(), dir, "the error names the files")
				reported.Add(1)
			})
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(good.CACert)
			url := serveTLS(t, r.TLSConfig())

			tc.write(t, dir)
			require.Eventually(t, func() bool { return r.Failures() == 1 }, waitFor, pollInterval)
			time.Sleep(10 * pollInterval) // more polls of the same broken content
			assert.Equal(t, uint64(1), r.Failures(), "the same broken content is counted once")
			assert.Equal(t, int32(1), reported.Load())
			assert.Contains(t, logs.String(), tc.wantLog)
			assert.Contains(t, logs.String(), "still serving the previous one")

			serial, err := fetchSerial(url, roots)
			require.NoError(t, err, "the previous certificate is still served")
			assert.Equal(t, parseOne(t, good.ServingCert).SerialNumber, serial)

			// A complete, valid pair afterwards is picked up.
			require.NoError(t, other.WriteFiles(dir))
			require.Eventually(t, func() bool { return r.Reloads() == 1 }, waitFor, pollInterval)
			assert.Equal(t, parseOne(t, other.ServingCert).SerialNumber, r.Leaf().SerialNumber)
		})
	}
}

// TestReloaderFollowsSecretVolumeSwap mimics the kubelet's atomic writer: the
// files are symlinks through `..data`, and an update swaps `..data` to a new
// timestamped directory in one rename.
func TestReloaderFollowsSecretVolumeSwap(t *testing.T) {
	dir := t.TempDir()
	first, second := generateLoopback(t), generateLoopback(t)
	writeVersion := func(version string, b *Bundle) {
		require.NoError(t, b.WriteFiles(filepath.Join(dir, version)))
		tmpLink := filepath.Join(dir, "..data_tmp")
		require.NoError(t, os.Symlink(version, tmpLink))
		require.NoError(t, os.Rename(tmpLink, filepath.Join(dir, "..data")))
	}
	writeVersion("..2026_11_21_12_00_00.1", first)
	for _, name := range []string{CertFile, KeyFile, CACertFile} {
		require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
	}
	r := startReloader(t, dir, &syncBuffer{})
	require.Equal(t, parseOne(t, first.ServingCert).SerialNumber, r.Leaf().SerialNumber)

	writeVersion("..2026_11_21_12_01_00.2", second)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "..2026_11_21_12_00_00.1")))
	require.Eventually(t, func() bool { return r.Reloads() == 1 }, waitFor, pollInterval)
	assert.Equal(t, parseOne(t, second.ServingCert).SerialNumber, r.Leaf().SerialNumber)
	assert.Zero(t, r.Failures())
}

// TestReloaderToleratesRenameGap: a writer replaces the key, and the poll
// lands before it replaces the certificate. The one retry after a short wait
// sees the complete pair, so a normal rotation is not reported as a failure;
// a pair still broken after the wait is.
func TestReloaderToleratesRenameGap(t *testing.T) {
	tests := []struct {
		name         string
		finishWrite  bool
		wantFailures uint64
		wantReloads  uint64
	}{
		{"certificate lands during the wait", true, 0, 1},
		{"certificate never lands", false, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first, second := generateLoopback(t), generateLoopback(t)
			require.NoError(t, first.WriteFiles(dir))
			r, err := NewReloader(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile), pollInterval, nil)
			require.NoError(t, err)
			waited := 0
			r.sleep = func(time.Duration) {
				waited++
				if tc.finishWrite {
					writeFile(t, dir, CertFile, second.ServingCert)
				}
			}
			writeFile(t, dir, KeyFile, second.ServingKey) // first half of the rotation
			r.check()
			assert.Equal(t, 1, waited)
			assert.Equal(t, tc.wantFailures, r.Failures())
			assert.Equal(t, tc.wantReloads, r.Reloads())
			r.check() // nothing new: no second wait, no second count
			assert.Equal(t, 1, waited)
			assert.Equal(t, tc.wantFailures, r.Failures())
		})
	}
}

func TestReloaderOnReload(t *testing.T) {
	dir := t.TempDir()
	first, second := generateLoopback(t), generateLoopback(t)
	require.NoError(t, first.WriteFiles(dir))
	r := startReloader(t, dir, nil)

	var mu sync.Mutex
	var seen []*big.Int
	r.OnReload(func(c *x509.Certificate) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c.SerialNumber)
	})
	time.Sleep(5 * pollInterval)
	mu.Lock()
	assert.Empty(t, seen, "not called for the initial load or unchanged files")
	mu.Unlock()
	assert.Equal(t, parseOne(t, first.ServingCert).SerialNumber, r.Leaf().SerialNumber)

	require.NoError(t, second.WriteFiles(dir))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 }, waitFor, pollInterval)
	time.Sleep(5 * pollInterval)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []*big.Int{parseOne(t, second.ServingCert).SerialNumber}, seen, "called once per reload")
}

func TestNewReloaderErrors(t *testing.T) {
	good, other := generateLoopback(t), generateLoopback(t)
	tests := []struct {
		name    string
		cert    []byte // nil: file absent
		key     []byte
		wantErr string
	}{
		{"no certificate file", nil, good.ServingKey, "reading serving certificate"},
		{"no key file", good.ServingCert, nil, "reading serving key"},
		{"garbage certificate", []byte("garbage"), good.ServingKey, "loading key pair"},
		{"mismatched pair", other.ServingCert, good.ServingKey, "does not match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.cert != nil {
				writeFile(t, dir, CertFile, tc.cert)
			}
			if tc.key != nil {
				writeFile(t, dir, KeyFile, tc.key)
			}
			r, err := NewReloader(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile), pollInterval, nil)
			require.Error(t, err)
			assert.Nil(t, r)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Contains(t, err.Error(), dir, "the error names the file")
		})
	}
}

func TestTLSConfigRefusesOldProtocols(t *testing.T) {
	dir := t.TempDir()
	b := generateLoopback(t)
	require.NoError(t, b.WriteFiles(dir))
	r := startReloader(t, dir, nil)
	cfg := r.TLSConfig()
	assert.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)

	url := serveTLS(t, cfg)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(b.CACert)
	tests := []struct {
		name    string
		max     uint16
		wantErr bool
	}{
		{"TLS 1.1 refused", tls.VersionTLS11, true},
		{"TLS 1.2 accepted", tls.VersionTLS12, false},
		{"TLS 1.3 accepted", tls.VersionTLS13, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", url[len("https://"):], &tls.Config{
				RootCAs: roots, MinVersion: tls.VersionTLS10, MaxVersion: tc.max, ServerName: "127.0.0.1",
			})
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.max, conn.ConnectionState().Version)
			require.NoError(t, conn.Close())
		})
	}
}

// --- helpers ---

func generateLoopback(t *testing.T) *Bundle {
	t.Helper()
	b, err := Generate([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now())
	require.NoError(t, err)
	return b
}

func startReloader(t *testing.T, dir string, logs io.Writer) *Reloader {
	t.Helper()
	var log *slog.Logger
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, nil))
	}
	r, err := NewReloader(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile), pollInterval, log)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.Start(ctx)
	r.Start(ctx) // idempotent
	return r
}

func writeFile(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
}

// serveTLS serves a handler on 127.0.0.1 with cfg and returns its URL.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		ReadHeaderTimeout: time.Second,
		ErrorLog:          nil,
	}
	go func() { _ = srv.Serve(tls.NewListener(ln, cfg)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String()
}

// fetchSerial makes one request on a new connection and returns the serial
// of the certificate the server presented.
func fetchSerial(url string, roots *x509.CertPool) (*big.Int, error) {
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true, // every request is a new handshake
		},
	}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber, nil
}

type clientLoad struct {
	requests atomic.Int64
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	serials  map[string]bool
	errs     []error
}

// startClients keeps n clients making requests, each on a new TLS
// connection, until stop.
func startClients(t *testing.T, url string, roots *x509.CertPool, n int) *clientLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &clientLoad{cancel: cancel, serials: map[string]bool{}}
	t.Cleanup(l.stop)
	for range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				serial, err := fetchSerial(url, roots)
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, err)
				} else {
					l.serials[serial.String()] = true
				}
				l.mu.Unlock()
				l.requests.Add(1)
			}
		}()
	}
	return l
}

func (l *clientLoad) stop() { l.cancel(); l.wg.Wait() }

func (l *clientLoad) sawSerial(s *big.Int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.serials[s.String()]
}

func (l *clientLoad) errors() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// syncBuffer is a bytes.Buffer safe for the logger goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
