package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestValidateRuntimeSpec(t *testing.T) {
	spec := func(opts ...rtOpt) *v1beta1.ServingRuntimeSpec { return &csr("x", opts...).Spec }
	const notVersion = "is not major, major.minor or major.minor.patch with optional PEP 440 suffixes (e.g. 1, 1.3, 4.36.2, v1.0.0, 4.45.0.dev0, 1.0rc1, 2.0.post1, 2.1.0+cu121)"
	tests := []struct {
		name     string
		spec     *v1beta1.ServingRuntimeSpec
		errs     field.ErrorList
		warnings []string
	}{
		{name: "valid", spec: spec(formats(format("safetensors", "1.0.0", prio(1)), format("safetensors", "2", prio(1))), sizes("5B", "9B"))},
		{name: "one-sided ranges are valid", spec: spec(formats(format("safetensors", "1")), sizes("", "9b"))},
		{name: "priority below 1", spec: spec(formats(format("safetensors", "1", prio(0)))),
			errs: field.ErrorList{invalidAt("spec.supportedModelFormats[0].priority", "must be at least 1, got 0")}},
		{name: "priority without autoSelect", spec: spec(formats(format("safetensors", "1", prio(2), manual()))),
			warnings: []string{"spec.supportedModelFormats[0].priority: has no effect without autoSelect: true"}},
		{name: "one format name, two priorities", spec: spec(formats(format("safetensors", "1", prio(1)), format("SafeTensors", "2", prio(2)))),
			errs: field.ErrorList{invalidAt("spec.supportedModelFormats[1].priority", "format SafeTensors has priority 2 here but 1 in spec.supportedModelFormats[0]; one format keeps one priority across versions")}},
		{name: "one format name, priority set and unset", spec: spec(formats(format("safetensors", "1", prio(1)), format("safetensors", "2"))),
			errs: field.ErrorList{invalidAt("spec.supportedModelFormats[1].priority", "format safetensors has priority unset here but 1 in spec.supportedModelFormats[0]; one format keeps one priority across versions")}},
		{name: "unparseable format version", spec: spec(formats(format("safetensors", "1.0.0-nightly"))),
			errs: field.ErrorList{invalidAt("spec.supportedModelFormats[0].modelFormat.version", `version "1.0.0-nightly" `+notVersion)}},
		{name: "unparseable deprecated version", spec: spec(formats(v1beta1.SupportedModelFormat{Name: "sklearn", Version: ptr("one")})),
			errs: field.ErrorList{invalidAt("spec.supportedModelFormats[0].version", `version "one" `+notVersion)}},
		{name: "unparseable framework version", spec: spec(formats(format("safetensors", "", framework("transformers", "latest", "")))),
			errs: field.ErrorList{invalidAt("spec.supportedModelFormats[0].modelFramework.version", `version "latest" `+notVersion)}},
		{name: "unknown operator", spec: spec(formats(format("safetensors", "1", formatOp("Newer")))),
			errs: field.ErrorList{invalidAt("spec.supportedModelFormats[0].modelFormat.version", `operator "Newer" is not Equal, GreaterThan or GreaterThanOrEqual`)}},
		{name: "unparseable size", spec: spec(formats(format("safetensors", "")), sizes("5GB", "")),
			errs: field.ErrorList{invalidAt("spec.modelSizeRange.min", `size "5GB" is not a number with an optional K, M, B or T suffix (e.g. 500M, 7B, 7.6B, 1.5T)`)}},
		{name: "min above max", spec: spec(formats(format("safetensors", "")), sizes("9B", "5B")),
			errs: field.ErrorList{invalidAt("spec.modelSizeRange", "min 9B is greater than max 5B")}},
		{name: "no format name", spec: spec(formats(v1beta1.SupportedModelFormat{})),
			errs: field.ErrorList{invalidAt("spec.supportedModelFormats[0]", "no format name; set modelFormat.name (or the deprecated name)")}},
		{name: "bad compute capability", spec: spec(formats(format("safetensors", "")), accel(&v1beta1.AcceleratorRequirements{RequiredCapabilities: &v1beta1.AcceleratorCapabilities{MinComputeCapability: "nine"}})),
			errs: field.ErrorList{invalidAt("spec.acceleratorRequirements.requiredCapabilities.minComputeCapability", `compute capability "nine" is not a decimal number such as 8.0 or 10.0`)}},
		{name: "bad preference condition", spec: spec(formats(format("safetensors", "")), accel(&v1beta1.AcceleratorRequirements{PreferenceOrder: []v1beta1.AcceleratorPreference{{Class: "a", Conditions: []v1beta1.PreferenceCondition{{ModelSize: "~30B"}}}}})),
			errs: field.ErrorList{invalidAt("spec.acceleratorRequirements.preferenceOrder[0].conditions[0].modelSize", `size "~30B" is not a number with an optional K, M, B or T suffix (e.g. 500M, 7B, 7.6B, 1.5T) (write e.g. <30B or >=4096)`)}},
		{name: "empty preferred class", spec: spec(formats(format("safetensors", "")), accel(&v1beta1.AcceleratorRequirements{PreferenceOrder: []v1beta1.AcceleratorPreference{{}}})),
			errs: field.ErrorList{invalidAt("spec.acceleratorRequirements.preferenceOrder[0].class", "is empty; name an AcceleratorClass")}},
		{name: "nil spec", spec: nil, errs: field.ErrorList{invalidAt("spec", "is empty; set supportedModelFormats")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, warnings := ValidateRuntimeSpec(field.NewPath("spec"), tt.spec)
			assert.Equal(t, tt.errs, errs)
			assert.Len(t, warnings, len(tt.warnings))
			for i, w := range tt.warnings {
				assert.Contains(t, warnings[i], w)
			}
		})
	}
}

// TestValidateRuntimeSpecPrintsAsBefore: berth's denials print these
// errors as "<field>: <detail>"; the field package's own text names the
// field too, so a client reading Status.Details.Causes gets the path.
func TestValidateRuntimeSpecPrintsAsBefore(t *testing.T) {
	errs, _ := ValidateRuntimeSpec(field.NewPath("spec"), &csr("x", formats(format("safetensors", "1", prio(0)))).Spec)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.supportedModelFormats[0].priority: Invalid value: must be at least 1, got 0", errs[0].Error())
}

func TestPriorityConflicts(t *testing.T) {
	existing := objects{
		csrs: []*v1beta1.ClusterServingRuntime{
			csr("srt-mistral-7b-instruct", formats(format("safetensors", "1.0.0", prio(1), arch("MistralForCausalLM"))), sizes("5B", "9B")),
			csr("off", formats(format("safetensors", "1.0.0", prio(3))), disabled()),
		},
		srs: []*v1beta1.ServingRuntime{sr("team", "local", formats(format("safetensors", "1.0.0", prio(2))))},
	}
	tests := []struct {
		name      string
		kind, ns  string
		spec      *v1beta1.ServingRuntimeSpec
		conflicts []string
	}{
		{name: "identical entry and priority", kind: KindClusterServingRuntime,
			spec:      &csr("new", formats(format("safetensors", "1.0.0", prio(1), arch("MistralForCausalLM"))), sizes("5B", "9B")).Spec,
			conflicts: []string{"priority 1 for format safetensors is also used by ClusterServingRuntime/srt-mistral-7b-instruct (supportedModelFormats[0]), and both could serve the same model; give ClusterServingRuntime/new or ClusterServingRuntime/srt-mistral-7b-instruct a different priority"}},
		{name: "overlapping, not identical, ranges; version at lower precision; no architecture", kind: KindClusterServingRuntime,
			spec:      &csr("new", formats(format("safetensors", "1", prio(1))), sizes("8B", "70B")).Spec,
			conflicts: []string{"ClusterServingRuntime/srt-mistral-7b-instruct"}},
		{name: "disjoint ranges", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "1.0.0", prio(1))), sizes("10B", "")).Spec},
		{name: "another priority", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "1.0.0", prio(2)))).Spec},
		{name: "incompatible versions", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "2", prio(1)))).Spec},
		{name: "another architecture", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "1.0.0", prio(1), arch("LlamaForCausalLM")))).Spec},
		{name: "another quantization", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "1.0.0", prio(1), quant("fp8")))).Spec},
		{name: "no shared protocol (empty means openAI)", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "1.0.0", prio(1))), protocols(v1beta1.ProtocolOpenInferenceV2)).Spec},
		{name: "a disabled runtime conflicts with nothing", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "1.0.0", prio(3)))).Spec},
		{name: "a disabled new runtime conflicts with nothing", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "1.0.0", prio(1))), disabled()).Spec},
		{name: "updating the same runtime is no conflict", kind: KindClusterServingRuntime,
			spec: &csr("srt-mistral-7b-instruct", formats(format("safetensors", "1.0.0", prio(1)))).Spec},
		{name: "a namespaced runtime never ties with cluster ones", kind: KindServingRuntime, ns: "team",
			spec: &sr("team", "new", formats(format("safetensors", "1.0.0", prio(1)))).Spec},
		{name: "same namespace conflicts", kind: KindServingRuntime, ns: "team",
			spec:      &sr("team", "new", formats(format("safetensors", "1.0.0", prio(2)))).Spec,
			conflicts: []string{"ServingRuntime/local"}},
		{name: "another namespace does not", kind: KindServingRuntime, ns: "other",
			spec: &sr("other", "new", formats(format("safetensors", "1.0.0", prio(2)))).Spec},
		{name: "unset priorities do not conflict", kind: KindClusterServingRuntime,
			spec: &csr("new", formats(format("safetensors", "1.0.0"))).Spec},
	}
	x := existing.load()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := x.PriorityConflicts(tt.kind, tt.ns, "new", tt.spec)
			if tt.name == "updating the same runtime is no conflict" {
				got = x.PriorityConflicts(tt.kind, tt.ns, "srt-mistral-7b-instruct", tt.spec)
			}
			require.Len(t, got, len(tt.conflicts), "%v", got)
			for i, c := range tt.conflicts {
				assert.Equal(t, "spec.supportedModelFormats[0].priority", got[i].Field)
				assert.Equal(t, field.ErrorTypeInvalid, got[i].Type)
				assert.Contains(t, got[i].Detail, c)
			}
		})
	}
}
