package patch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// splitsLike fails t unless splitting every object and array in v (a part
// of the document ix indexes) gives the same members and elements, and the
// same errors, with the index as by scanning.
func splitsLike(t *testing.T, ix *ends, v []byte) {
	t.Helper()
	var children [][]byte
	if k := kind(v); k == '{' || k == '[' {
		require.GreaterOrEqual(t, ix.base(v), 0, "%s is not a part of the indexed document", v)
	}
	switch kind(v) {
	case '{':
		want, wantErr := objectMembers(v, nil, nil)
		got, gotErr := objectMembers(v, nil, ix)
		sameSplit(t, v, want, got, wantErr, gotErr)
		for _, m := range got {
			children = append(children, m.value)
		}
	case '[':
		want, wantErr := arrayElements(v, nil, nil)
		got, gotErr := arrayElements(v, nil, ix)
		sameSplit(t, v, want, got, wantErr, gotErr)
		children = got
	}
	for _, c := range children {
		splitsLike(t, ix, c)
	}
}

func sameSplit[T any](t *testing.T, v []byte, want, got T, wantErr, gotErr error) {
	t.Helper()
	require.Equal(t, wantErr, gotErr, "%s", v)
	require.Equal(t, want, got, "%s", v)
}

func TestEnds(t *testing.T) {
	for _, doc := range []string{
		`{}`,
		`{"a":{"b":[1,{"c":"}]"}],"d":"\"{"},"e":[[],{}],"f":null}`,
		` { "a" : [ 1 , "x\\" , { } ] , "b\"" : { "c" : true } } `,
		`{"k":"é\u0022]","l":[-1.5e3,"\\\\"]}`,
	} {
		var ix ends
		b := []byte(doc)
		require.True(t, ix.build(b), "%s", doc)
		splitsLike(t, &ix, b)
	}
	for _, bad := range []string{`{"a":[}`, `{"a":1`, `["a"]]`, `{"a":"b}`, `}`} {
		var ix ends
		assert.False(t, ix.build([]byte(bad)), "%s", bad)
		assert.Equal(t, -1, ix.base([]byte(bad)), "nothing indexed")
	}
	var ix ends
	doc := []byte(`{"a":[1]}`)
	require.True(t, ix.build(doc))
	assert.Equal(t, 5, ix.base(doc[5:8]))
	assert.Equal(t, -1, ix.base([]byte(`{"a":[1]}`)), "equal bytes elsewhere are not the document")
}

// FuzzEnds: on any bytes, a split with the index is the split without it.
func FuzzEnds(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,{"c":"}]"}],"d":"\"{"},"e":[[],{}]}`))
	f.Add([]byte(`[{"a":"\\"},"]"]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var ix ends
		if !ix.build(doc) {
			return
		}
		splitsLike(t, &ix, doc)
	})
}
