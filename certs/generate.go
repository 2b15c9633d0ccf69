// Package certs provides the webhook's serving certificates without
// cert-manager: a self-signed CA plus a serving certificate (for the local
// control plane, the demo and self-managed installs), written atomically to
// files, and a Reloader that serves the key pair from those files and picks up
// rotations without a restart.
//
// It uses the standard library only, so the e2e harness, the CLI and the
// webhook can all share it without pulling in client-go.
package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// Bundle is a CA plus a serving certificate, PEM encoded.
type Bundle struct {
	CACert, CAKey, ServingCert, ServingKey []byte
}

const (
	// caLifetimeFactor makes the CA outlive the serving certificate, so a
	// serving certificate can be re-issued (RenewServing) several times
	// before the caBundle registered with the apiserver has to change.
	caLifetimeFactor = 4
	// clockSkew backdates NotBefore: an apiserver whose clock runs a little
	// behind the webhook's must not reject a freshly minted certificate.
	clockSkew = 5 * time.Minute
	// maxValidity bounds the serving certificate's lifetime (20 years).
	maxValidity = 20 * 365 * 24 * time.Hour
	// maxDNSNameLength is the limit of RFC 1035 (253 characters in text form).
	maxDNSNameLength = 253
)

// Generate creates a self-signed CA and a serving certificate for the DNS
// names and IPs (ECDSA P-256, serving cert valid `validity`, CA four times
// longer), for the local control plane, the demo and users without
// cert-manager. now is a parameter so that callers and tests control time.
func Generate(dnsNames []string, ips []net.IP, validity time.Duration, now time.Time) (*Bundle, error) {
	if err := checkRequest(dnsNames, ips, validity); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generating the CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "berth-webhook-ca", Organization: []string{"berth"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caLifetimeFactor * validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		// The CA only ever signs leaf certificates.
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("certs: self-signing the CA: %w", err)
	}
	caKeyPEM, err := encodeKey(caKey)
	if err != nil {
		return nil, err
	}
	b := &Bundle{CACert: pemBlock("CERTIFICATE", caDER), CAKey: caKeyPEM}
	if err := b.RenewServing(dnsNames, ips, validity, now); err != nil {
		return nil, err
	}
	return b, nil
}

// RenewServing replaces the serving certificate and key with new ones signed
// by the bundle's CA. The CA is kept, so webhook configurations whose
// caBundle holds it keep trusting the webhook: rotation without touching the
// apiserver side. It fails when the CA would expire before the new serving
// certificate, because such a certificate would stop verifying early.
func (b *Bundle) RenewServing(dnsNames []string, ips []net.IP, validity time.Duration, now time.Time) error {
	if err := checkRequest(dnsNames, ips, validity); err != nil {
		return err
	}
	ca, caKey, err := b.parseCA()
	if err != nil {
		return err
	}
	notAfter := now.Add(validity)
	if ca.NotAfter.Before(notAfter) {
		return fmt.Errorf("certs: the CA expires at %s, before a serving certificate valid until %s would; generate a new bundle",
			ca.NotAfter.UTC().Format(time.RFC3339), notAfter.UTC().Format(time.RFC3339))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: generating the serving key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	commonName := ""
	if len(dnsNames) > 0 {
		commonName = dnsNames[0]
	} else {
		commonName = ips[0].String()
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"berth"}},
		DNSNames:              append([]string(nil), dnsNames...),
		IPAddresses:           append([]net.IP(nil), ips...),
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("certs: signing the serving certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	b.ServingCert, b.ServingKey = pemBlock("CERTIFICATE", der), keyPEM
	return nil
}

// checkRequest rejects what would produce an unusable certificate, with the
// field and the fix in the message.
func checkRequest(dnsNames []string, ips []net.IP, validity time.Duration) error {
	if len(dnsNames) == 0 && len(ips) == 0 {
		return errors.New("certs: no DNS names and no IPs given; the serving certificate needs at least one, e.g. berth-webhook.berth-system.svc or 127.0.0.1")
	}
	if validity <= 0 {
		return fmt.Errorf("certs: validity must be positive, got %s; use e.g. 8760h for a year", validity)
	}
	if validity > maxValidity {
		// Also keeps caLifetimeFactor*validity far from time.Duration overflow.
		return fmt.Errorf("certs: validity %s is longer than %s; use a shorter one and rotate", validity, maxValidity)
	}
	for i, name := range dnsNames {
		if name == "" || len(name) > maxDNSNameLength || strings.ContainsAny(name, " \t\r\n/:") {
			return fmt.Errorf("certs: dnsNames[%d] %q is not a DNS name; use a host name like berth-webhook.berth-system.svc", i, name)
		}
	}
	for i, ip := range ips {
		if ip.To16() == nil {
			return fmt.Errorf("certs: ips[%d] is not a valid IP address (length %d); use e.g. net.ParseIP(\"127.0.0.1\")", i, len(ip))
		}
	}
	return nil
}

// parseCA decodes the bundle's CA certificate and key.
func (b *Bundle) parseCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certs, err := ParseCertificates(b.CACert)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: bundle CACert: %w", err)
	}
	block, _ := pem.Decode(b.CAKey)
	if block == nil {
		return nil, nil, errors.New("certs: bundle CAKey holds no PEM block; regenerate the bundle")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: bundle CAKey: %w", err)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("certs: bundle CAKey is a %T, want an ECDSA key; regenerate the bundle", parsed)
	}
	return certs[0], key, nil
}

// ParseCertificates decodes every CERTIFICATE block of a PEM bundle (a
// caBundle may carry an old and a new CA during rotation). It fails when
// there is none, or when a block does not parse.
func ParseCertificates(pemData []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := bytes.TrimSpace(pemData)
	for len(rest) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("PEM data has trailing bytes that are not a PEM block")
		}
		rest = bytes.TrimSpace(rest)
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block found")
	}
	return out, nil
}

func randomSerial() (*big.Int, error) {
	// 128 random bits, as RFC 5280 recommends for unpredictable serials.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("certs: generating a serial number: %w", err)
	}
	return serial, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encoding a private key: %w", err)
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
