package selection

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Item 13 of issue 10: seed 002's platform base set compares GPU memory with
// "Lt 24Gi" and "Gte 32Gi", which node affinity cannot express (no Gte; Gt
// and Lt compare integers). berth denies them with the exact path, the
// value and what to write instead, rather than match nodes by a rule the
// pods' affinity could not state.
func TestValidateDiscoverySeedBaseSet(t *testing.T) {
	load := func(f string) *v1beta1.AcceleratorClassSpec {
		b, err := os.ReadFile("../api/v1beta1/testdata/seeds/" + f)
		require.NoError(t, err)
		ac := &v1beta1.AcceleratorClass{}
		require.NoError(t, yaml.Unmarshal(b, ac))
		return &ac.Spec
	}
	term := field.NewPath("spec", "discovery", "nodeSelectorTerms").Index(0).Child("matchExpressions")
	tests := map[string]field.ErrorList{
		"002-base-set-small-gpu.yaml": {field.Invalid(term.Index(0).Child("values").Index(0), "24Gi",
			`Lt compares integers, so "24Gi" never matches a node; nvidia.com/gpu.memory counts MiB: write operator Lt with value "24576"`)},
		"002-base-set-medium-gpu.yaml": {
			field.Invalid(term.Index(0).Child("operator"), "Gte",
				`node affinity has no Gte, so pods could not be placed by it; nvidia.com/gpu.memory counts MiB: write operator Gt with value "32767"`),
			field.Invalid(term.Index(1).Child("values").Index(0), "80Gi",
				`Lt compares integers, so "80Gi" never matches a node; nvidia.com/gpu.memory counts MiB: write operator Lt with value "81920"`)},
		"002-base-set-large-gpu.yaml": {field.Invalid(term.Index(0).Child("operator"), "Gte",
			`node affinity has no Gte, so pods could not be placed by it; nvidia.com/gpu.memory counts MiB: write operator Gt with value "81919"`)},
		"002-examples-nvidia-a100-40gb.yaml": nil,
		"002-examples-amd-mi250x.yaml":       nil,
	}
	for f, want := range tests {
		t.Run(f, func(t *testing.T) {
			assert.Equal(t, want, ValidateDiscovery(load(f)))
		})
	}
}

func TestValidateDiscoveryOperators(t *testing.T) {
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) *v1beta1.AcceleratorClassSpec {
		s := &v1beta1.AcceleratorClassSpec{}
		s.Discovery.NodeSelectorTerms = []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}}
		return s
	}
	e := field.NewPath("spec", "discovery", "nodeSelectorTerms").Index(0).Child("matchExpressions").Index(0)
	tests := []struct {
		name string
		spec *v1beta1.AcceleratorClassSpec
		want field.ErrorList
	}{
		{"Gt with an integer is fine", expr("nvidia.com/gpu.memory", "Gt", "40960"), nil},
		{"In, Exists", expr("gpu", "In", "a"), nil},
		{"Gte of an integer", expr("example.com/cores", "Gte", "8"), field.ErrorList{field.Invalid(e.Child("operator"), "Gte",
			`node affinity has no Gte, so pods could not be placed by it; write operator Gt with value "7"`)}},
		{"Lte of an integer", expr("example.com/cores", "Lte", "8"), field.ErrorList{field.Invalid(e.Child("operator"), "Lte",
			`node affinity has no Lte, so pods could not be placed by it; write operator Lt with value "9"`)}},
		{"a quantity on a label of unknown unit", expr("example.com/vram", "Lt", "24Gi"), field.ErrorList{field.Invalid(e.Child("values").Index(0), "24Gi",
			`Lt compares integers, so "24Gi" never matches a node; write the bound as an integer in the label's own unit, or use In with the values your nodes carry`)}},
		{"an unknown operator", expr("gpu", "Matches", "a.*"), field.ErrorList{field.NotSupported(e.Child("operator"), "Matches", []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})}},
		{"Gt needs one value", expr("gpu", "Gt", "1", "2"), field.ErrorList{field.Invalid(e.Child("values"), []string{"1", "2"}, "Gt takes exactly one integer value")}},
		{"In needs values", expr("gpu", "In"), field.ErrorList{field.Required(e.Child("values"), "In needs at least one value")}},
		{"Exists takes none", expr("gpu", "Exists", "a"), field.ErrorList{field.Forbidden(e.Child("values"), "Exists takes no values")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ValidateDiscovery(tt.spec))
		})
	}
}
