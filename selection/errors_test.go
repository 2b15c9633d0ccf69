package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// A selection error is a field.ErrorList: the reason at the service's field
// it is about, then every candidate, its line kept whole, at the field that
// made it lose.
func TestErrorsHavePaths(t *testing.T) {
	at := invalidAt
	rt := func(name string, opts ...rtOpt) *v1beta1.ClusterServingRuntime {
		return csr(name, append([]rtOpt{formats(format("safetensors", ""))}, opts...)...)
	}
	a100 := class("a100").Memory("40Gi").Obj()
	tests := []struct {
		name string
		objs objects
		svc  *v1beta1.InferenceService
		want field.ErrorList
	}{
		{name: "model not found", svc: isvc("m"), want: field.ErrorList{
			at("spec.model.name", `no BaseModel "m" in namespace team and no ClusterBaseModel "m"; create the model or fix the name`)}},
		{name: "no model named", svc: isvc(""), want: field.ErrorList{
			at("spec.model", `spec.model is required: set spec.model.name to a BaseModel in namespace team or a ClusterBaseModel`)}},
		{name: "named runtime not found", objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}}, svc: isvc("m", withRuntime("nope", "")), want: field.ErrorList{
			at("spec.runtime.name", `no ServingRuntime "nope" in namespace team and no ClusterServingRuntime "nope"; create it or fix the name`)}},
		{name: "every runtime loses, each at its field", objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("8B"))}, csrs: []*v1beta1.ClusterServingRuntime{
			rt("srt-llama-70b", sizes("60B", "80B")), rt("srt-off", disabled()), rt("srt-v2", protocols(v1beta1.ProtocolOpenInferenceV2)),
			csr("srt-format-2", formats(format("safetensors", "2.0.0"))), csr("srt-manual", formats(format("safetensors", "", manual()))),
		}}, svc: isvc("m"), want: field.ErrorList{
			at("spec.runtime.name", "no runtime can serve ClusterBaseModel/m (format safetensors 1.0.0, size 8B, protocol openAI); fix one of these runtimes or name one in spec.runtime"),
			at("spec.model.name", "ClusterServingRuntime/srt-format-2: supportedModelFormats[0]: format version 2.0.0 does not match the model's 1.0.0"),
			at("spec.model.name", "ClusterServingRuntime/srt-llama-70b: model size 8B is outside [60B, 80B]"),
			at("spec.runtime.name", "ClusterServingRuntime/srt-manual: matches, but no matching supportedModelFormats entry has autoSelect: true (name it in spec.runtime to use it)"),
			at("spec.runtime.name", "ClusterServingRuntime/srt-off: disabled (spec.disabled is true)"),
			at("spec.protocolVersion", "ClusterServingRuntime/srt-v2: does not serve protocol openAI (serves openInference-v2)"),
		}},
		{name: "the annotation names a class that does not qualify", objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("70B"))}, csrs: []*v1beta1.ClusterServingRuntime{rt("rt", gpus(1, 0))},
			classes: []*v1beta1.AcceleratorClass{a100}}, svc: isvc("m", withAnnotation(v1beta1.AnnotationAcceleratorClass, "a100")), want: field.ErrorList{
			at("metadata.annotations[ome.io/accelerator-class]", "annotation ome.io/accelerator-class: AcceleratorClass a100 does not qualify: does not hold the model: needs ≥ 168 GB, group has 1 × 40 GiB (42.9 GB; 70B parameters × 2 bytes (unquantized) × 1.2 headroom)")}},
		{name: "preferred classes, each at its entry", objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("70B"))}, csrs: []*v1beta1.ClusterServingRuntime{rt("rt", gpus(1, 0))},
			classes: []*v1beta1.AcceleratorClass{a100}}, svc: isvc("m", withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{"a100", "a100"}})), want: field.ErrorList{
			at("spec.acceleratorSelector.preferredClasses", "no class in spec.acceleratorSelector.preferredClasses fits; relax requiredCapabilities or list another class"),
			at("spec.acceleratorSelector.preferredClasses[0]", "AcceleratorClass/a100: does not hold the model: needs ≥ 168 GB, group has 1 × 40 GiB (42.9 GB; 70B parameters × 2 bytes (unquantized) × 1.2 headroom)")}},
		{name: "no class qualifies: the model does not fit", objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("70B"))}, csrs: []*v1beta1.ClusterServingRuntime{rt("rt", gpus(1, 0))},
			classes: []*v1beta1.AcceleratorClass{a100}}, svc: isvc("m"), want: field.ErrorList{
			at("spec.acceleratorSelector", "no AcceleratorClass qualifies for ClusterServingRuntime/rt; relax the requirements or add a class that meets them"),
			at("spec.model.name", "AcceleratorClass/a100: does not hold the model: needs ≥ 168 GB, group has 1 × 40 GiB (42.9 GB; 70B parameters × 2 bytes (unquantized) × 1.2 headroom)")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.objs.load().Select(tt.svc)
			var se *Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.want, se.Errors())
			for _, e := range se.Errors()[1:] { // every candidate's line is in the message too
				assert.Contains(t, err.Error(), "\n  - "+e.Detail)
			}
		})
	}
}

// An error without a service or a field is the reason alone, at the root.
func TestErrorsWithoutAService(t *testing.T) {
	_, err := NewIndex().Select(nil)
	var se *Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, field.ErrorList{invalidAt("", "no InferenceService given")}, se.Errors())
}
