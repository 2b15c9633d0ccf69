package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
)

// TestPodMutateLeavesTheCacheAlone admits pods of every component of a
// prefill/decode service (each twice: the first builds the plan and the
// model's mount, the second reuses them) with the objects the informers
// hand out, and checks that none of them changed: the pod handler reads
// the cached InferenceService, the pinned runtime and class and the shared
// model mount without copying them.
func TestPodMutateLeavesTheCacheAlone(t *testing.T) {
	w := pdWorld(t)
	stored, resp := admitISVC(t, w, admissionv1.Create, pdService(h100, a100), nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	stored.UID, stored.ResourceVersion = "uid-pd", "11"
	require.NoError(t, w.services.Add(stored))
	// pdWorld's model again, as from the API server: with a
	// resourceVersion, so its mount is cached.
	ver, fw, arch, size := "1.0.0", "4.57.1", "LlamaForCausalLM", "1.24B"
	w.index.UpsertBaseModel(&v1beta1.BaseModel{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny-llama", Namespace: "team-a", ResourceVersion: "5"},
		Spec: v1beta1.BaseModelSpec{
			ModelFormat:       v1beta1.ModelFormat{Name: "safetensors", Version: &ver},
			ModelFramework:    &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: &fw},
			ModelArchitecture: &arch, ModelParameterSize: &size,
		},
	})

	h := w.pods()
	cached, err := h.Services.InferenceServices("team-a").Get("pd")
	require.NoError(t, err)
	p, err := pin.Read(cached)
	require.NoError(t, err)
	type inputs struct {
		runtime *v1beta1.ServingRuntimeSpec
		class   *v1beta1.AcceleratorClass
	}
	read := map[string]inputs{}
	before := map[string]inputs{}
	for _, comp := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder, v1beta1.ComponentRouter} {
		d, err := h.resolve(cached, p, comp)
		require.NoError(t, err, comp)
		read[comp] = inputs{d.Runtime.Spec, d.AcceleratorClass}
		before[comp] = inputs{d.Runtime.Spec.DeepCopy(), d.AcceleratorClass.DeepCopy()}
	}
	service := cached.DeepCopy()
	sm, err := w.index.Model(cached)
	require.NoError(t, err)
	mount := h.mounts.Mount(selectedModel(sm))
	require.NotNil(t, mount)
	mountBefore := deepCopyMount(mount)

	for range 2 {
		for _, comp := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder, v1beta1.ComponentRouter} {
			req := &admissionv1.AdmissionRequest{UID: "p", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Kind: "Pod"}, Namespace: "team-a"}
			req.Object.Raw = skeletonPod(t, "pd", comp)
			resp := h.Mutate(ctx, req)
			require.True(t, resp.Allowed, "%s: %+v", comp, resp.Result)
			require.NotEmpty(t, resp.Patch, comp)
		}
	}

	again, err := h.Services.InferenceServices("team-a").Get("pd")
	require.NoError(t, err)
	require.Same(t, cached, again)
	assert.Equal(t, service, cached, "the cached InferenceService")
	for comp, in := range read {
		assert.Equal(t, before[comp].runtime, in.runtime, "%s: the pinned runtime's spec", comp)
		assert.Equal(t, before[comp].class, in.class, "%s: the pinned class", comp)
	}
	require.Same(t, mount, h.mounts.Mount(selectedModel(sm)), "one model version, one mount, reused")
	assert.Equal(t, mountBefore, mount, "the cached model mount")
}

func deepCopyMount(m *merge.ModelMount) *merge.ModelMount {
	c := *m
	c.Spec = *m.Spec.DeepCopy()
	c.Discovered = m.Discovered.DeepCopy()
	return &c
}
