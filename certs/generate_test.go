package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestGenerateVerifiesForNamesAndIPs(t *testing.T) {
	tests := []struct {
		name      string
		dnsNames  []string
		ips       []net.IP
		verify    []string // host names / IPs that must verify
		notVerify []string // ones that must not
	}{
		{
			name:      "service DNS names",
			dnsNames:  []string{"berth-webhook.berth-system.svc", "berth-webhook.berth-system.svc.cluster.local"},
			verify:    []string{"berth-webhook.berth-system.svc", "berth-webhook.berth-system.svc.cluster.local"},
			notVerify: []string{"other.berth-system.svc", "127.0.0.1"},
		},
		{
			name:      "loopback IPs only",
			ips:       []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
			verify:    []string{"127.0.0.1", "::1"},
			notVerify: []string{"127.0.0.2", "localhost"},
		},
		{
			name:      "names and IPs",
			dnsNames:  []string{"localhost"},
			ips:       []net.IP{net.ParseIP("127.0.0.1")},
			verify:    []string{"localhost", "127.0.0.1"},
			notVerify: []string{"berth-webhook.berth-system.svc"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Generate(tc.dnsNames, tc.ips, 24*time.Hour, testNow)
			require.NoError(t, err)

			pool := x509.NewCertPool()
			require.True(t, pool.AppendCertsFromPEM(b.CACert))
			leaf := parseOne(t, b.ServingCert)
			at := testNow.Add(time.Hour)
			for _, host := range tc.verify {
				_, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: at})
				assert.NoError(t, err, "serving certificate must verify for %s", host)
			}
			for _, host := range tc.notVerify {
				_, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: at})
				assert.Error(t, err, "serving certificate must not verify for %s", host)
			}
			// The key in the bundle is the key of the certificate.
			_, err = tls.X509KeyPair(b.ServingCert, b.ServingKey)
			assert.NoError(t, err)
		})
	}
}

func TestGenerateKeysAndLifetimes(t *testing.T) {
	validity := 90 * 24 * time.Hour
	b, err := Generate([]string{"berth-webhook.berth-system.svc"}, nil, validity, testNow)
	require.NoError(t, err)

	ca, leaf := parseOne(t, b.CACert), parseOne(t, b.ServingCert)
	for name, c := range map[string]*x509.Certificate{"ca": ca, "leaf": leaf} {
		key, ok := c.PublicKey.(*ecdsa.PublicKey)
		require.True(t, ok, "%s key must be ECDSA, got %T", name, c.PublicKey)
		assert.Equal(t, elliptic.P256(), key.Curve, name)
	}
	assert.True(t, ca.IsCA)
	assert.False(t, leaf.IsCA)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, leaf.ExtKeyUsage)
	assert.Equal(t, testNow.Add(validity).Unix(), leaf.NotAfter.Unix())
	assert.True(t, ca.NotAfter.After(leaf.NotAfter), "the CA must outlive the serving certificate")
	assert.True(t, leaf.NotBefore.Before(testNow), "NotBefore is backdated for clock skew")
	assert.NotEqual(t, ca.SerialNumber, leaf.SerialNumber)

	// A second bundle has its own CA: nothing is cached or shared.
	other, err := Generate([]string{"berth-webhook.berth-system.svc"}, nil, validity, testNow)
	require.NoError(t, err)
	assert.NotEqual(t, b.CACert, other.CACert)
}

func TestGenerateRejectsBadInput(t *testing.T) {
	tests := []struct {
		name     string
		dnsNames []string
		ips      []net.IP
		validity time.Duration
		wantErr  string
	}{
		{"no names", nil, nil, time.Hour, "at least one"},
		{"zero validity", []string{"a.svc"}, nil, 0, "validity must be positive"},
		{"negative validity", []string{"a.svc"}, nil, -time.Hour, "validity must be positive"},
		{"validity that would overflow the CA lifetime", []string{"a.svc"}, nil, time.Duration(1 << 62), "is longer than"},
		{"empty DNS name", []string{"a.svc", ""}, nil, time.Hour, `dnsNames[1] ""`},
		{"DNS name with space", []string{"a b"}, nil, time.Hour, `dnsNames[0] "a b"`},
		{"URL instead of name", []string{"https://a.svc"}, nil, time.Hour, "is not a DNS name"},
		{"malformed IP", nil, []net.IP{{1, 2, 3}}, time.Hour, "ips[0] is not a valid IP"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Generate(tc.dnsNames, tc.ips, tc.validity, testNow)
			require.Error(t, err)
			assert.Nil(t, b)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestRenewServingKeepsCA(t *testing.T) {
	b, err := Generate([]string{"a.svc"}, nil, time.Hour, testNow)
	require.NoError(t, err)
	oldCA, oldLeaf := append([]byte(nil), b.CACert...), parseOne(t, b.ServingCert)

	later := testNow.Add(30 * time.Minute)
	require.NoError(t, b.RenewServing([]string{"a.svc", "b.svc"}, nil, time.Hour, later))
	assert.Equal(t, oldCA, b.CACert, "renewal keeps the CA so caBundle stays valid")
	leaf := parseOne(t, b.ServingCert)
	assert.NotEqual(t, oldLeaf.SerialNumber, leaf.SerialNumber)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(b.CACert))
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "b.svc", Roots: pool, CurrentTime: later})
	assert.NoError(t, err)

	// The CA lives 4h; a serving certificate outliving it is refused.
	err = b.RenewServing([]string{"a.svc"}, nil, 10*time.Hour, later)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "generate a new bundle")

	broken := &Bundle{CACert: []byte("nope"), CAKey: b.CAKey}
	assert.Error(t, broken.RenewServing([]string{"a.svc"}, nil, time.Hour, later))
}

func TestParseCertificates(t *testing.T) {
	a, err := Generate([]string{"a.svc"}, nil, time.Hour, testNow)
	require.NoError(t, err)
	b, err := Generate([]string{"b.svc"}, nil, time.Hour, testNow)
	require.NoError(t, err)

	tests := []struct {
		name    string
		in      []byte
		want    int
		wantErr string
	}{
		{"one CA", a.CACert, 1, ""},
		{"old and new CA during rotation", append(append([]byte{}, a.CACert...), b.CACert...), 2, ""},
		{"key blocks are ignored", append(append([]byte{}, a.CAKey...), a.CACert...), 1, ""},
		{"empty", nil, 0, "no PEM CERTIFICATE"},
		{"only a key", a.CAKey, 0, "no PEM CERTIFICATE"},
		{"garbage", []byte("hello"), 0, "not a PEM block"},
		{"certificate then garbage", append(append([]byte{}, a.CACert...), []byte("junk")...), 0, "not a PEM block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCertificates(tc.in)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, got, tc.want)
		})
	}
}

func TestWriteFiles(t *testing.T) {
	b, err := Generate([]string{"a.svc"}, nil, time.Hour, testNow)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "nested", "certs")

	require.NoError(t, b.WriteFiles(dir))
	// Overwriting an existing set works the same way.
	b2, err := Generate([]string{"a.svc"}, nil, time.Hour, testNow)
	require.NoError(t, err)
	require.NoError(t, b2.WriteFiles(dir))

	want := map[string]struct {
		data []byte
		mode os.FileMode
	}{
		CACertFile: {b2.CACert, 0o644},
		CertFile:   {b2.ServingCert, 0o644},
		KeyFile:    {b2.ServingKey, 0o600},
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{CACertFile, CertFile, KeyFile}, names, "no temporary files are left behind")
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, w.data, got, name)
		info, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, w.mode, info.Mode().Perm(), name)
	}
}

func TestWriteFilesRejectsIncompleteBundle(t *testing.T) {
	dir := t.TempDir()
	var nilBundle *Bundle
	assert.ErrorContains(t, nilBundle.WriteFiles(dir), "nil bundle")
	assert.ErrorContains(t, (&Bundle{CACert: []byte("x")}).WriteFiles(dir), "no data for tls.key")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "an incomplete bundle writes nothing")
}

func parseOne(t *testing.T, pemData []byte) *x509.Certificate {
	t.Helper()
	certs, err := ParseCertificates(pemData)
	require.NoError(t, err)
	require.Len(t, certs, 1)
	return certs[0]
}
