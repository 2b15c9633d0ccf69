package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/certs"
	"github.com/berthdev/berth/deploy/chart"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/devenv/kwok"
	"github.com/berthdev/berth/internal/fleet"
)

// helmCluster is a control plane of its own for the Helm tests: the chart
// installs the CRDs and the cluster-scoped webhook configurations
// berth-mutating and berth-validating, which the suite's cluster already
// has (pointing at the suite's webhook), so installing there would change
// what every other test runs against.
type helmCluster struct {
	c       *cluster.Cluster
	kube    kubernetes.Interface
	berth   versioned.Interface
	helmBin string
	chart   string
}

func startHelmCluster(t *testing.T, ctx context.Context) *helmCluster {
	t.Helper()
	helmBin := filepath.Join(env.Root, "bin", "helm-v3.22.0", "helm")
	_, err := os.Stat(helmBin)
	require.NoError(t, err, "the Helm tests run bin/helm-v3.22.0/helm: run `make deps`")
	c, err := cluster.Start(ctx, cluster.Options{Binaries: env.Binaries, Stages: kwok.Stages(), Log: os.Stderr,
		KeepRunDir: os.Getenv("BERTH_E2E_KEEP") != ""})
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	kube, err := c.Clientset()
	require.NoError(t, err)
	berth, err := versioned.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	// The fleet: the webhook pins an AcceleratorClass with free accelerators.
	_, err = fleet.Apply(ctx, kube, env.Fleet, 2*time.Minute)
	require.NoError(t, err)
	return &helmCluster{c: c, kube: kube, berth: berth, helmBin: helmBin, chart: env.Path("deploy", "chart", "berth")}
}

// helm runs bin/helm against the cluster, as a user would.
func (h *helmCluster) helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(h.helmBin, append([]string{"--kubeconfig", h.c.KubeconfigPath}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("helm %s: %s", args[0], time.Since(start).Round(time.Millisecond))
	if err != nil {
		return out.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String(), nil
}

// startExternalWebhook runs berth-webhook on 127.0.0.1 against the Helm
// cluster, with a certificate for 127.0.0.1 (as devenv's webhook
// component does, but registering nothing: the chart's configurations
// call it). It returns once the webhook's caches synced.
func (h *helmCluster) startExternalWebhook(t *testing.T, ctx context.Context, certDir string, port int, namespace string) {
	t.Helper()
	proc := devenv.Process("berth-webhook-helm", webhook.Bin,
		"--cert-dir", certDir, "--self-signed=false", "--mutating-config=", "--validating-config=",
		"--listen", "127.0.0.1:"+strconv.Itoa(port), "--namespace", namespace)
	require.NoError(t, proc.Start(ctx, &devenv.Env{Cluster: h.c}), "the webhook did not become ready against the Helm cluster")
}

// TestHelmInstallGivesAWorkingWebhook: `helm install` of deploy/chart/berth
// on a fresh control plane installs the CRDs, RBAC, the reconciler and the
// webhook configurations, here pointed at a berth-webhook process through
// webhook.url and webhook.caBundle (kwok runs no containers). Through
// those configurations, a `helm upgrade` installs the out-of-box runtimes
// and classes, a runtime tying with one of them is denied naming it, and
// the sample InferenceService is pinned. `helm template` with the same
// values renders exactly what Helm installed, and `helm uninstall` removes
// the webhook configurations.
func TestHelmInstallGivesAWorkingWebhook(t *testing.T) {
	ctx := ctxT(t, 15*time.Minute)
	h := startHelmCluster(t, ctx)
	const release, berthNS, serviceNS = "berth", "berth-helm", "helm-e2e"

	ports, err := cluster.FreePorts(1)
	require.NoError(t, err)
	bundle, err := certs.Generate(nil, []net.IP{net.ParseIP("127.0.0.1")}, 24*time.Hour, time.Now())
	require.NoError(t, err)
	certDir := t.TempDir()
	require.NoError(t, bundle.WriteFiles(certDir))
	url := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	values := "namespace.name=" + berthNS + ",webhook.url=" + url + ",webhook.caBundle=" + base64.StdEncoding.EncodeToString(bundle.CACert)
	// The release record lives in default; the chart creates berthNS.
	common := []string{release, h.chart, "--namespace", "default", "--set", values}

	// 1. Install without the catalogue: no webhook answers yet, and the
	// runtimes and classes must pass it.
	out, err := h.helm(t, append([]string{"install"}, append(common, "--set", "runtimes.enabled=false,acceleratorClasses.enabled=false")...)...)
	require.NoError(t, err, out)
	t.Cleanup(func() { _, _ = h.helm(t, "uninstall", release, "--namespace", "default") })
	crds, err := h.berth.Discovery().ServerResourcesForGroupVersion("ome.io/v1beta1")
	require.NoError(t, err, "the chart installed the ome.io CRDs")
	assert.NotEmpty(t, crds.APIResources)
	_, err = h.berth.Discovery().ServerResourcesForGroupVersion("policy.berth.dev/v1alpha1")
	require.NoError(t, err, "the chart installed the ServingPolicy CRD")
	assertChartConfigurations(t, ctx, h, url, bundle.CACert)

	// 2. The webhook, reached through the chart's configurations.
	h.startExternalWebhook(t, ctx, certDir, ports[0], berthNS)

	// 3. The catalogue through the webhook.
	out, err = h.helm(t, append([]string{"upgrade"}, common...)...)
	require.NoError(t, err, out)
	rts, err := h.berth.OmeV1beta1().ClusterServingRuntimes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	shipped, err := install.ReadObjects(env.Path("deploy", "runtimes"))
	require.NoError(t, err)
	assert.Len(t, rts.Items, len(shipped), "every out-of-box runtime was admitted")

	// 4. Admission through the Helm-installed configurations.
	assertTieDenied(t, ctx, h)
	assertSamplePinned(t, ctx, h, serviceNS)

	// 5. helm template renders what Helm installed.
	manifest, err := h.helm(t, "get", "manifest", release, "--namespace", "default")
	require.NoError(t, err)
	rendered, err := h.helm(t, append([]string{"template"}, common...)...)
	require.NoError(t, err)
	installed, err := chart.Split([]byte(manifest))
	require.NoError(t, err)
	templated, err := chart.Split([]byte(rendered))
	require.NoError(t, err)
	require.Len(t, templated, len(installed))
	for i := range installed {
		assert.Equal(t, installed[i].Key(), templated[i].Key())
		assert.Equal(t, installed[i].Obj, templated[i].Obj, "%s", installed[i])
	}
	assertReleaseFits(t, ctx, h)

	// 6. Uninstall removes the configurations (and what else Helm made).
	out, err = h.helm(t, "uninstall", release, "--namespace", "default")
	require.NoError(t, err, out)
	_, err = h.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "berth-validating", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "berth-validating is left after helm uninstall: %v", err)
}

// assertChartConfigurations: berth-mutating and berth-validating are the
// release's, every webhook calling url (plus its path) with caBundle.
func assertChartConfigurations(t *testing.T, ctx context.Context, h *helmCluster, url string, caBundle []byte) {
	t.Helper()
	adm := h.kube.AdmissionregistrationV1()
	m, err := adm.MutatingWebhookConfigurations().Get(ctx, "berth-mutating", metav1.GetOptions{})
	require.NoError(t, err)
	v, err := adm.ValidatingWebhookConfigurations().Get(ctx, "berth-validating", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "berth", m.Annotations["meta.helm.sh/release-name"])
	assert.Equal(t, "berth", v.Annotations["meta.helm.sh/release-name"])
	clients := map[string]admissionregistrationv1.WebhookClientConfig{}
	for _, w := range m.Webhooks {
		clients[w.Name] = w.ClientConfig
	}
	for _, w := range v.Webhooks {
		clients[w.Name] = w.ClientConfig
	}
	objs, err := devenv.Manifests("base/webhooks.yaml")
	require.NoError(t, err)
	wantM, wantV, err := install.WebhookConfigurations(objs)
	require.NoError(t, err)
	want := 0
	for _, c := range wantM {
		want += len(c.Webhooks)
	}
	for _, c := range wantV {
		want += len(c.Webhooks)
	}
	assert.Len(t, clients, want, "every webhook of deploy/base/webhooks.yaml")
	for name, cc := range clients {
		if assert.NotNil(t, cc.URL, "webhook %s", name) {
			assert.True(t, strings.HasPrefix(*cc.URL, url+"/"), "webhook %s calls %s", name, *cc.URL)
		}
		assert.Nil(t, cc.Service, "webhook %s", name)
		assert.Equal(t, caBundle, cc.CABundle, "webhook %s", name)
	}
}

// assertTieDenied: a copy of a Helm-installed runtime under another name
// ties with it and is denied by the validating webhook, naming it.
func assertTieDenied(t *testing.T, ctx context.Context, h *helmCluster) {
	t.Helper()
	rt, err := h.berth.OmeV1beta1().ClusterServingRuntimes().Get(ctx, "srt-mistral-7b-instruct-rt", metav1.GetOptions{})
	require.NoError(t, err)
	dup := &v1beta1.ClusterServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "helm-e2e-tie"}, Spec: rt.Spec}
	_, err = h.berth.OmeV1beta1().ClusterServingRuntimes().Create(ctx, dup, metav1.CreateOptions{})
	require.Error(t, err, "a runtime tying with srt-mistral-7b-instruct-rt was admitted")
	assert.Contains(t, err.Error(), `admission webhook "clusterservingruntimes.validate.ome.io" denied the request`)
	assert.Contains(t, err.Error(), "srt-mistral-7b-instruct-rt")
}

// assertSamplePinned: the README's sample InferenceService is pinned to a
// runtime and an AcceleratorClass by the mutating webhook.
func assertSamplePinned(t *testing.T, ctx context.Context, h *helmCluster, ns string) {
	t.Helper()
	_, err := h.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	objs, err := install.ReadObjects(env.Path("deploy", "samples"))
	require.NoError(t, err)
	applier, err := install.NewApplier(h.c.RESTConfig())
	require.NoError(t, err)
	for _, o := range objs {
		if o.GetKind() == "InferenceService" {
			o.SetNamespace(ns)
		}
		_, err := applier.Apply(ctx, o)
		require.NoError(t, err, "%s", o)
	}
	isvc, err := h.berth.OmeV1beta1().InferenceServices(ns).Get(ctx, "llama-3-2-1b-instruct", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/srt-llama-3-2-1b-instruct-rt", isvc.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.NotEmpty(t, isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
}

// assertReleaseFits: Helm keeps the release (chart with its 6 MB of CRDs,
// gzipped) in one Secret, which must stay under the apiserver's 1 MiB.
func assertReleaseFits(t *testing.T, ctx context.Context, h *helmCluster) {
	t.Helper()
	secrets, err := h.kube.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=berth"})
	require.NoError(t, err)
	require.NotEmpty(t, secrets.Items)
	for _, s := range secrets.Items {
		size := len(s.Data["release"])
		t.Logf("Helm release Secret %s: %d bytes (limit 1 MiB)", s.Name, size)
		assert.Less(t, size, 900*1024, "the release record nears the 1 MiB Secret limit")
	}
}
