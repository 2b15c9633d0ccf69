package servinggroups

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/merge"
)

func classObj(name, product string) *v1beta1.AcceleratorClass {
	return wrappers.MakeAcceleratorClass(name).Vendor("nvidia").NodeSelector("nvidia.com/gpu.product", product).Resource("nvidia.com/gpu").Obj()
}

// pdServiceObj pins the engine to h100 and the decoder to a100; the
// decoder's override narrows its nodes to one zone.
func pdServiceObj() *v1beta1.InferenceService {
	isvc := serviceObj("pd", "pd-rt", 1)
	isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass] = "h100"
	isvc.Annotations[v1beta1.AnnotationResolvedDecoderAcceleratorClass] = "a100"
	isvc.Spec.Decoder = &v1beta1.DecoderSpec{AcceleratorOverride: &v1beta1.AcceleratorSelector{
		PreferredClasses: []string{"a100"}, NodeSelector: map[string]string{"topology.kubernetes.io/zone": "b"}}}
	return isvc
}

func pdRuntimeObj() *v1beta1.ClusterServingRuntime {
	rt := runtimeObj("pd-rt", false)
	rt.Spec.DecoderConfig = &v1beta1.DecoderSpec{Runner: &v1beta1.RunnerSpec{Name: "ome-container", Image: "decoder:v1"}}
	return rt
}

// The decision gives each component the class the webhook composes its
// pods with: the decoder its own pin, engine and router the engine's.
func TestDecisionInputPerComponent(t *testing.T) {
	isvc := pdServiceObj()
	f := newFixture(t, pdRuntimeObj(), classObj("h100", "H100"), classObj("a100", "A100"), isvc)
	dec, unres := f.c.resolve(isvc)
	require.Nil(t, unres)

	engine := dec.input(isvc, v1beta1.ComponentEngine)
	decoder := dec.input(isvc, v1beta1.ComponentDecoder)
	router := dec.input(isvc, v1beta1.ComponentRouter)
	require.NotNil(t, engine.AcceleratorClass)
	require.NotNil(t, decoder.AcceleratorClass)
	assert.Equal(t, "h100", engine.AcceleratorClass.Name)
	assert.Equal(t, "a100", decoder.AcceleratorClass.Name)
	assert.Equal(t, v1beta1.ComponentDecoder, decoder.Component)
	assert.Equal(t, "b", decoder.Service.Spec.AcceleratorSelector.NodeSelector["topology.kubernetes.io/zone"], "the decoder's pods are composed with its override")
	assert.Nil(t, engine.Service.Spec.AcceleratorSelector)
	assert.Same(t, isvc, router.Service)

	e, err := merge.Revision(engine)
	require.NoError(t, err)
	d, err := merge.Revision(decoder)
	require.NoError(t, err)
	assert.NotEqual(t, e, d)

	// Without a decoder pin, the decoder runs on the engine's class.
	delete(isvc.Annotations, v1beta1.AnnotationResolvedDecoderAcceleratorClass)
	dec, unres = f.c.resolve(isvc)
	require.Nil(t, unres)
	assert.Equal(t, "h100", dec.input(isvc, v1beta1.ComponentDecoder).AcceleratorClass.Name)
}

// A pinned decoder class that no longer exists is reported like the
// engine's: Resolved=False with PinnedClassMissing, naming the class.
func TestMissingDecoderClassIsUnresolved(t *testing.T) {
	isvc := pdServiceObj()
	f := newFixture(t, pdRuntimeObj(), classObj("h100", "H100"), isvc)
	_, unres := f.c.resolve(isvc)
	require.NotNil(t, unres)
	assert.Equal(t, ReasonClassMissing, unres.reason)
	assert.Contains(t, unres.message, `pinned decoder AcceleratorClass a100`)
}
