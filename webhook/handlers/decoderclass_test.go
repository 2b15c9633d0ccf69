package handlers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// Engine and decoder may run on different AcceleratorClasses (seed 002:
// "Engine and Decoder can have different AcceleratorClass selections").

const (
	pdRuntime = "srt-llama-3-2-1b-instruct-pd-rt"
	h100      = "nvidia-h100-80gb"
	a100      = "nvidia-a100-40gb"
	smallGPU  = "small-gpu" // compute capability 7.5: below the PD runtime's 8.0
	h100Label = "NVIDIA-H100-80GB-HBM3"
	a100Label = "NVIDIA-A100-SXM4-40GB"
)

// pdWorld: the out-of-box prefill/decode runtime, its model, the H100,
// A100 and small-gpu classes with one node each.
func pdWorld(t *testing.T) *world {
	w := newWorld()
	w.addCSR(t, "deploy/runtimes/"+pdRuntime+".yaml", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, c := range []string{h100, a100, smallGPU} {
		w.addClass(t, "deploy/accelerators/"+c+".yaml")
	}
	gpus := map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}
	w.addNode("h100-0", map[string]string{"nvidia.com/gpu.product": h100Label}, gpus)
	w.addNode("a100-0", map[string]string{"nvidia.com/gpu.product": a100Label}, gpus)
	w.addNode("t4-0", map[string]string{"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.memory": "15360"}, gpus)
	ver, fw, arch, size := "1.0.0", "4.57.1", "LlamaForCausalLM", "1.24B"
	w.index.UpsertBaseModel(&v1beta1.BaseModel{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny-llama", Namespace: "team-a"},
		Spec: v1beta1.BaseModelSpec{
			ModelFormat:       v1beta1.ModelFormat{Name: "safetensors", Version: &ver},
			ModelFramework:    &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: &fw},
			ModelArchitecture: &arch, ModelParameterSize: &size,
		},
	})
	return w
}

// pdService is a PD service of the tiny model on the PD runtime; engine
// and decoder overrides name one preferred class each ("" for none).
func pdService(engineClass, decoderClass string) *v1beta1.InferenceService {
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: "team-a"},
		Spec: v1beta1.InferenceServiceSpec{
			Model:   &v1beta1.ModelRef{Name: "tiny-llama"},
			Runtime: &v1beta1.ServingRuntimeRef{Name: pdRuntime},
			Engine:  &v1beta1.EngineSpec{},
			Decoder: &v1beta1.DecoderSpec{},
		},
	}
	if engineClass != "" {
		isvc.Spec.Engine.AcceleratorOverride = &v1beta1.AcceleratorSelector{PreferredClasses: []string{engineClass}}
	}
	if decoderClass != "" {
		isvc.Spec.Decoder.AcceleratorOverride = &v1beta1.AcceleratorSelector{PreferredClasses: []string{decoderClass}}
	}
	return isvc
}

func TestEngineAndDecoderOverridesPinOneClassEach(t *testing.T) {
	w := pdWorld(t)
	out, resp := admitISVC(t, w, admissionv1.Create, pdService(h100, a100), nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, "ClusterServingRuntime/"+pdRuntime, out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Equal(t, h100, out.Annotations[v1beta1.AnnotationResolvedAcceleratorClass], "the single-class pin stays the engine's")
	assert.Equal(t, a100, out.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass])
	head, _, _ := strings.Cut(out.Annotations[AnnotationDecision], "\n")
	assert.Contains(t, head, "AcceleratorClass "+h100)
	assert.Contains(t, head, "decoder on AcceleratorClass "+a100)
	assert.Contains(t, strings.Join(resp.Warnings, "\n"), "decoder on AcceleratorClass "+a100)

	// The same override on both: the decoder's pin is written too.
	same, resp := admitISVC(t, w, admissionv1.Create, pdService(h100, h100), nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, h100, same.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass])

	// No override: one class for both, and no decoder pin (today's behaviour).
	plain, resp := admitISVC(t, w, admissionv1.Create, pdService("", ""), nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.NotEmpty(t, plain.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
	assert.NotContains(t, plain.Annotations, v1beta1.AnnotationResolvedDecoderAcceleratorClass)
}

// An engine override replaces spec.acceleratorSelector for the engine
// only: the decoder keeps the service's selector.
func TestEngineOverrideLeavesTheServiceSelectorToTheDecoder(t *testing.T) {
	w := pdWorld(t)
	isvc := pdService(h100, "")
	isvc.Spec.AcceleratorSelector = &v1beta1.AcceleratorSelector{PreferredClasses: []string{a100}}
	out, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, h100, out.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
	assert.Equal(t, a100, out.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass])

	// A decoder override wins over the class annotation, which still
	// chooses the engine's class.
	isvc = pdService("", h100)
	isvc.Annotations = map[string]string{v1beta1.AnnotationAcceleratorClass: a100}
	out, resp = admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, a100, out.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
	assert.Equal(t, h100, out.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass])
}

func TestIncompatibleDecoderOverrideIsDenied(t *testing.T) {
	w := pdWorld(t)
	_, resp := admitISVC(t, w, admissionv1.Create, pdService(h100, smallGPU), nil)
	require.False(t, resp.Allowed)
	msg := resp.Result.Message
	assert.Contains(t, msg, "spec.decoder.acceleratorOverride.preferredClasses")
	assert.Contains(t, msg, "AcceleratorClass/"+smallGPU)
	assert.NotContains(t, msg, "spec.acceleratorSelector", "the denial names the field the user wrote")

	_, resp = admitISVC(t, w, admissionv1.Create, pdService(smallGPU, a100), nil)
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "spec.engine.acceleratorOverride.preferredClasses")

	isvc := pdService("", "")
	isvc.Spec.Decoder.AcceleratorOverride = &v1beta1.AcceleratorSelector{PreferredClasses: []string{"no-such-class"}}
	_, resp = admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `spec.decoder.acceleratorOverride.preferredClasses[0] names AcceleratorClass "no-such-class", which does not exist`)
}

func TestDecoderPodsRunOnTheDecoderClass(t *testing.T) {
	w := pdWorld(t)
	isvc := pdService(h100, a100)
	isvc.Spec.Decoder.AcceleratorOverride.NodeSelector = map[string]string{"topology.kubernetes.io/zone": "us-west-2b"}
	stored, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	stored.UID = "uid-pd"
	require.NoError(t, w.services.Add(stored))

	pods := map[string]corev1.Pod{}
	for _, comp := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder, v1beta1.ComponentRouter} {
		resp, out := admitPod(t, w, skeletonPod(t, "pd", comp))
		require.True(t, resp.Allowed, "%s: %+v", comp, resp.Result)
		var pod corev1.Pod
		require.NoError(t, json.Unmarshal(out, &pod))
		pods[comp] = pod
	}
	engine, decoder, router := pods[v1beta1.ComponentEngine], pods[v1beta1.ComponentDecoder], pods[v1beta1.ComponentRouter]
	assert.Equal(t, []string{h100Label}, gpuProducts(engine), "engine placement")
	assert.NotContains(t, engine.Spec.NodeSelector, "topology.kubernetes.io/zone", "the decoder's override narrows only decoder nodes")
	// The A100 class's discovery has an SXM4 and a PCIe alternative (ORed).
	assert.Equal(t, []string{a100Label, "NVIDIA-A100-PCIE-40GB"}, gpuProducts(decoder), "decoder placement")
	assert.Equal(t, "us-west-2b", decoder.Spec.NodeSelector["topology.kubernetes.io/zone"])
	q := decoder.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
	assert.Equal(t, "1", q.String(), "the A100 class's resource name: %v", decoder.Spec.Containers[0].Resources.Limits)
	assert.Empty(t, gpuProducts(router), "the router gets no class")

	// The stamped revision is the one the reconciler computes from the
	// decoder's class and view of the service.
	var ac v1beta1.AcceleratorClass
	load(t, "deploy/accelerators/"+a100+".yaml", &ac)
	d, err := w.index.Resolve(stored, "ClusterServingRuntime", pdRuntime, a100)
	require.NoError(t, err)
	want, err := merge.Revision(merge.Input{Service: stored.ForComponent(v1beta1.ComponentDecoder), Component: v1beta1.ComponentDecoder,
		RuntimeKind: d.Runtime.Kind, RuntimeName: d.Runtime.Name, Runtime: d.Runtime.Spec, AcceleratorClass: &ac, Profiles: map[string]*v1beta1.ClusterEngineRuntimeProfile{}})
	require.NoError(t, err)
	assert.Equal(t, want, decoder.Annotations[v1beta1.AnnotationRevision])
	assert.NotEqual(t, engine.Annotations[v1beta1.AnnotationRevision], decoder.Annotations[v1beta1.AnnotationRevision])
}

// The decoder's pin follows the engine's rules: berth's on CREATE, an
// edit honoured only when the class passes, changed overrides re-decide.
func TestDecoderPinRules(t *testing.T) {
	w := pdWorld(t)
	forged := pdService("", "")
	forged.Annotations = map[string]string{v1beta1.AnnotationResolvedDecoderAcceleratorClass: smallGPU}
	out, resp := admitISVC(t, w, admissionv1.Create, forged, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.NotContains(t, out.Annotations, v1beta1.AnnotationResolvedDecoderAcceleratorClass, "a CREATE's pins are berth's")

	stored, resp := admitISVC(t, w, admissionv1.Create, pdService(h100, a100), nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)

	bad := stored.DeepCopy()
	bad.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass] = smallGPU
	_, resp = admitISVC(t, w, admissionv1.Update, bad, stored)
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "annotation "+v1beta1.AnnotationResolvedDecoderAcceleratorClass)
	assert.Contains(t, resp.Result.Message, smallGPU)

	moved := stored.DeepCopy()
	moved.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass] = h100
	out, resp = admitISVC(t, w, admissionv1.Update, moved, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, h100, out.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass])
	assert.Contains(t, strings.Join(resp.Warnings, "\n"), "passes every compatibility check")

	// The override is an input: changing it decides again.
	changed := stored.DeepCopy()
	changed.Spec.Decoder.AcceleratorOverride.PreferredClasses = []string{h100}
	assert.NotEqual(t, inputDigest(stored), inputDigest(changed))
	out, resp = admitISVC(t, w, admissionv1.Update, changed, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, h100, out.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass])

	// Removing both overrides returns the decoder to the engine's class.
	dropped := out.DeepCopy()
	dropped.Spec.Engine.AcceleratorOverride, dropped.Spec.Decoder.AcceleratorOverride = nil, nil
	out, resp = admitISVC(t, w, admissionv1.Update, dropped, out)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.NotContains(t, out.Annotations, v1beta1.AnnotationResolvedDecoderAcceleratorClass)

	// An unchanged update holds both pins.
	scaled := stored.DeepCopy()
	scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
	out, resp = admitISVC(t, w, admissionv1.Update, scaled, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, a100, out.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass])
	assert.Equal(t, h100, out.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
}

// A runtime may not carry acceleratorOverride: it chooses one service's
// class. The denial names the path.
func TestRuntimeWithAcceleratorOverrideIsDenied(t *testing.T) {
	w := newWorld()
	var rt v1beta1.ClusterServingRuntime
	load(t, "deploy/runtimes/"+pdRuntime+".yaml", &rt)
	rt.Spec.DecoderConfig.AcceleratorOverride = &v1beta1.AcceleratorSelector{PreferredClasses: []string{a100}}
	req := request(t, admissionv1.Create, "ClusterServingRuntime", &rt, nil, "", rt.Name)
	resp := w.runtimes().ValidateCluster(ctx, req)
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "spec.decoderConfig.acceleratorOverride")
}

// gpuProducts lists the GPU products a pod may run on: its
// nvidia.com/gpu.product nodeSelector, else the values of its required
// node affinity terms on that label, in order.
func gpuProducts(p corev1.Pod) []string {
	const key = "nvidia.com/gpu.product"
	if v, ok := p.Spec.NodeSelector[key]; ok {
		return []string{v}
	}
	var out []string
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchExpressions {
				if r.Key == key {
					out = append(out, r.Values...)
				}
			}
		}
	}
	return out
}
