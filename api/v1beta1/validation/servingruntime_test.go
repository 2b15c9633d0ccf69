package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func runner(args []string, env ...corev1.EnvVar) *v1beta1.RunnerSpec {
	return &v1beta1.RunnerSpec{Name: "main", Image: "img", Args: args, Env: env}
}

func env(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func TestValidateServingRuntimeSpec(t *testing.T) {
	spec := field.NewPath("spec")
	engineRunner := spec.Child("engineConfig", "runner")
	cases := []struct {
		name string
		spec v1beta1.ServingRuntimeSpec
		want field.ErrorList
	}{
		{name: "duplicate env name in one runner", spec: v1beta1.ServingRuntimeSpec{
			EngineConfig: &v1beta1.EngineSpec{Runner: runner(nil, env("A", "1"), env("B", "2"), env("A", "3"))},
		}, want: field.ErrorList{duplicateEnv(engineRunner.Child("env"), 2, 0, "A")}},
		{name: "duplicate env name in an accelerator configuration", spec: v1beta1.ServingRuntimeSpec{
			AcceleratorConfigurations: []v1beta1.AcceleratorConfiguration{{Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: "h100"}, Env: []corev1.EnvVar{env("X", "1"), env("X", "1")}}},
		}, want: field.ErrorList{duplicateEnv(spec.Child("acceleratorConfigurations").Index(0).Child("env"), 1, 0, "X")}},
		{name: "one name in two containers is fine", spec: v1beta1.ServingRuntimeSpec{
			EngineConfig: &v1beta1.EngineSpec{Runner: runner(nil, env("A", "1")), Worker: &v1beta1.WorkerSpec{Runner: runner(nil, env("A", "2"))}},
		}},
		{name: "acceleratorOverride is a service setting, not a runtime's", spec: v1beta1.ServingRuntimeSpec{
			EngineConfig:  &v1beta1.EngineSpec{AcceleratorOverride: &v1beta1.AcceleratorSelector{PreferredClasses: []string{"h100"}}},
			DecoderConfig: &v1beta1.DecoderSpec{AcceleratorOverride: &v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost}},
		}, want: field.ErrorList{
			field.Forbidden(spec.Child("engineConfig", "acceleratorOverride"), overrideOnRuntimeDetail("engine")),
			field.Forbidden(spec.Child("decoderConfig", "acceleratorOverride"), overrideOnRuntimeDetail("decoder")),
		}},
		{name: "OME's and berth's accelerator fields disagree", spec: v1beta1.ServingRuntimeSpec{
			AcceleratorRequirements: &v1beta1.AcceleratorRequirements{AcceleratorClasses: []string{"nvidia-h100"}, SupportedClasses: []string{"nvidia-a100"}},
		}, want: field.ErrorList{field.Invalid(spec.Child("acceleratorRequirements", "acceleratorClasses"), []string{"nvidia-h100"},
			"differs from spec.acceleratorRequirements.supportedClasses [nvidia-a100]; set only one of them")}},
		{name: "OME's accelerator fields alone are fine", spec: v1beta1.ServingRuntimeSpec{
			AcceleratorRequirements: &v1beta1.AcceleratorRequirements{AcceleratorClasses: []string{"nvidia-h100"}, MinMemory: ptrTo(int64(80))},
		}},
		{name: "templates are merge's to check (merge.ValidateRuntimeTemplates)", spec: v1beta1.ServingRuntimeSpec{
			EngineConfig: &v1beta1.EngineSpec{Runner: runner([]string{"{{.Name", "{{.Spec.Model}}"}, env("A", "{{.Bad"))},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ValidateServingRuntimeSpec(&tc.spec, spec)); diff != "" {
				t.Errorf("ValidateServingRuntimeSpec (-want +got):\n%s", diff)
			}
		})
	}
}

func duplicateEnv(envPath *field.Path, i, first int, name string) *field.Error {
	return &field.Error{Type: field.ErrorTypeDuplicate, Field: envPath.Index(i).Child("name").String(), BadValue: name,
		Detail: "also " + envPath.Index(first).Child("name").String() + "; only the last definition would reach the pod, so remove one"}
}

func overrideOnRuntimeDetail(component string) string {
	return "acceleratorOverride chooses one InferenceService's class (spec." + component + ".acceleratorOverride) and is not read on a runtime; state what the runtime needs in spec.acceleratorRequirements, or per class in acceleratorConfigurations"
}
