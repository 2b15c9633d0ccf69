package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material of one throw-away cluster: a CA, the apiserver's
// serving certificate (signed by it, for 127.0.0.1 and the in-cluster names),
// the service-account signing key, and bearer tokens for each identity.
type pki struct {
	CAFile, CertFile, KeyFile string
	SAKeyFile                 string
	TokensFile                string
	CAPEM                     []byte

	AdminToken, SchedulerToken, ControllerManagerToken string
	// SchedulerPluginsToken is shared by the scheduler-plugins scheduler
	// and its controller (see StartGangScheduler).
	SchedulerPluginsToken string
}

func writePKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "berth-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// 10.0.0.1 is the "kubernetes" service IP of serviceCIDR: in-cluster
		// clients of a kind cluster dial it; here it is only a name.
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}

	p := &pki{
		CAFile:     filepath.Join(dir, "ca.crt"),
		CertFile:   filepath.Join(dir, "apiserver.crt"),
		KeyFile:    filepath.Join(dir, "apiserver.key"),
		SAKeyFile:  filepath.Join(dir, "sa.key"),
		TokensFile: filepath.Join(dir, "tokens.csv"),
		CAPEM:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}
	for _, tok := range []*string{&p.AdminToken, &p.SchedulerToken, &p.ControllerManagerToken, &p.SchedulerPluginsToken} {
		if *tok, err = randomToken(); err != nil {
			return nil, err
		}
	}
	srvKeyPEM, err := ecKeyPEM(srvKey)
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := ecKeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	// The controller-manager runs every controller with its own identity
	// (--use-service-account-credentials=false), so it needs more than the
	// bootstrap system:kube-controller-manager role: it gets system:masters.
	// The scheduler uses the bootstrap identity that RBAC already binds.
	// The scheduler-plugins scheduler and controller also read and write
	// PodGroups and ElasticQuotas, which no bootstrap role covers: in this
	// throw-away cluster they get system:masters rather than RBAC objects.
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,system:kube-scheduler,kube-scheduler\n%s,system:kube-controller-manager,kube-controller-manager,\"system:masters\"\n%s,scheduler-plugins,scheduler-plugins,\"system:masters\"\n",
		p.AdminToken, p.SchedulerToken, p.ControllerManagerToken, p.SchedulerPluginsToken)
	files := map[string][]byte{
		p.CAFile:     p.CAPEM,
		p.CertFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		p.KeyFile:    srvKeyPEM,
		p.SAKeyFile:  saKeyPEM,
		p.TokensFile: []byte(tokens),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
