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

// applyRaw applies p to original and returns the result as JSON.
func applyRaw(t *testing.T, original string, p []byte) string {
	t.Helper()
	if len(p) == 0 {
		return original
	}
	decoded, err := jsonpatchapply.DecodePatch(p)
	require.NoError(t, err)
	out, err := decoded.Apply([]byte(original))
	require.NoError(t, err)
	return string(out)
}

// The three-way walk on raw documents: each case gives the request, its
// round trip and the mutated object (as encoding/json writes them) and
// the document the patch must produce.
func TestCreateFromJSON(t *testing.T) {
	for _, c := range []struct {
		name                   string
		original, rt, mut, out string
	}{{
		name:     "an unknown field in an array element stays while its sibling changes",
		original: `{"c":[{"name":"a","future":1},{"name":"b"}]}`,
		rt:       `{"c":[{"name":"a"},{"name":"b"}]}`,
		mut:      `{"c":[{"name":"a","image":"i"},{"name":"b"}]}`,
		out:      `{"c":[{"name":"a","future":1,"image":"i"},{"name":"b"}]}`,
	}, {
		name:     "an array grows and shrinks at its end",
		original: `{"a":[1,2,3],"b":[1]}`,
		rt:       `{"a":[1,2,3],"b":[1]}`,
		mut:      `{"a":[1],"b":[1,2,3]}`,
		out:      `{"a":[1],"b":[1,2,3]}`,
	}, {
		name:     "what only the round trip wrote or rewrote is left as the request had it",
		original: `{"r":{"cpu":"1000m"},"x":1}`,
		rt:       `{"r":{"cpu":"1"},"x":1,"status":{}}`,
		mut:      `{"r":{"cpu":"1"},"x":2,"status":{}}`,
		out:      `{"r":{"cpu":"1000m"},"x":2}`,
	}, {
		name:     "a member the request lacks is added whole, its parent too",
		original: `{}`,
		rt:       `{"spec":{}}`,
		mut:      `{"spec":{"nodeSelector":{"a":"b"}}}`,
		out:      `{"spec":{"nodeSelector":{"a":"b"}}}`,
	}, {
		name:     "a member the mutation dropped is removed; an unknown one stays",
		original: `{"labels":{"a":"b","c":"d"},"future":true}`,
		rt:       `{"labels":{"a":"b","c":"d"}}`,
		mut:      `{"labels":{"a":"b"}}`,
		out:      `{"labels":{"a":"b"},"future":true}`,
	}, {
		name:     "keys with escapes, slashes and tildes",
		original: `{"m":{"a\u002fb":"1","t~x":"2"}}`,
		rt:       `{"m":{"a/b":"1","t~x":"2"}}`,
		mut:      `{"m":{"a/b":"9","t~x":"8","q\"k":"7"}}`,
		out:      `{"m":{"a/b":"9","t~x":"8","q\"k":"7"}}`,
	}, {
		name:     "a repeated key in the request: the last counts, as encoding/json reads it",
		original: `{"x":{"keep":1},"x":{"a":1,"keep":2}}`,
		rt:       `{"x":{"a":1}}`,
		mut:      `{"x":{"a":2}}`,
		out:      `{"x":{"a":2,"keep":2}}`,
	}, {
		name:     "a type change replaces",
		original: `{"v":{"a":1},"w":null}`,
		rt:       `{"v":{"a":1}}`,
		mut:      `{"v":[1],"w":{"b":1}}`,
		out:      `{"v":[1],"w":{"b":1}}`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			p, err := CreateFromJSON([]byte(c.original), []byte(c.rt), []byte(c.mut))
			require.NoError(t, err)
			assert.JSONEq(t, c.out, applyRaw(t, c.original, p), "patch %s", p)
		})
	}
}

// Where the request holds exactly what the round trip holds, nothing there
// can be lost, and the mutated value replaces it in one operation: the
// API server applies a patch by parsing every object on each operation's
// path, so one operation per changed subtree costs it far less than one
// per changed member. Where the request holds more (an unknown field), the
// walk descends as before, down to the subtrees that are the round trip's.
func TestCreateFromJSONReplacesWhatTheRequestHoldsAsTheRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name                   string
		original, rt, mut, ops string
	}{{
		name:     "a subtree the request holds as the round trip: one replace",
		original: `{"metadata":{"name":"p"},"spec":{"a":1,"b":[1,2],"c":{"d":1}}}`,
		rt:       `{"metadata":{"name":"p"},"spec":{"a":1,"b":[1,2],"c":{"d":1}}}`,
		mut:      `{"metadata":{"name":"p"},"spec":{"a":2,"b":[1,3],"c":{"d":2},"e":1}}`,
		ops:      `[{"op":"replace","path":"/spec","value":{"a":2,"b":[1,3],"c":{"d":2},"e":1}}]`,
	}, {
		name:     "an unknown field: descend to it, replace beside it",
		original: `{"spec":{"future":1,"c":{"d":1},"b":[1,2]}}`,
		rt:       `{"spec":{"c":{"d":1},"b":[1,2]}}`,
		mut:      `{"spec":{"c":{"d":2,"e":3},"b":[1,3]}}`,
		ops:      `[{"op":"replace","path":"/spec/c","value":{"d":2,"e":3}},{"op":"replace","path":"/spec/b","value":[1,3]}]`,
	}, {
		name:     "an unknown field in an element: descend into the array, replace the other element",
		original: `{"c":[{"name":"a","future":1,"env":[{"n":"x"}]},{"name":"b"}]}`,
		rt:       `{"c":[{"name":"a","env":[{"n":"x"}]},{"name":"b"}]}`,
		mut:      `{"c":[{"name":"a","env":[{"n":"y"}]},{"name":"b","image":"i"}]}`,
		ops:      `[{"op":"replace","path":"/c/0/env","value":[{"n":"y"}]},{"op":"replace","path":"/c/1","value":{"name":"b","image":"i"}}]`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			p, err := CreateFromJSON([]byte(c.original), []byte(c.rt), []byte(c.mut))
			require.NoError(t, err)
			assert.JSONEq(t, c.ops, string(p))
		})
	}
}

func TestCreateFromJSONRejectsMalformed(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{"a":`, `{"a" 1}`, `{"a":1,}`, `{"a":"x}`, `{"a":[1,}`} {
		_, err := CreateFromJSON([]byte(bad), []byte(`{"a":1}`), []byte(`{"a":2}`))
		assert.Error(t, err, "%q", bad)
	}
}

// BenchmarkCreate is the patch of a composed pod over the skeleton the
// reconciler sends.
func BenchmarkCreate(b *testing.B) {
	rt := decodePod(&testing.T{}, podWithUnknownFields)
	mutated := rt.DeepCopy()
	mutated.Spec.NodeSelector = map[string]string{"nvidia.com/gpu.product": "H100"}
	mutated.Spec.Containers[0].Args = []string{"--tp-size=2", "--port=8080"}
	mutated.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}
	mutated.Labels["ome.io/revision"] = "abc"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Create([]byte(podWithUnknownFields), rt, mutated); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzCreateFromJSON: any request bytes give a patch or an error, never a
// panic; a patch is valid JSON Patch that applies to the request.
func FuzzCreateFromJSON(f *testing.F) {
	f.Add(`{"a":{"b":[1,{"c":2}]},"d":"e"}`)
	f.Add(`{"a":{"b":[1]},"a":{"b":[{"x\u002f":1}]}}`)
	f.Fuzz(func(t *testing.T, original string) {
		rt := `{"a":{"b":[1,{"c":2}]}}`
		mut := `{"a":{"b":[1,{"c":3},4],"n":{"k":"v"}}}`
		p, err := CreateFromJSON([]byte(original), []byte(rt), []byte(mut))
		if err != nil || len(p) == 0 {
			return
		}
		decoded, err := jsonpatchapply.DecodePatch(p)
		require.NoError(t, err, "patch %s", p)
		var v any
		if json.Unmarshal([]byte(original), &v) != nil {
			return // the walk checks structure, not every literal
		}
		_, _ = decoded.Apply([]byte(original)) // the request's shape may not match the round trip's
	})
}

func TestSkipString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int // index past the string; 0: malformed
	}{
		{`"" x`, 2},
		{`"abc", 1`, 5},
		{`"a\"b" x`, 6},
		{`"a\\" x`, 5},
		{`"a\\\"b" x`, 8},
		{`"\\\\" x`, 6},
		{`"\u0022" x`, 8},
		{`"é\"" x`, 6}, // é is two bytes
		{`"abc`, 0},
		{`"abc\"`, 0},
		{`"`, 0},
	} {
		got, err := skipString([]byte(c.in), 0)
		if c.want == 0 {
			assert.Error(t, err, "%s", c.in)
			continue
		}
		if assert.NoError(t, err, "%s", c.in) {
			assert.Equal(t, c.want, got, "%s", c.in)
		}
	}
}
