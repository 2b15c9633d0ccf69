package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// A service no runtime can serve is denied with selection's text as the
// message (every candidate and why it lost) and one status cause per
// selection error, at its path: kubectl prints the causes.
func TestUnresolvedServiceIsDeniedWithCauses(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	v2 := v1beta1.ProtocolOpenInferenceV2
	isvc.Spec.ProtocolVersion = &v2
	_, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.False(t, resp.Allowed)

	_, err := w.index.Select(isvc)
	var se *selection.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, err.Error(), resp.Result.Message, "the message is selection's text")
	errs := se.Errors()
	assert.Equal(t, field.ErrorList{
		{Type: field.ErrorTypeInvalid, Field: "spec.runtime.name", BadValue: field.OmitValueType{},
			Detail: "no runtime can serve BaseModel/mistral-7b-instruct (format safetensors 1.0.0, framework transformers 4.36.2, architecture MistralForCausalLM, size 7B, protocol openInference-v2); fix one of these runtimes or name one in spec.runtime"},
		{Type: field.ErrorTypeInvalid, Field: "spec.protocolVersion", BadValue: field.OmitValueType{},
			Detail: "ClusterServingRuntime/srt-mistral-7b-instruct-2: does not serve protocol openInference-v2 (serves openAI)"},
		{Type: field.ErrorTypeInvalid, Field: "spec.protocolVersion", BadValue: field.OmitValueType{},
			Detail: "ClusterServingRuntime/srt-mistral-7b-instruct: does not serve protocol openInference-v2 (serves openAI)"},
	}, errs)
	require.NotNil(t, resp.Result.Details)
	assert.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
	var causes []metav1.StatusCause
	for _, e := range errs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: e.Field, Message: "Invalid value: " + e.Detail})
		assert.Contains(t, resp.Result.Message, e.Detail)
	}
	assert.Equal(t, causes, resp.Result.Details.Causes)
}

// The decoder's class is chosen under the engine's runtime: its failure is
// still a selection error, with the override's path.
func TestDecoderSelectionErrorKeepsItsFields(t *testing.T) {
	se := &selection.Error{Code: selection.CodeNoAcceleratorClass, Service: "InferenceService ns/x", Field: "spec.acceleratorSelector",
		Reason:          "InferenceService ns/x: no AcceleratorClass qualifies for ClusterServingRuntime/rt; relax the requirements or add a class that meets them",
		Candidates:      []string{"AcceleratorClass/a100: spec.acceleratorSelector.requiredCapabilities: needs fp8"},
		CandidateFields: []string{"spec.acceleratorSelector"}}
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}
	engine := &selection.Decision{Runtime: selection.Runtime{Kind: selection.KindClusterServingRuntime, Name: "rt"}}
	err := decoderError(isvc, engine, renameSelector(se, "spec.decoder.acceleratorOverride"))
	var got *selection.Error
	require.ErrorAs(t, err, &got)
	assert.Equal(t, &selection.Error{Code: selection.CodeNoAcceleratorClass, Service: "InferenceService ns/x", Field: "spec.decoder.acceleratorOverride",
		Reason:          "InferenceService ns/x: the decoder's AcceleratorClass, under runtime ClusterServingRuntime/rt: no AcceleratorClass qualifies for ClusterServingRuntime/rt; relax the requirements or add a class that meets them",
		Candidates:      []string{"AcceleratorClass/a100: spec.decoder.acceleratorOverride.requiredCapabilities: needs fp8"},
		CandidateFields: []string{"spec.decoder.acceleratorOverride"}}, got)
}
