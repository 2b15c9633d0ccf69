package certs

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParseCertificates: arbitrary bytes (a user-supplied caBundle) never
// panic, and a result is either certificates or an error, never neither.
func FuzzParseCertificates(f *testing.F) {
	b, err := Generate([]string{"a.svc"}, nil, time.Hour, testNow)
	require.NoError(f, err)
	f.Add(b.CACert)
	f.Add(append(append([]byte{}, b.CACert...), b.ServingCert...))
	f.Add(b.CAKey)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		certs, err := ParseCertificates(data)
		if err == nil {
			assert.NotEmpty(t, certs)
			for _, c := range certs {
				assert.NotNil(t, c)
			}
		} else {
			assert.Empty(t, certs)
		}
	})
}

// FuzzReloaderRewrite: whatever lands in the files, the Reloader never
// panics and keeps serving a certificate whose key it has.
func FuzzReloaderRewrite(f *testing.F) {
	good, err := Generate([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now())
	require.NoError(f, err)
	other, err := Generate([]string{"localhost"}, nil, time.Hour, time.Now())
	require.NoError(f, err)
	f.Add(other.ServingCert, other.ServingKey)
	f.Add(other.ServingCert, good.ServingKey)
	f.Add(good.CACert, good.CAKey)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte{}, []byte{})
	// One directory and Reloader for all inputs: an exec must be cheap (no
	// key generation, no fsync) or the fuzzer spends minutes minimizing.
	dir := f.TempDir()
	require.NoError(f, good.WriteFiles(dir))
	r, err := NewReloader(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile), time.Millisecond, nil)
	require.NoError(f, err)
	r.sleep = func(time.Duration) {}
	f.Fuzz(func(t *testing.T, certPEM, keyPEM []byte) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, CertFile), certPEM, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, KeyFile), keyPEM, 0o600))
		before := r.Reloads() + r.Failures()
		r.check()

		served, err := r.GetCertificate(nil)
		require.NoError(t, err)
		require.NotNil(t, served, "never serves nothing once it served")
		require.NotNil(t, served.Leaf)
		assert.LessOrEqual(t, r.Reloads()+r.Failures()-before, uint64(1), "one change is loaded or reported once")
	})
}
