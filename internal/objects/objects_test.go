package objects

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAddFileLinesAndKinds: documents start at their first line of
// content; Lists are expanded; other kinds are kept untyped; a strict
// decoding error is at the misspelt field's line.
func TestAddFileLinesAndKinds(t *testing.T) {
	s := &Set{}
	s.AddFile("f.yaml", []byte(`# comment
apiVersion: ome.io/v1beta1
kind: AcceleratorClass
metadata: {name: a}
---

# another
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
---
- op: add
  path: /x
---
apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata: {name: bad}
spec:
  supportedModelFormats:
  - name: x
    priorty: 1
`))
	require.Len(t, s.Docs, 3)
	assert.Equal(t, Source{"f.yaml", 2}, s.Docs[0].Source)
	assert.Equal(t, "AcceleratorClass/a", s.Docs[0].Ref())
	assert.Equal(t, Source{"f.yaml", 8}, s.Docs[1].Source)
	assert.Equal(t, "n1", s.Nodes[0].Name)
	assert.Nil(t, s.Docs[2].Obj, "a Deployment is not berth's to read")
	assert.Equal(t, []Problem{{Source{"f.yaml", 28}, `ClusterServingRuntime/bad: unknown field "priorty"`}}, s.Problems)
}

// TestLineOf finds a field path's line, or the deepest part that exists.
func TestLineOf(t *testing.T) {
	d := &Doc{Source: Source{"f.yaml", 10}, YAML: []byte(`apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
spec:
  supportedModelFormats:
  - name: a
  - name: b
    priority: 2
  labels: {x: "1"}
`)}
	assert.Equal(t, 16, d.LineOf("spec.supportedModelFormats[1].priority"))
	assert.Equal(t, 15, d.LineOf("spec.supportedModelFormats[1].version"))
	assert.Equal(t, 17, d.LineOf("spec.labels[x]"))
	assert.Equal(t, 10, d.LineOf(""))
}

// TestDefaultNamespace puts namespaced objects that name none in the
// given namespace, as kubectl apply -n does, and leaves cluster objects.
func TestDefaultNamespace(t *testing.T) {
	s := &Set{}
	s.AddFile("f.yaml", []byte("apiVersion: ome.io/v1beta1\nkind: ServingRuntime\nmetadata: {name: r}\n---\napiVersion: ome.io/v1beta1\nkind: ClusterBaseModel\nmetadata: {name: m}\n"))
	s.DefaultNamespace("team")
	assert.Equal(t, "team", s.ServingRuntimes[0].Namespace)
	assert.Equal(t, "", s.ClusterBaseModels[0].Namespace)
}
