package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderTemplate(t *testing.T) {
	data := TemplateData{
		Name: "llama", Namespace: "team-a",
		Labels:      map[string]string{"team": "search", "app.kubernetes.io/name": `a"b\c`, "empty": ""},
		Annotations: map[string]string{"ome.io/model": "Llama-3 & <friends>", "note": "{{.Name}}"},
	}
	tests := []struct {
		name, in, want, wantErr string
	}{
		{name: "no braces", in: "--port=8080", want: "--port=8080"},
		{name: "name and namespace", in: "{{.Name}}.{{.Namespace}}.svc", want: "llama.team-a.svc"},
		{name: "spaces inside braces", in: "{{ .Name }}", want: "llama"},
		{name: "label field", in: "--team={{.Labels.team}}", want: "--team=search"},
		{name: "empty label value is a value", in: "x{{.Labels.empty}}y", want: "xy"},
		{name: "index with quotes and backslashes in the value, no escaping", in: `{{index .Labels "app.kubernetes.io/name"}}`, want: `a"b\c`},
		{name: "index with raw string key", in: "{{index .Annotations `ome.io/model`}}", want: "Llama-3 & <friends>"},
		{name: "html characters are not escaped", in: `--m={{ index .Annotations "ome.io/model" }}`, want: "--m=Llama-3 & <friends>"},
		{name: "a value that looks like a template is not rendered again", in: "{{.Annotations.note}}", want: "{{.Name}}"},
		{name: "jinja stays literal", in: "{% for m in messages %}{{ m['content'] }}{% endfor %}", want: "{% for m in messages %}{{ m['content'] }}{% endfor %}"},
		{name: "jinja around a supported action", in: "{{ {{.Name}} }}", want: "{{ llama }}"},
		{name: "shell braces stay literal", in: "${HOME} {{ not a template }} $(VAR)", want: "${HOME} {{ not a template }} $(VAR)"},
		{name: "unclosed braces stay literal", in: "a {{.Name", want: "a {{.Name"},
		{name: "unsupported fields stay literal", in: "{{.Spec.Model}} {{.Labels}}", want: "{{.Spec.Model}} {{.Labels}}"},
		{name: "dotted key needs index and stays literal otherwise", in: "{{.Labels.app.kubernetes.io/name}}", want: "{{.Labels.app.kubernetes.io/name}}"},
		{name: "missing label is an error", in: "--owner={{.Labels.owner}}", wantErr: "template key .Labels.owner not found on InferenceService team-a/llama; add the label or remove the reference"},
		{name: "missing annotation via index is an error", in: `{{index .Annotations "a/b"}}`, wantErr: `template key index .Annotations "a/b" not found on InferenceService team-a/llama; add the annotation or remove the reference`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderTemplate(tc.in, data)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTemplateKeys(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: "{{.Name}} {{.Labels.a}} {{index .Annotations \"b/c\"}} {{ m.x }}", want: []string{"Labels.a", "Annotations.b/c"}},
		{in: "plain", want: nil},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, TemplateKeys(tc.in), tc.in)
	}
}
