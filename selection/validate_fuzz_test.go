package selection

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// FuzzValidateRuntimeSpec: on any versions, sizes, capabilities and
// conditions, ValidateRuntimeSpec does not panic and every error is an
// Invalid error under the given path with a detail; a value this package
// cannot parse is reported at its own field.
func FuzzValidateRuntimeSpec(f *testing.F) {
	f.Add("1.0.0", "5B", "9B", "8.0", "<30B", int32(1))
	f.Add("one", "5GB", "", "nine", "~30B", int32(0))
	f.Add("", "", "x", "", ">=4096", int32(-3))
	f.Fuzz(func(t *testing.T, version, lo, hi, cc, cond string, prio int32) {
		spec := &v1beta1.ServingRuntimeSpec{
			SupportedModelFormats: []v1beta1.SupportedModelFormat{{Name: "safetensors", Version: &version, AutoSelect: ptr(true), Priority: &prio}},
			ModelSizeRange:        &v1beta1.ModelSizeRangeSpec{Min: &lo, Max: &hi},
			AcceleratorRequirements: &v1beta1.AcceleratorRequirements{
				RequiredCapabilities: &v1beta1.AcceleratorCapabilities{MinComputeCapability: cc},
				PreferenceOrder:      []v1beta1.AcceleratorPreference{{Class: "a", Conditions: []v1beta1.PreferenceCondition{{ModelSize: cond}}}},
			},
		}
		errs, _ := ValidateRuntimeSpec(field.NewPath("spec"), spec)
		for _, e := range errs {
			if e.Type != field.ErrorTypeInvalid || e.Detail == "" || !strings.HasPrefix(e.Field, "spec.") {
				t.Fatalf("unexpected error: %#v", e)
			}
		}
		if _, err := ParseSize(lo); err != nil && lo != "" && !hasField(errs, "spec.modelSizeRange.min") {
			t.Fatalf("min %q does not parse but is not reported: %v", lo, errs)
		}
		if _, err := parseDecimal(cc); err != nil && cc != "" && !hasField(errs, "spec.acceleratorRequirements.requiredCapabilities.minComputeCapability") {
			t.Fatalf("compute capability %q does not parse but is not reported: %v", cc, errs)
		}
	})
}

func hasField(errs field.ErrorList, path string) bool {
	for _, e := range errs {
		if e.Field == path {
			return true
		}
	}
	return false
}
