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
	// The real node's identities (package node): its kubelet
	// (system:node:<NodeName> in system:nodes, which the Node authorizer
	// and NodeRestriction admit), kube-proxy (system:kube-proxy, bound to
	// system:node-proxier by RBAC's bootstrap policy) and CoreDNS
	// (system:coredns, given a ClusterRole when the node starts).
	NodeToken, KubeProxyToken, CoreDNSToken string
	// KubeletClientCert and KubeletClientKey are the apiserver's client
	// certificate towards kubelets (logs, exec, port-forward), in
	// system:masters; kubelets trust CAFile for client certificates.
	KubeletClientCert, KubeletClientKey string
}

// NodeName is the name the real node registers under.
const NodeName = "berth-node"

// writePKI writes the cluster's key material into dir; extraIPs are more
// addresses the apiserver's certificate covers (the real node's gateway,
// which pods reach it at).
func writePKI(dir string, extraIPs ...net.IP) (*pki, error) {
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
		IPAddresses: append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, extraIPs...),
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
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
	p.KubeletClientCert, p.KubeletClientKey = filepath.Join(dir, "kubelet-client.crt"), filepath.Join(dir, "kubelet-client.key")
	clientCert, clientKey, err := issueClientCert(ca, caKey, "kube-apiserver-kubelet-client", "system:masters", now)
	if err != nil {
		return nil, err
	}
	for _, tok := range []*string{&p.AdminToken, &p.SchedulerToken, &p.ControllerManagerToken, &p.SchedulerPluginsToken, &p.NodeToken, &p.KubeProxyToken, &p.CoreDNSToken} {
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
		p.AdminToken, p.SchedulerToken, p.ControllerManagerToken, p.SchedulerPluginsToken) +
		fmt.Sprintf("%s,system:node:%s,kubelet,\"system:nodes\"\n%s,system:kube-proxy,kube-proxy\n%s,system:coredns,coredns\n",
			p.NodeToken, NodeName, p.KubeProxyToken, p.CoreDNSToken)
	files := map[string][]byte{
		p.CAFile:            p.CAPEM,
		p.CertFile:          pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		p.KeyFile:           srvKeyPEM,
		p.SAKeyFile:         saKeyPEM,
		p.TokensFile:        []byte(tokens),
		p.KubeletClientCert: clientCert,
		p.KubeletClientKey:  clientKey,
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

// issueClientCert signs a client certificate for cn in group org.
func issueClientCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn, org string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{org}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = ecKeyPEM(key); err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}
