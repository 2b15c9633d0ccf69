package patch

import (
	"encoding/json"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// A pod with fields that k8s.io/api does not know, at the top, in the spec
// and inside a container: all three must survive a mutation.
const podWithUnknownFields = `{
 "apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}},
 "futureTopLevel": {"x": 1},
 "spec": {
  "futureSpecField": "keep-me",
  "containers": [{"name": "main", "image": "img", "futureContainerField": [1, 2, 3]}]
 }
}`

func decodePod(t *testing.T, raw string) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	require.NoError(t, json.Unmarshal([]byte(raw), &pod))
	return &pod
}

func apply(t *testing.T, original string, p []byte) map[string]any {
	t.Helper()
	out := []byte(original)
	if len(p) > 0 {
		decoded, err := jsonpatchapply.DecodePatch(p)
		require.NoError(t, err)
		out, err = decoded.Apply([]byte(original))
		require.NoError(t, err)
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	return m
}

func TestCreateKeepsUnknownFields(t *testing.T) {
	rt := decodePod(t, podWithUnknownFields)
	mutated := rt.DeepCopy()
	mutated.Spec.NodeSelector = map[string]string{"nvidia.com/gpu.product": "H100"}
	mutated.Spec.Containers[0].Args = []string{"--tp-size=2"}
	mutated.Labels["ome.io/revision"] = "abc"

	p, err := Create([]byte(podWithUnknownFields), rt, mutated)
	require.NoError(t, err)
	got := apply(t, podWithUnknownFields, p)

	assert.Equal(t, map[string]any{"x": float64(1)}, got["futureTopLevel"])
	spec := got["spec"].(map[string]any)
	assert.Equal(t, "keep-me", spec["futureSpecField"])
	c := spec["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{float64(1), float64(2), float64(3)}, c["futureContainerField"])
	assert.Equal(t, []any{"--tp-size=2"}, c["args"])
	assert.Equal(t, map[string]any{"nvidia.com/gpu.product": "H100"}, spec["nodeSelector"])
}

func TestCreateStillRemovesWhatTheMutationRemoves(t *testing.T) {
	rt := decodePod(t, podWithUnknownFields)
	mutated := rt.DeepCopy()
	delete(mutated.Labels, "a")

	p, err := Create([]byte(podWithUnknownFields), rt, mutated)
	require.NoError(t, err)
	got := apply(t, podWithUnknownFields, p)
	md := got["metadata"].(map[string]any)
	assert.Empty(t, md["labels"])
	assert.Equal(t, "keep-me", got["spec"].(map[string]any)["futureSpecField"])
}

func TestCreateUnchangedIsEmpty(t *testing.T) {
	rt := decodePod(t, podWithUnknownFields)
	p, err := Create([]byte(podWithUnknownFields), rt, rt.DeepCopy())
	require.NoError(t, err)
	assert.Empty(t, p)
}

func TestCreateRejectsInvalidOriginal(t *testing.T) {
	_, err := Create([]byte(`{not json`), map[string]any{}, map[string]any{"a": 1})
	assert.Error(t, err)
}
