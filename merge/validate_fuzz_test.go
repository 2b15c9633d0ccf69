package merge

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// FuzzValidateRuntimeTemplates: on any strings, ValidateRuntimeTemplates
// does not panic, gives the same errors twice, and names only rendered
// strings that open an action: each error's field is one of the paths the
// strings were put at, and its string contains "{{".
func FuzzValidateRuntimeTemplates(f *testing.F) {
	for _, s := range []string{"--x={{.Name}}", "{{.Spec.Model}}", "{{.Name", `{{index .Labels "a"}}`, "{{ messages }}", "{{{.Name}}", "{{index .Labels a}}{{.Namespace"} {
		f.Add(s, "plain")
	}
	f.Fuzz(func(t *testing.T, arg, env string) {
		spec := &v1beta1.ServingRuntimeSpec{
			EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Name: "main", Args: []string{arg}, Env: []corev1.EnvVar{{Name: "E", Value: env}}}},
		}
		at := field.NewPath("spec")
		errs := ValidateRuntimeTemplates(spec, at)
		again := ValidateRuntimeTemplates(spec, at)
		if len(errs) != len(again) {
			t.Fatalf("not deterministic: %v then %v", errs, again)
		}
		strs := map[string]string{
			"spec.engineConfig.runner.args[0]":      arg,
			"spec.engineConfig.runner.env[0].value": env,
		}
		for i, e := range errs {
			if *e != *again[i] {
				t.Fatalf("not deterministic: %v then %v", e, again[i])
			}
			s, ok := strs[e.Field]
			if !ok {
				t.Fatalf("error at %q, which is no rendered string: %v", e.Field, e)
			}
			if !strings.Contains(s, "{{") {
				t.Fatalf("%q has no action but is reported: %v", s, e)
			}
			if e.Type != field.ErrorTypeInvalid || e.Detail == "" {
				t.Fatalf("unexpected error: %#v", e)
			}
		}
	})
}
