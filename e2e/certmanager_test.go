package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	sigsjson "sigs.k8s.io/json"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/webhook/server"
)

// certManagerCRDs are the CRDs github.com/cert-manager/cert-manager's Helm
// chart installs, rendered by `make generate-cert-manager-crds`.
var certManagerCRDs = []string{
	"certificaterequests.cert-manager.io", "certificates.cert-manager.io", "challenges.acme.cert-manager.io",
	"clusterissuers.cert-manager.io", "issuers.cert-manager.io", "orders.acme.cert-manager.io",
}

// installCertManagerCRDs installs cert-manager's CRDs (idempotent) and
// waits until they are Established.
func installCertManagerCRDs(t *testing.T) {
	t.Helper()
	objs, err := install.ReadObjects(env.Path("e2e", "testdata", "cert-manager-crds"))
	require.NoError(t, err)
	names, err := env.Applier.InstallCRDs(ctxT(t, 2*time.Minute), objs, time.Minute)
	require.NoError(t, err, "the apiserver refused cert-manager's CRDs")
	assert.Equal(t, certManagerCRDs, names)
}

// renderOverlay runs `kubectl kustomize deploy/overlays/NAME` (what
// `kubectl apply -k` applies) and decodes its objects.
func renderOverlay(t *testing.T, name string) []install.Object {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(env.Binaries.Kubectl, "kustomize", env.Path("deploy", "overlays", name))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize deploy/overlays/%s: %s", name, stderr.String())
	objs, err := install.DecodeObjects(out, "deploy/overlays/"+name)
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	return objs
}

// createDryRun creates obj under another name with dryRun=All: the
// apiserver runs every check on it as a new object (schema, defaulting,
// admission) and stores nothing. (A dry-run apply under its own name would
// merge it with the suite's registration of the same configuration.)
func createDryRun(ctx context.Context, obj install.Object) error {
	res, err := env.Applier.Resource(obj.Unstructured)
	if err != nil {
		return err
	}
	o := obj.DeepCopy()
	o.SetName(obj.GetName() + "-dry-run")
	_, err = res.Create(ctx, o, metav1.CreateOptions{FieldManager: install.FieldManager, DryRun: []string{metav1.DryRunAll}})
	return err
}

// deleteApplied deletes what the test applied, namespace last, and waits
// until the namespace is gone so a later test can install berth-system
// again (the Helm install does).
func deleteApplied(t *testing.T, objs []install.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var namespaces []install.Object
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		if o.GetKind() == "Namespace" {
			namespaces = append(namespaces, o)
			continue
		}
		if res, err := env.Applier.Resource(o.Unstructured); err == nil {
			if err := res.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", o, err)
			}
		}
	}
	for _, ns := range namespaces {
		_ = env.Kube.CoreV1().Namespaces().Delete(ctx, ns.GetName(), metav1.DeleteOptions{})
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := env.Kube.CoreV1().Namespaces().Get(ctx, ns.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("namespace %s not deleted: %v", ns.GetName(), err)
		}
	}
}

// The cert-manager overlay is accepted by a real apiserver that serves
// cert-manager's own CRDs: cert-manager's schemas validate its Issuers and
// Certificates, and what the apiserver stores decodes strictly into
// cert-manager's Go types with the spec the overlay wrote. The two webhook
// configurations are dry-run (validated, not stored): stored, they would
// replace the suite's own registration of berth's webhook.
func TestCertManagerOverlayAppliesToRealAPIServer(t *testing.T) {
	installCertManagerCRDs(t)
	objs := renderOverlay(t, "cert-manager")
	var applied []install.Object
	t.Cleanup(func() { deleteApplied(t, applied) })

	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		ctx := ctxT(t, 30*time.Second)
		switch o.GetKind() {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			assert.NoError(t, createDryRun(ctx, o), "dry-run %s", o)
			assert.Equal(t, "berth-system/berth-webhook", o.GetAnnotations()[cmv1.WantInjectAnnotation], "%s", o)
			continue
		}
		got, err := env.Applier.Apply(ctx, o)
		if !assert.NoError(t, err, "the apiserver refused %s", o) {
			continue
		}
		applied = append(applied, o)
		assert.NotEmpty(t, got.GetUID(), "%s stored", o)
		if got.GetAPIVersion() != cmv1.SchemeGroupVersion.String() {
			continue
		}
		// Stored as cert-manager's types, strictly, with the overlay's spec.
		stored, err := got.MarshalJSON()
		require.NoError(t, err)
		local, err := o.MarshalJSON()
		require.NoError(t, err)
		switch o.GetKind() {
		case cmv1.IssuerKind:
			var s, l cmv1.Issuer
			strictDecode(t, stored, &s)
			strictDecode(t, local, &l)
			assert.Equal(t, l.Spec, s.Spec, "Issuer %s", o.GetName())
		case cmv1.CertificateKind:
			var s, l cmv1.Certificate
			strictDecode(t, stored, &s)
			strictDecode(t, local, &l)
			assert.Equal(t, l.Spec, s.Spec, "Certificate %s", o.GetName())
		default:
			t.Errorf("unexpected cert-manager kind %s", o)
		}
	}
	assert.Equal(t, 2, kinds[cmv1.IssuerKind], "kinds rendered: %v", kinds)
	assert.Equal(t, 2, kinds[cmv1.CertificateKind], "kinds rendered: %v", kinds)
	assert.Equal(t, 1, kinds["MutatingWebhookConfiguration"], "kinds rendered: %v", kinds)
	assert.Equal(t, 1, kinds["ValidatingWebhookConfiguration"], "kinds rendered: %v", kinds)
}

func strictDecode(t *testing.T, js []byte, out any) {
	t.Helper()
	strictErrs, err := sigsjson.UnmarshalStrict(js, out)
	require.NoError(t, err)
	require.Empty(t, strictErrs, "%s", js)
}

// certManagerVersion is the github.com/cert-manager/cert-manager go.mod
// pins; make deps builds its controller and CA injector into
// bin/cert-manager-<version>/ through hack/cert-manager-build.
const certManagerVersion = "v1.20.0"

var startCertManager sync.Once

// runCertManager starts cert-manager's controller and CA injector, built
// from the served module, next to the control plane (once per suite; they
// stop with it).
func runCertManager(t *testing.T) {
	t.Helper()
	installCertManagerCRDs(t)
	dir := env.Path("bin", "cert-manager-"+certManagerVersion)
	for _, name := range []string{"cert-manager-controller", "cert-manager-cainjector"} {
		_, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, "run `make deps`: it builds %s from github.com/cert-manager/cert-manager %s (hack/cert-manager-build)", name, certManagerVersion)
	}
	var err error
	startCertManager.Do(func() {
		for _, name := range []string{"cert-manager-controller", "cert-manager-cainjector"} {
			if _, err = env.Cluster.Supervise(context.Background(), name, filepath.Join(dir, name),
				[]string{"--kubeconfig", env.Cluster.KubeconfigPath}, nil); err != nil {
				return
			}
		}
	})
	require.NoError(t, err)
}

// certificateReady waits until cert-manager reports the Certificate Ready
// and returns it, decoded strictly into cert-manager's type.
func certificateReady(t *testing.T, namespace, name string) cmv1.Certificate {
	t.Helper()
	res := env.Applier.Dynamic.Resource(cmv1.SchemeGroupVersion.WithResource("certificates")).Namespace(namespace)
	var c cmv1.Certificate
	var last string
	err := wait.PollUntilContextTimeout(ctxT(t, 3*time.Minute), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		js, err := u.MarshalJSON()
		if err != nil {
			return false, err
		}
		c = cmv1.Certificate{}
		if strictErrs, err := sigsjson.UnmarshalStrict(js, &c); err != nil || len(strictErrs) > 0 {
			return false, fmt.Errorf("Certificate %s/%s does not decode strictly: %v %v", namespace, name, err, strictErrs)
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == cmv1.CertificateConditionReady {
				last = fmt.Sprintf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
				if cond.Status == cmmeta.ConditionTrue {
					return true, nil
				}
			}
		}
		return false, nil
	})
	require.NoError(t, err, "Certificate %s/%s not Ready (last: %s); cert-manager logs in %s", namespace, name, last, env.Cluster.RunDir)
	return c
}

// leafOf parses the Secret cert-manager wrote for a Certificate and checks
// that its tls.crt is signed by its ca.crt.
func leafOf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	require.NotNil(t, block, "Secret %s: no PEM in tls.crt", s.Name)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(s.Data["ca.crt"]), "Secret %s: no CA in ca.crt", s.Name)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.NoError(t, err, "Secret %s: tls.crt does not chain to ca.crt", s.Name)
	return leaf
}

// cert-manager's own controller and CA injector, built from the served
// module, run the cert-manager overlay on the local control plane: the
// self-signed root, berth's CA and the serving certificate are issued. A
// second certificate from the overlay's CA Issuer, for 127.0.0.1 (the
// apiserver calls the suite's webhooks by URL on loopback; the overlay's
// certificate names the Service, which no proxy routes here), is served by
// a berth-webhook process; cainjector fills caBundle of a webhook
// configuration from that Certificate, and the apiserver's admissions
// through it (failurePolicy Fail) succeed, where they failed before the
// injection.
func TestCertManagerIssuesTheWebhookCertificate(t *testing.T) {
	runCertManager(t)
	const ns = "berth-system"
	var applied []install.Object
	t.Cleanup(func() { deleteApplied(t, applied) })
	for _, o := range renderOverlay(t, "cert-manager") {
		if o.GetKind() == "Namespace" || o.GetAPIVersion() == cmv1.SchemeGroupVersion.String() {
			_, err := env.Applier.Apply(ctxT(t, 30*time.Second), o)
			require.NoError(t, err)
			applied = append(applied, o)
		}
	}
	// The e2e certificate, from the overlay's CA Issuer.
	overlayCert := certificateReady(t, ns, "berth-webhook")
	e2eCert := cmv1.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmv1.SchemeGroupVersion.String(), Kind: cmv1.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{Name: "berth-webhook-e2e", Namespace: ns},
		Spec: cmv1.CertificateSpec{
			SecretName:  "berth-webhook-e2e-tls",
			IPAddresses: []string{"127.0.0.1"},
			DNSNames:    overlayCert.Spec.DNSNames,
			Usages:      overlayCert.Spec.Usages,
			PrivateKey:  overlayCert.Spec.PrivateKey,
			IssuerRef:   overlayCert.Spec.IssuerRef,
		},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e2eCert)
	require.NoError(t, err)
	e2eObj := install.Object{Source: "e2e", Unstructured: &unstructured.Unstructured{Object: u}}
	_, err = env.Applier.Apply(ctxT(t, 30*time.Second), e2eObj)
	require.NoError(t, err)
	applied = append(applied, e2eObj)
	certificateReady(t, ns, e2eCert.Name)

	// Both leaves chain to berth's CA (the Secret of Certificate berth-ca).
	caSecret, err := env.Kube.CoreV1().Secrets(ns).Get(ctxT(t, 10*time.Second), "berth-ca", metav1.GetOptions{})
	require.NoError(t, err)
	servingSecret, err := env.Kube.CoreV1().Secrets(ns).Get(ctxT(t, 10*time.Second), overlayCert.Spec.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	e2eSecret, err := env.Kube.CoreV1().Secrets(ns).Get(ctxT(t, 10*time.Second), e2eCert.Spec.SecretName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(caSecret.Data[corev1.TLSCertKey]), string(servingSecret.Data["ca.crt"]), "the serving certificate is issued by berth's CA")
	assert.Equal(t, overlayCert.Spec.DNSNames, leafOf(t, servingSecret).DNSNames)
	assert.Equal(t, string(servingSecret.Data["ca.crt"]), string(e2eSecret.Data["ca.crt"]))
	leaf := leafOf(t, e2eSecret)
	require.Len(t, leaf.IPAddresses, 1)
	assert.Equal(t, "127.0.0.1", leaf.IPAddresses[0].String())

	// berth's webhook serving the cert-manager-issued pair.
	certDir := t.TempDir()
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, "ca.crt"} {
		require.NoError(t, os.WriteFile(filepath.Join(certDir, k), e2eSecret.Data[k], 0o600))
	}
	ports, err := cluster.FreePorts(1)
	require.NoError(t, err)
	listen := "127.0.0.1:" + strconv.Itoa(ports[0])
	wh := devenv.Process("berth-webhook-cert-manager", webhook.Bin, "--cert-dir", certDir,
		"--self-signed=false", "--mutating-config=", "--validating-config=", "--listen", listen)
	require.NoError(t, wh.Start(ctxT(t, time.Minute), env))

	// A configuration with berth's AcceleratorClass webhook, by URL, no
	// caBundle yet: the apiserver cannot trust the certificate.
	var base admissionregistrationv1.ValidatingWebhook
	for _, w := range webhook.Validating[0].Webhooks {
		if w.Name == "acceleratorclasses.validate.ome.io" {
			base = *w.DeepCopy()
		}
	}
	require.NotEmpty(t, base.Name, "deploy/base/webhooks.yaml has no acceleratorclasses.validate.ome.io")
	path := server.PathValidateAcceleratorClasses
	base.Name = "acceleratorclasses.cert-manager-e2e.ome.io"
	base.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr("https://" + listen + path)}
	fail := admissionregistrationv1.Fail
	base.FailurePolicy = &fail
	cfgs := env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "berth-cert-manager-e2e"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{base},
	}
	_, err = cfgs.Create(ctxT(t, 10*time.Second), cfg, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cfgs.Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
	})

	berth, err := versioned.NewForConfig(env.Cluster.RESTConfig())
	require.NoError(t, err)
	probe := wrappers.MakeAcceleratorClass("berth-cert-manager-probe").NodeSelectorTerms(corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{"cert-manager-e2e"}}},
	}).Obj()
	dryRun := func(ctx context.Context) error {
		_, err := berth.OmeV1beta1().AcceleratorClasses().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctxT(t, time.Minute), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = dryRun(ctx)
		return last != nil && strings.Contains(last.Error(), `failed calling webhook "acceleratorclasses.cert-manager-e2e.ome.io"`), nil
	})
	require.NoError(t, err, "without caBundle the call fails TLS verification; last answer: %v", last)
	assert.Contains(t, last.Error(), "x509", "without caBundle the call fails TLS verification")

	// The annotation of the overlay: cainjector copies the CA of the
	// Certificate into caBundle, and admissions go through.
	_, err = cfgs.Patch(ctxT(t, 10*time.Second), cfg.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+cmv1.WantInjectAnnotation+`":"`+ns+`/`+e2eCert.Name+`"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	var injected []byte
	err = wait.PollUntilContextTimeout(ctxT(t, 2*time.Minute), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cfgs.Get(ctx, cfg.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		injected = got.Webhooks[0].ClientConfig.CABundle
		return len(injected) > 0, nil
	})
	require.NoError(t, err, "cainjector did not fill caBundle; its log is in %s", env.Cluster.RunDir)
	assert.Equal(t, string(e2eSecret.Data["ca.crt"]), string(injected), "caBundle is the CA of the Certificate")
	err = wait.PollUntilContextTimeout(ctxT(t, time.Minute), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = dryRun(ctx)
		return last == nil, nil
	})
	require.NoError(t, err, "admission through the webhook with the cert-manager certificate; last answer: %v", last)
}
