package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/e2eutil"
)

// The engine runtime profile example and the role that uses it (RBG's
// Engine Runtime API, docs/glossary.md), applied with kubectl as written,
// against the shipped runtimes, classes and fleet. The two files differ
// from the source only in apiVersion (ome.io/v1beta1) and, for the
// service, in the role becoming spec.engine (their headers say so).
//
//   - The profile as written names its image "<IMG>": the webhook refuses
//     it at apply time, naming the field, instead of every pod failing
//     later with InvalidImageName.
//   - With an image, it is stored.
//   - The service as written overrides a container "patio-runtime" that
//     the profile does not have (its container is "engine-runtime"): RBG
//     ignores such an override silently, so the prefill's --instance-info
//     and SGL_ROUTER_PORT would never reach the sidecar; berth denies it
//     and names both names.
//   - With the override's container name corrected, the shipped
//     prefill/decode runtime is pinned and its pods composed: the engine pod carries the
//     profile's container with the profile's env and the override's args
//     and env appended; the decoder, which names no profile, has none.
func TestEngineRuntimeProfileExampleAsWritten(t *testing.T) {
	ensureOutOfBox(t)
	ns := e2eutil.Namespace(t, env.Kube, "seed-profile")
	profile := seedFile(t, "004-sglang-pd-runtime.yaml")
	service := seedFile(t, "004-prefill-engine-runtimes.yaml")
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "clusterengineruntimeprofile", "sglang-pd-runtime", "--ignore-not-found")
	})

	out, err := kubectl(t, profile, "apply", "--server-side", "-f", "-")
	require.Error(t, err, "the profile with the placeholder image is refused:\n%s", out)
	assert.Contains(t, out, `spec.containers[0].image: Invalid value: "<IMG>": image reference has an invalid path component "<IMG>"; the container runtime could not pull it`)

	const sidecar = "ghcr.io/berthdev/berth-engine-sidecar:0.1.0"
	require.Equal(t, 1, strings.Count(profile, "image: <IMG>"))
	kubectlApplyStdin(t, strings.Replace(profile, "image: <IMG>", "image: "+sidecar, 1), "--server-side", "-f", "-")

	model := fmt.Sprintf(`apiVersion: ome.io/v1beta1
kind: BaseModel
metadata: {name: llama-3-3-70b, namespace: %s}
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelFramework: {name: transformers, version: "4.57.1"}
  modelArchitecture: LlamaForCausalLM
  modelParameterSize: 70B
`, ns)
	kubectlApplyStdin(t, model, "--server-side", "-f", "-")
	out, err = kubectl(t, service, "apply", "--server-side", "-n", ns, "-f", "-")
	require.Error(t, err, "the override of a container the profile lacks is refused:\n%s", out)
	assert.Contains(t, out, `spec.engine.engineRuntimes[0].containers[0].name: "patio-runtime" is not a container of ClusterEngineRuntimeProfile sglang-pd-runtime (it has: engine-runtime); overrides apply only to profile containers`)

	require.Equal(t, 1, strings.Count(service, "name: patio-runtime"))
	kubectlApplyStdin(t, strings.Replace(service, "name: patio-runtime", "name: engine-runtime", 1), "--server-side", "-n", ns, "-f", "-")
	isvc, err := berthClient(t).OmeV1beta1().InferenceServices(ns).Get(ctxT(t, time.Minute), "sglang-pd", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/srt-llama-3-3-70b-instruct-pd-rt", isvc.Annotations[v1beta1.AnnotationResolvedRuntime])

	// The pods as the webhook composed them; whether the fleet has room
	// for a 70B model's decoder while other tests run is not the point.
	pods := waitPods(t, ns, "sglang-pd", "engine, decoder and router created", func(ps []corev1.Pod) bool {
		return len(podNames(ps)) == 3 && podByName(ps, "sglang-pd-engine-0") != nil && podByName(ps, "sglang-pd-decoder-0") != nil
	})
	engine := containerNamed(podByName(pods, "sglang-pd-engine-0"), "engine-runtime")
	require.NotNil(t, engine, "the engine pod carries the profile's container")
	assert.Equal(t, sidecar, engine.Image)
	assert.Equal(t, []string{`--instance-info={"data":{"port":8000,"worker_type":"prefill", "bootstrap_port":34000}}`}, engine.Args)
	env := map[string]string{}
	for _, e := range engine.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, map[string]string{"TOPO_TYPE": "sglang", "SGL_ROUTER_ROLE_NAME": "router", "SGL_ROUTER_PORT": "8000", "BERTH_PD_ROLE": "prefill"}, env, "the profile's env, the override's, and the role berth sets on every container of a prefill pod")
	assert.Nil(t, containerNamed(podByName(pods, "sglang-pd-decoder-0"), "engine-runtime"), "the decoder names no profile")
}

func containerNamed(p *corev1.Pod, name string) *corev1.Container {
	if p == nil {
		return nil
	}
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	return nil
}
