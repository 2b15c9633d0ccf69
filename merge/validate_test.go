package merge

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

const (
	notRenderedHint = `is not one berth renders; use {{.Name}}, {{.Namespace}}, {{.Labels.key}}, {{.Annotations.key}} or {{index .Labels "key-with-dashes"}}`
	unclosedHint    = "is not closed: berth would pass it to the engine literally; add }}"
)

// unsupported is the error of a closed action berth does not render.
func unsupported(p *field.Path, action string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: p.String(), BadValue: field.OmitValueType{}, Detail: "template " + action + " " + notRenderedHint}
}

// unclosed is the error of an action never closed in s.
func unclosed(p *field.Path, s, action string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: p.String(), BadValue: s, Detail: "template action " + action + " " + unclosedHint}
}

func engineRunner(args []string, env ...corev1.EnvVar) *v1beta1.ServingRuntimeSpec {
	return &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Name: "main", Image: "img", Args: args, Env: env}}}
}

func TestValidateRuntimeTemplates(t *testing.T) {
	spec := field.NewPath("spec")
	runner := spec.Child("engineConfig", "runner")
	tests := map[string]struct {
		spec *v1beta1.ServingRuntimeSpec
		want field.ErrorList
	}{
		"supported actions pass": {
			spec: engineRunner([]string{"--served-model-name={{.Name}}", "--ns={{ .Namespace }}", `--team={{index .Labels "team-name"}}`, "--a={{.Annotations.owner}}"}),
		},
		"jinja and shell stay literal, closed or not": {
			spec: engineRunner([]string{"--chat-template={{ messages[0]['content'] }}", "{% for m in messages %}", "${HOME}", "--chat-template={% if x %}{{ bos_token", "${HOME}/{{"}),
		},
		"unsupported field": {
			spec: engineRunner([]string{"--x", "--model={{.Spec.Model}}"}),
			want: field.ErrorList{unsupported(runner.Child("args").Index(1), "{{.Spec.Model}}")},
		},
		"dashed key needs index": {
			spec: engineRunner(nil, corev1.EnvVar{Name: "TEAM", Value: "{{.Labels.team-name}}"}),
			want: field.ErrorList{unsupported(runner.Child("env").Index(0).Child("value"), "{{.Labels.team-name}}")},
		},
		"unquoted index key": {
			spec: engineRunner([]string{"{{index .Labels team}}"}),
			want: field.ErrorList{unsupported(runner.Child("args").Index(0), "{{index .Labels team}}")},
		},
		"unterminated {{.Name in an engine arg": {
			spec: engineRunner([]string{"--port=8080", "--served-model-name={{.Name"}),
			want: field.ErrorList{unclosed(runner.Child("args").Index(1), "--served-model-name={{.Name", "{{.Name")},
		},
		"unterminated after a closed one, in an env value of a KServe container": {
			spec: &v1beta1.ServingRuntimeSpec{ServingRuntimePodSpec: v1beta1.ServingRuntimePodSpec{Containers: []corev1.Container{{Name: "kserve-container",
				Env: []corev1.EnvVar{{Name: "MODEL", Value: `{{.Name}}-{{ index .Labels "team"`}}}}}},
			want: field.ErrorList{unclosed(spec.Child("containers").Index(0).Child("env").Index(0).Child("value"), `{{.Name}}-{{ index .Labels "team"`, `{{ index .Labels "team"`)},
		},
		"unterminated in a decoder leader command": {
			spec: &v1beta1.ServingRuntimeSpec{DecoderConfig: &v1beta1.DecoderSpec{Leader: &v1beta1.LeaderSpec{Runner: &v1beta1.RunnerSpec{Command: []string{"serve", "{{.Annotations.x"}}}}},
			want: field.ErrorList{unclosed(spec.Child("decoderConfig", "leader", "runner", "command").Index(1), "{{.Annotations.x", "{{.Annotations.x")},
		},
		"both in one string": {
			spec: engineRunner([]string{"{{.Spec.Model}} {{.Name"}),
			want: field.ErrorList{
				unsupported(runner.Child("args").Index(0), "{{.Spec.Model}}"),
				unclosed(runner.Child("args").Index(0), "{{.Spec.Model}} {{.Name", "{{.Name"),
			},
		},
		"in field order": {
			spec: engineRunner([]string{"{{.Name"}, corev1.EnvVar{Name: "A", Value: "{{.Bad}}"}),
			want: field.ErrorList{
				unclosed(runner.Child("args").Index(0), "{{.Name", "{{.Name"),
				unsupported(runner.Child("env").Index(0).Child("value"), "{{.Bad}}"),
			},
		},
		"probes and lifecycle hooks are not rendered": {
			spec: &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"{{.Name", "{{.Spec.Model}}"}}}},
				Lifecycle:     &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"{{.Bad}}"}}}},
			}}},
		},
		"annotations are not rendered": {
			spec: &v1beta1.ServingRuntimeSpec{ServingRuntimePodSpec: v1beta1.ServingRuntimePodSpec{
				Annotations: map[string]string{"doc": "{{.Spec.Anything}}"},
				Containers:  []corev1.Container{{Name: "c", Image: "img", Args: []string{"{{.Bad}}"}}},
			}},
			want: field.ErrorList{unsupported(spec.Child("containers").Index(0).Child("args").Index(0), "{{.Bad}}")},
		},
		"accelerator configuration env values are rendered": {
			spec: &v1beta1.ServingRuntimeSpec{AcceleratorConfigurations: []v1beta1.AcceleratorConfiguration{{
				Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: "h100"}, Env: []corev1.EnvVar{{Name: "X", Value: "{{.Labels.a-b}}"}}}}},
			want: field.ErrorList{unsupported(spec.Child("acceleratorConfigurations").Index(0).Child("env").Index(0).Child("value"), "{{.Labels.a-b}}")},
		},
		"nil spec": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ValidateRuntimeTemplates(tc.spec, spec)); diff != "" {
				t.Errorf("ValidateRuntimeTemplates (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateRuntimeTemplatesPrint: the text a denial shows for each kind
// of error ("<field>: <detail>" for an unsupported action, the field
// package's text with the value for an unclosed one).
func TestValidateRuntimeTemplatesPrint(t *testing.T) {
	errs := ValidateRuntimeTemplates(engineRunner([]string{"{{.Spec.Model}}", "{{.Name"}), field.NewPath("spec"))
	if len(errs) != 2 {
		t.Fatalf("want 2 errors, got %v", errs)
	}
	if got, want := errs[0].Field+": "+errs[0].Detail, "spec.engineConfig.runner.args[0]: template {{.Spec.Model}} "+notRenderedHint; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := errs[1].Error(), `spec.engineConfig.runner.args[1]: Invalid value: "{{.Name": template action {{.Name `+unclosedHint; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
