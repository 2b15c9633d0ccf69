package selection

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Item 11 of issue 10: what a webhook needs to count decisions by runtime,
// class and how the class was chosen, denials by reason, and classes chosen
// while they had no room.
func TestDecisionMetrics(t *testing.T) {
	objs := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}, classes: fleet(), nodes: fleetNodes(8),
		csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(2, 0))}}
	x := objs.load()
	tests := []struct {
		name string
		svc  *v1beta1.InferenceService
		want DecisionMetrics
	}{
		{"strategy", isvc("m"), DecisionMetrics{Runtime: "ClusterServingRuntime/rt", Class: "a100-40gb", ChosenBy: ChosenByStrategy, Strategy: "balanced"}},
		{"cost strategy", isvc("m", withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})),
			DecisionMetrics{Runtime: "ClusterServingRuntime/rt", Class: "a100-40gb", ChosenBy: ChosenByStrategy, Strategy: "cost"}},
		{"annotation", isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "b200")),
			DecisionMetrics{Runtime: "ClusterServingRuntime/rt", Class: "b200", ChosenBy: ChosenByAnnotation, Strategy: "balanced"}},
		{"preferredClasses", isvc("m", withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"h100-80gb"}})),
			DecisionMetrics{Runtime: "ClusterServingRuntime/rt", Class: "h100-80gb", ChosenBy: ChosenByPreferredClasses, Strategy: "balanced"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := x.Select(tt.svc)
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.Metrics())
		})
	}
	t.Run("chosen while unavailable", func(t *testing.T) {
		objs.nodes = fleetNodes(1)
		d, err := objs.load().Select(isvc("m"))
		require.NoError(t, err)
		assert.Equal(t, DecisionMetrics{Runtime: "ClusterServingRuntime/rt", Class: "a100-40gb", ChosenBy: ChosenByStrategy, Strategy: "balanced", Unavailable: true}, d.Metrics())
	})
	t.Run("no class asked for", func(t *testing.T) {
		d, err := sklearnWorld().Select(sklearnService())
		require.NoError(t, err)
		assert.Equal(t, DecisionMetrics{Runtime: "ClusterServingRuntime/kserve-sklearnserver", ChosenBy: ChosenByNone}, d.Metrics())
	})
	t.Run("pinned", func(t *testing.T) {
		d, err := x.Resolve(isvc("m"), KindClusterServingRuntime, "rt", "h100-80gb")
		require.NoError(t, err)
		assert.Equal(t, DecisionMetrics{Runtime: "ClusterServingRuntime/rt", Class: "h100-80gb", ChosenBy: ChosenByPin}, d.Metrics())
	})
}

func TestDenialCodes(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B")), cbm("huge", mSize("10T"))}, classes: fleet(), nodes: fleetNodes(8),
		csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(2, 0)), csr("v2", formats(format("onnx", "")), protocols(v1beta1.ProtocolKServeV2))}}.load()
	onnx := cbm("o", mFormat("onnx", ""))
	x.UpsertClusterBaseModel(onnx)
	tests := []struct {
		name string
		svc  *v1beta1.InferenceService
		want string
	}{
		{"model not found", isvc("nope"), CodeModelNotFound},
		{"no runtime", isvc("o"), CodeNoRuntime},
		{"runtime not found", isvc("m", withRuntime("gone", "")), CodeRuntimeNotFound},
		{"runtime cannot serve", isvc("m", withRuntime("v2", "")), CodeRuntimeIncompatible},
		{"class not found", isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "tpu")), CodeAcceleratorClassNotFound},
		{"bad strategy", isvc("m", withAnnotation(v1beta1.AnnotationSelectionStrategy, "fastest")), CodeInvalidAcceleratorRequest},
		{"no class holds the model", isvc("huge"), CodeNoAcceleratorClass},
		{"the named class does not qualify", isvc("huge", withAnnotation(v1beta1.AnnotationAcceleratorClass, "b200")), CodeAcceleratorClassNotQualified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := x.Select(tt.svc)
			require.Error(t, err)
			assert.Equal(t, tt.want, Code(err), err.Error())
		})
	}
	_, err := x.Resolve(isvc("m"), KindClusterServingRuntime, "gone", "")
	assert.Equal(t, CodePinnedObjectMissing, Code(err))
	assert.Equal(t, "", Code(errors.New("other")))
	assert.Equal(t, "", Code(nil))
}
