// Package certmanager tests the cert-manager overlay against cert-manager's
// own Go API types (github.com/cert-manager/cert-manager v1.20.0): every
// Issuer and Certificate it renders decodes strictly into them, and the
// chain they form issues the certificate the webhook serves with.
package certmanager

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	cmacme "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const (
	namespace  = "berth-system"
	deployment = "berth-webhook"
	service    = "berth-webhook"
)

type doc struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	raw []byte // JSON
}

// render runs `kubectl kustomize` on this overlay (what `kubectl apply -k`
// applies) and returns its objects as JSON.
func render(t *testing.T) []doc {
	t.Helper()
	kubectl, err := filepath.Abs(filepath.Join("..", "..", "..", "bin", "k8s-v1.34.4", "kubectl"))
	if _, statErr := os.Stat(kubectl); err != nil || statErr != nil {
		kubectl, err = exec.LookPath("kubectl")
	}
	require.NoError(t, err, "this test renders the overlay with `kubectl kustomize`; run `make deps` or install kubectl (>= 1.27)")
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", ".")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize: %s", stderr.String())
	var docs []doc
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(b)
		require.NoError(t, err)
		var d doc
		require.NoError(t, yaml.Unmarshal(js, &d))
		d.raw = js
		docs = append(docs, d)
	}
	require.NotEmpty(t, docs)
	return docs
}

// strict decodes JSON into out and fails on unknown or duplicate fields
// and on case-insensitive matches, as the apiserver's strict field
// validation does.
func strict(t *testing.T, js []byte, out any) {
	t.Helper()
	strictErrs, err := sigsjson.UnmarshalStrict(js, out)
	require.NoError(t, err)
	require.Empty(t, strictErrs, "%s", js)
}

// overlay is the rendered overlay decoded: cert-manager's objects into
// cert-manager's types, the rest into Kubernetes' own.
type overlay struct {
	issuers      map[string]cmv1.Issuer
	certificates map[string]cmv1.Certificate
	deployment   *appsv1.Deployment
	mutating     []admissionregistrationv1.MutatingWebhookConfiguration
	validating   []admissionregistrationv1.ValidatingWebhookConfiguration
}

func decodeOverlay(t *testing.T) overlay {
	t.Helper()
	o := overlay{issuers: map[string]cmv1.Issuer{}, certificates: map[string]cmv1.Certificate{}}
	for _, d := range render(t) {
		switch d.Kind {
		case cmv1.IssuerKind:
			var iss cmv1.Issuer
			strict(t, d.raw, &iss)
			assert.Equal(t, cmv1.SchemeGroupVersion.String(), iss.APIVersion)
			o.issuers[iss.Name] = iss
		case cmv1.CertificateKind:
			var c cmv1.Certificate
			strict(t, d.raw, &c)
			assert.Equal(t, cmv1.SchemeGroupVersion.String(), c.APIVersion)
			o.certificates[c.Name] = c
		case "ClusterIssuer", "CertificateRequest", "Order", "Challenge":
			t.Errorf("the overlay renders a %s %s; it uses namespaced Issuers and Certificates only", d.Kind, d.Metadata.Name)
		case "Deployment":
			if d.Metadata.Name == deployment {
				o.deployment = &appsv1.Deployment{}
				strict(t, d.raw, o.deployment)
			}
		case "MutatingWebhookConfiguration":
			var m admissionregistrationv1.MutatingWebhookConfiguration
			strict(t, d.raw, &m)
			o.mutating = append(o.mutating, m)
		case "ValidatingWebhookConfiguration":
			var v admissionregistrationv1.ValidatingWebhookConfiguration
			strict(t, d.raw, &v)
			o.validating = append(o.validating, v)
		}
	}
	require.NotNil(t, o.deployment, "the overlay renders no Deployment %s", deployment)
	return o
}

// issuerOf follows a Certificate's issuerRef to an Issuer of the overlay.
func (o overlay) issuerOf(t *testing.T, c cmv1.Certificate) cmv1.Issuer {
	t.Helper()
	ref := c.Spec.IssuerRef
	assert.Equal(t, "cert-manager.io", ref.Group, "Certificate %s", c.Name)
	assert.Equal(t, cmv1.IssuerKind, ref.Kind, "Certificate %s", c.Name)
	iss, ok := o.issuers[ref.Name]
	require.True(t, ok, "Certificate %s: issuerRef %s is not an Issuer of the overlay", c.Name, ref.Name)
	assert.Equal(t, c.Namespace, iss.Namespace, "Certificate %s and its Issuer", c.Name)
	return iss
}

// The overlay's cert-manager objects are exactly cert-manager v1's Issuer
// and Certificate, and form one chain: a self-signed Issuer signs berth's
// CA, a CA Issuer over that CA's Secret signs the serving certificate, whose
// Secret the Deployment mounts and whose CA cainjector copies into both
// webhook configurations.
func TestCertManagerOverlayDecodesIntoCertManagerTypes(t *testing.T) {
	o := decodeOverlay(t)
	require.Len(t, o.issuers, 2)
	require.Len(t, o.certificates, 2)
	for _, iss := range o.issuers {
		assert.Equal(t, namespace, iss.Namespace, "Issuer %s", iss.Name)
		assert.Nil(t, iss.Spec.ACME, "Issuer %s: no ACME (berth's webhook is not public)", iss.Name)
	}

	serving, ok := o.certificates["berth-webhook"]
	require.True(t, ok, "no Certificate berth-webhook")
	assert.Equal(t, namespace, serving.Namespace)
	assert.False(t, serving.Spec.IsCA)
	assert.Equal(t, []string{service + "." + namespace + ".svc", service + "." + namespace + ".svc.cluster.local"}, serving.Spec.DNSNames)
	assert.Contains(t, serving.Spec.Usages, cmv1.UsageServerAuth)
	require.NotNil(t, serving.Spec.PrivateKey)
	assert.Equal(t, cmv1.ECDSAKeyAlgorithm, serving.Spec.PrivateKey.Algorithm)
	assert.Equal(t, cmv1.RotationPolicyAlways, serving.Spec.PrivateKey.RotationPolicy)
	require.NotNil(t, serving.Spec.Duration)
	require.NotNil(t, serving.Spec.RenewBefore)
	assert.Less(t, serving.Spec.RenewBefore.Duration, serving.Spec.Duration.Duration)

	caIssuer := o.issuerOf(t, serving)
	require.NotNil(t, caIssuer.Spec.CA, "Issuer %s signs with a CA", caIssuer.Name)
	var ca *cmv1.Certificate
	for _, c := range o.certificates {
		if c.Spec.SecretName == caIssuer.Spec.CA.SecretName {
			ca = &c
		}
	}
	require.NotNil(t, ca, "no Certificate writes the CA Secret %s of Issuer %s", caIssuer.Spec.CA.SecretName, caIssuer.Name)
	assert.True(t, ca.Spec.IsCA, "Certificate %s", ca.Name)
	root := o.issuerOf(t, *ca)
	assert.NotNil(t, root.Spec.SelfSigned, "Issuer %s of the CA is self-signed", root.Name)
	require.NotNil(t, ca.Spec.Duration)
	assert.Greater(t, ca.Spec.Duration.Duration, serving.Spec.Duration.Duration, "the CA outlives the serving certificates it signs")

	// The Deployment mounts the serving certificate's Secret.
	var mounted []string
	for _, v := range o.deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			mounted = append(mounted, v.Secret.SecretName)
		}
	}
	assert.Contains(t, mounted, serving.Spec.SecretName)

	// cainjector fills both configurations from the serving Certificate,
	// and every webhook calls the Service the certificate names.
	require.Len(t, o.mutating, 1)
	require.Len(t, o.validating, 1)
	inject := serving.Namespace + "/" + serving.Name
	assert.Equal(t, inject, o.mutating[0].Annotations[cmv1.WantInjectAnnotation])
	assert.Equal(t, inject, o.validating[0].Annotations[cmv1.WantInjectAnnotation])
	var refs []*admissionregistrationv1.ServiceReference
	for _, w := range o.mutating[0].Webhooks {
		refs = append(refs, w.ClientConfig.Service)
	}
	for _, w := range o.validating[0].Webhooks {
		refs = append(refs, w.ClientConfig.Service)
	}
	for _, ref := range refs {
		require.NotNil(t, ref)
		assert.Contains(t, serving.Spec.DNSNames, ref.Name+"."+ref.Namespace+".svc")
	}
}

// Strict decoding is what catches a misspelt field: the same Certificate
// with one unknown field is refused.
func TestCertManagerStrictDecodingRefusesUnknownFields(t *testing.T) {
	js := []byte(`{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"x"},
		"spec":{"secretName":"s","issuerRef":{"name":"i"},"dnsName":["a.svc"]}}`)
	var c cmv1.Certificate
	strictErrs, err := sigsjson.UnmarshalStrict(js, &c)
	require.NoError(t, err)
	require.Len(t, strictErrs, 1)
	assert.Equal(t, `unknown field "spec.dnsName"`, strictErrs[0].Error())
	// The types are cert-manager's: an issuerRef is its ObjectReference and
	// an ACME issuer its own package's type.
	assert.Equal(t, cmmeta.ObjectReference{Name: "i"}, c.Spec.IssuerRef)
	var acme *cmacme.ACMEIssuer
	assert.IsType(t, acme, cmv1.IssuerSpec{}.ACME)
}
