package e2e

// Engine and decoder on different AcceleratorClasses (issue 10, item 6;
// seed 002: "Engine and Decoder can have different AcceleratorClass
// selections"), end to end: the webhook pins one class per component, the
// reconciler creates the groups, the pod webhook composes each pod from its
// component's class, and the scheduler places them on that class's nodes.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Names of this file's test; h100Product is pods_test.go's.
const (
	clsPDRuntime    = "srt-llama-3-2-1b-instruct-pd-rt"
	clsH100         = "nvidia-h100-80gb"
	clsA100         = "nvidia-a100-40gb"
	clsA100Product  = "NVIDIA-A100-SXM4-40GB"
	clsProductLabel = "nvidia.com/gpu.product"
)

// A prefill/decode service of the shipped PD runtime with the engine on an
// H100 class and the decoder on an A100 class (spec.engine and
// spec.decoder acceleratorOverride): both pins are written, engine pods run
// on H100 nodes, decoder pods on A100 nodes, and the service is Ready.
func TestEngineAndDecoderOnDifferentClasses(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-classes")
	svc := MakeService(ns, "pd").Runtime(clsPDRuntime).Obj()
	svc.Spec.Engine.AcceleratorOverride = &v1beta1.AcceleratorSelector{PreferredClasses: []string{clsH100}}
	svc.Spec.Decoder = &v1beta1.DecoderSpec{AcceleratorOverride: &v1beta1.AcceleratorSelector{PreferredClasses: []string{clsA100}}}
	created := createService(t, svc)
	assert.Equal(t, clsH100, created.Annotations[v1beta1.AnnotationResolvedAcceleratorClass], "the engine's class stays in the single-class pin")
	assert.Equal(t, clsA100, created.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass], "the decoder's class is pinned on its own")

	isvc := waitService(t, ns, "pd", "Ready=True", serviceReady)
	pods := waitPods(t, ns, "pd", "engine, decoder and router Running and Ready", podsNamed("pd-engine-0", "pd-decoder-0", "pd-router-0"))
	assert.Equal(t, "3/3", isvc.Status.Ready)
	assert.Equal(t, clsH100, isvc.Status.AcceleratorClass, "status.acceleratorClass is the engine's")
	if c := condition(isvc, v1beta1.ConditionResolved); assert.NotNil(t, c) {
		assert.Contains(t, c.Message, "decoder on AcceleratorClass "+clsA100, "the Resolved condition names the decoder's class")
	}

	for name, want := range map[string]string{"pd-engine-0": h100Product, "pd-decoder-0": clsA100Product} {
		p := podByName(pods, name)
		require.NotNil(t, p, name)
		assert.Contains(t, clsProducts(p), want, "pod %s placement (nodeSelector or required node affinity)", name)
		assert.EqualValues(t, 1, nvidiaGPUs(p.Spec.Containers[0]), "pod %s nvidia.com/gpu: %v", name, p.Spec.Containers[0].Resources.Limits)
		node, err := env.Kube.CoreV1().Nodes().Get(ctxT(t, apiTimeout), p.Spec.NodeName, metav1.GetOptions{})
		require.NoError(t, err, "node of pod %s", name)
		assert.Equal(t, want, node.Labels[clsProductLabel], "pod %s runs on node %s", name, node.Name)
		component := p.Labels[v1beta1.LabelComponent]
		assert.Equal(t, isvc.Status.Components[component].Revision, p.Annotations[v1beta1.AnnotationRevision],
			"pod %s: the reconciler's revision equals the webhook's", name)
	}
	router := podByName(pods, "pd-router-0")
	require.NotNil(t, router)
	assert.Empty(t, clsProducts(router), "the router gets no class")
	assert.NotContains(t, clsProducts(podByName(pods, "pd-engine-0")), clsA100Product, "the engine may not land on A100 nodes")
	assert.NotContains(t, clsProducts(podByName(pods, "pd-decoder-0")), h100Product, "the decoder may not land on H100 nodes")
}

// clsProducts lists the GPU products a pod may run on: its product
// nodeSelector, and the values of its required node affinity terms on the
// product label (a class whose discovery has alternatives, as the A100
// class's SXM4 and PCIe, is placed by affinity).
func clsProducts(p *corev1.Pod) []string {
	var out []string
	if v, ok := p.Spec.NodeSelector[clsProductLabel]; ok {
		out = append(out, v)
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchExpressions {
				if r.Key == clsProductLabel && r.Operator == corev1.NodeSelectorOpIn {
					out = append(out, r.Values...)
				}
			}
		}
	}
	return out
}
