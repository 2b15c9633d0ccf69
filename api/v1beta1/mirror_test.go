package v1beta1

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// RunnerSpec and PodSpec mirror corev1.Container and corev1.PodSpec so that
// a plain Go conversion turns one into the other. Go's conversion ignores
// struct tags, so the compiler would not notice a JSON name that drifted
// from Kubernetes'; this test does.
func TestMirrorsKeepKubernetesJSONNames(t *testing.T) {
	cases := []struct {
		name       string
		ours, k8s  reflect.Type
		wantFields int
	}{
		{"RunnerSpec/Container", reflect.TypeFor[RunnerSpec](), reflect.TypeFor[corev1.Container](), reflect.TypeFor[corev1.Container]().NumField()},
		{"PodSpec/PodSpec", reflect.TypeFor[PodSpec](), reflect.TypeFor[corev1.PodSpec](), reflect.TypeFor[corev1.PodSpec]().NumField()},
	}
	jsonName := func(f reflect.StructField) string { return strings.Split(f.Tag.Get("json"), ",")[0] }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantFields, tc.ours.NumField())
			for i := 0; i < tc.ours.NumField() && i < tc.k8s.NumField(); i++ {
				o, k := tc.ours.Field(i), tc.k8s.Field(i)
				assert.Equal(t, k.Name, o.Name, "field %d", i)
				assert.Equal(t, k.Type, o.Type, "field %s", o.Name)
				assert.Equal(t, jsonName(k), jsonName(o), "JSON name of %s", o.Name)
			}
		})
	}
}

// A runner written in YAML converts to the container Kubernetes would
// decode from the same YAML.
func TestRunnerConvertsToContainer(t *testing.T) {
	doc := []byte(`
name: main
image: lmsysorg/sglang:v0.5.5.post3
command: [python3, -m, sglang.launch_server]
args: [--port, "8080"]
env: [{name: A, value: "1"}]
resources: {limits: {nvidia.com/gpu: "2"}}
readinessProbe: {httpGet: {path: /health, port: 8080}}
`)
	var r RunnerSpec
	var c corev1.Container
	assert.NoError(t, yaml.UnmarshalStrict(doc, &r))
	assert.NoError(t, yaml.UnmarshalStrict(doc, &c))
	assert.Equal(t, c, corev1.Container(r))
}
