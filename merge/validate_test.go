package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestValidateRuntimeTemplates(t *testing.T) {
	tests := map[string]struct {
		args []string
		env  []corev1.EnvVar
		want []string
	}{
		"supported actions pass": {
			args: []string{"--served-model-name={{.Name}}", "--ns={{ .Namespace }}", `--team={{index .Labels "team-name"}}`, "--a={{.Annotations.owner}}"},
		},
		"jinja and shell stay literal": {
			args: []string{"--chat-template={{ messages[0]['content'] }}", "{% for m in messages %}", "${HOME}"},
		},
		"unsupported field": {
			args: []string{"--x", "--model={{.Spec.Model}}"},
			want: []string{"spec.engineConfig.runner.args[1]: template {{.Spec.Model}} is not one berth renders"},
		},
		"dashed key needs index": {
			env:  []corev1.EnvVar{{Name: "TEAM", Value: "{{.Labels.team-name}}"}},
			want: []string{"spec.engineConfig.runner.env[0].value: template {{.Labels.team-name}} is not one berth renders"},
		},
		"unquoted index key": {
			args: []string{"{{index .Labels team}}"},
			want: []string{"spec.engineConfig.runner.args[0]: template {{index .Labels team}}"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Args: tc.args, Env: tc.env}}}
			got := ValidateRuntimeTemplates(spec)
			assert.Len(t, got, len(tc.want), "%v", got)
			for i := range tc.want {
				if i < len(got) {
					assert.Contains(t, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestValidateRuntimeTemplatesIgnoresNonRenderedFields(t *testing.T) {
	spec := &v1beta1.ServingRuntimeSpec{ServingRuntimePodSpec: v1beta1.ServingRuntimePodSpec{
		Annotations: map[string]string{"doc": "{{.Spec.Anything}}"},
		Containers:  []corev1.Container{{Name: "c", Image: "img", Args: []string{"{{.Bad}}"}}},
	}}
	got := ValidateRuntimeTemplates(spec)
	assert.Equal(t, []string{`spec.containers[0].args[0]: template {{.Bad}} is not one berth renders; use {{.Name}}, {{.Namespace}}, {{.Labels.key}}, {{.Annotations.key}} or {{index .Labels "key-with-dashes"}}`}, got)
}
