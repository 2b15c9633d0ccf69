package e2e

// KServe's runtimes rendered as their authors wrote them: in a KServe-shaped runtime (spec.containers), a label or annotation
// the service lacks renders empty, as KServe renders it, with a warning
// naming the key; an argument that would lose its value is still refused.

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

// kserveManifest reads a vendored KServe manifest and moves it to berth's
// API group, the only line changed.
func kserveManifest(t *testing.T, path ...string) string {
	t.Helper()
	b, err := os.ReadFile(env.Path(path...))
	require.NoError(t, err)
	s := string(b)
	for _, from := range []string{"apiVersion: serving.kserve.io/v1alpha1", "apiVersion: serving.kserve.io/v1beta1"} {
		s = strings.Replace(s, from, "apiVersion: ome.io/v1beta1", 1)
	}
	require.Contains(t, s, "apiVersion: ome.io/v1beta1", "%v", path)
	return s
}

// applyKServe applies manifest into ns with kubectl, retrying for at most
// 30 s while the webhook's cache may not hold the runtime yet (no runtime
// for pytorch). A denial about templates fails at once, quoting kubectl.
func applyKServe(t *testing.T, ns, manifest string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := kubectl(t, manifest, "apply", "-n", ns, "-f", "-")
		if err == nil {
			return out
		}
		if strings.Contains(out, "template") || time.Now().After(deadline) {
			require.NoError(t, err, "kubectl apply -n %s -f - (KServe's sample):\n%s", ns, out)
		}
		time.Sleep(time.Second)
	}
}

// TestKServeTorchServeSampleAdmitted: KServe's torchserve runtime and its
// sample InferenceService, both verbatim but for the API group, are
// admitted although the service has no label serviceEnvelope, which the
// runtime's env TS_SERVICE_ENVELOPE refers to: the engine pod gets
// TS_SERVICE_ENVELOPE="" (KServe's rendering), and kubectl shows a warning
// naming the key and the field. The same service labelled
// serviceEnvelope=kserve gets that value and no warning.
func TestKServeTorchServeSampleAdmitted(t *testing.T) {
	const runtime, envName = "kserve-torchserve", "TS_SERVICE_ENVELOPE"
	ns := e2eutil.Namespace(t, env.Kube, "kserve-ts")
	t.Cleanup(func() {
		out, err := kubectlQuiet("delete", "--ignore-not-found", "--wait=false", "clusterservingruntime/"+runtime)
		if err != nil {
			t.Logf("clean up: %v\n%s", err, out)
		}
	})
	kubectlApplyStdin(t, kserveManifest(t, "merge", "testdata", "upstream", "kserve-torchserve.yaml"), "-f", "-")
	sample := kserveManifest(t, "e2e", "testdata", "kserve", "torchserve.yaml")

	out := applyKServe(t, ns, sample)
	t.Logf("kubectl apply (KServe's torchserve sample):\n%s", out)
	assert.Contains(t, out, "Warning:", "no warning about the missing label")
	assert.Contains(t, out, ".Labels.serviceEnvelope", "the warning names the key")
	assert.Contains(t, out, "env[0].value ("+envName+")", "the warning names the field")
	isvc := getService(t, ns, "torchserve")
	assert.Equal(t, "ClusterServingRuntime/"+runtime, isvc.Annotations[v1beta1.AnnotationResolvedRuntime])
	pods := waitPods(t, ns, "torchserve", "an engine pod", func(pods []corev1.Pod) bool { return len(podsOf(pods, v1beta1.ComponentEngine)) > 0 })
	p := podsOf(pods, v1beta1.ComponentEngine)[0]
	v, ok := wrappers.ContainerEnv(&p, "kserve-container", envName)
	assert.True(t, ok, "pod %s: kserve-container has no %s", p.Name, envName)
	assert.Equal(t, "", v, "pod %s: %s renders empty, as KServe renders it", p.Name, envName)

	labelled := strings.Replace(sample, `name: "torchserve"`, "name: torchserve-envelope\n  labels:\n    serviceEnvelope: kserve", 1)
	require.Contains(t, labelled, "serviceEnvelope: kserve")
	out = applyKServe(t, ns, labelled)
	assert.NotContains(t, out, "serviceEnvelope", "a warning although the label is set:\n%s", out)
	pods = waitPods(t, ns, "torchserve-envelope", "an engine pod", func(pods []corev1.Pod) bool { return len(podsOf(pods, v1beta1.ComponentEngine)) > 0 })
	p = podsOf(pods, v1beta1.ComponentEngine)[0]
	v, _ = wrappers.ContainerEnv(&p, "kserve-container", envName)
	assert.Equal(t, "kserve", v, "pod %s: the label's value", p.Name)
}

// TestKServeRuntimeArgWithMissingLabelDenied: in the same shape, an
// argument whose value would render empty (--service-envelope=) changes
// the command line, so a service without the label is denied, naming the
// argument and the key.
func TestKServeRuntimeArgWithMissingLabelDenied(t *testing.T) {
	ns := e2eutil.Namespace(t, env.Kube, "kserve-arg")
	rt := &v1beta1.ServingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "envelope-arg", Namespace: ns},
		Spec: v1beta1.ServingRuntimeSpec{
			SupportedModelFormats: []v1beta1.SupportedModelFormat{{Name: "pytorch", Version: ptr("1"), AutoSelect: ptr(true)}},
			ProtocolVersions:      []v1beta1.ProtocolVersion{"v1"},
			ServingRuntimePodSpec: v1beta1.ServingRuntimePodSpec{Containers: []corev1.Container{{
				Name: "kserve-container", Image: "kserve-torchserve:replace",
				Args: []string{"torchserve", "--start", "--service-envelope={{.Labels.serviceEnvelope}}"},
			}}},
		},
	}
	bc := berthClient(t)
	ctx := ctxT(t, time.Minute)
	require.NoError(t, retryWebhook(ctx, func() error {
		_, err := bc.OmeV1beta1().ServingRuntimes(ns).Create(ctx, rt, metav1.CreateOptions{})
		return err
	}))
	sample := kserveManifest(t, "e2e", "testdata", "kserve", "torchserve.yaml")
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		var err error
		out, err = kubectl(t, sample, "apply", "--dry-run=server", "-n", ns, "-f", "-")
		require.Error(t, err, "a service whose argument would render empty was admitted:\n%s", out)
		if strings.Contains(out, "template") || time.Now().After(deadline) {
			break
		}
	}
	assert.Contains(t, out, "spec.containers[0].args[2]", "the denial names the argument")
	assert.Contains(t, out, ".Labels.serviceEnvelope", "the denial names the key")
}
