package crddocs

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const own = "github.com/berthdev/berth"

type fixtureKind struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              fixtureSpec `json:"spec"`
}

type fixtureSpec struct {
	fixtureInline `json:",inline"`
	Strategy      string                        `json:"strategy,omitempty"`
	Affinity      *corev1.Affinity              `json:"affinity,omitempty"`
	Containers    []corev1.Container            `json:"containers,omitempty"`
	Rules         []fixtureRule                 `json:"rules,omitempty"`
	ByName        map[string]fixtureRule        `json:"byName,omitempty"`
	Resources     corev1.ResourceRequirements   `json:"resources,omitempty"`
	Ignored       string                        `json:"-"`
	Labels        map[string]*corev1.Toleration `json:"labels,omitempty"`
}

type fixtureInline struct {
	Priority *int `json:"priority,omitempty"`
}

type fixtureRule struct {
	Description string `json:"description,omitempty"`
}

// The schema controller-gen would write for fixtureKind, descriptions
// included (abridged).
const fixtureSchema = `
description: FixtureKind doc.
properties:
  apiVersion: {description: APIVersion defines..., type: string}
  kind: {description: Kind is a string value..., type: string}
  metadata: {type: object}
  spec:
    description: Spec doc.
    properties:
      priority: {description: Priority doc., type: integer}
      strategy: {description: Strategy doc., type: string}
      affinity:
        description: Affinity of the berth field.
        properties:
          nodeAffinity:
            description: Describes node affinity.
            properties:
              requiredDuringSchedulingIgnoredDuringExecution:
                description: If the affinity requirements...
                properties:
                  nodeSelectorTerms:
                    description: Required.
                    items: {description: A null or empty node selector term..., type: object}
                    type: array
                type: object
            type: object
        type: object
      containers:
        description: Containers of the berth field.
        items:
          description: A single application container.
          properties:
            name: {description: Name of the container., type: string}
            resources:
              description: Compute Resources.
              properties:
                limits:
                  additionalProperties:
                    anyOf: [{type: integer}, {type: string}]
                    x-kubernetes-int-or-string: true
                  description: Limits describes...
                  type: object
              type: object
          type: object
        type: array
      rules:
        description: Rules doc.
        items:
          description: FixtureRule doc.
          properties:
            description: {description: Description of the rule., type: string}
          type: object
        type: array
      byName:
        additionalProperties:
          description: FixtureRule doc.
          properties:
            description: {description: Description of the rule., type: string}
          type: object
        description: ByName doc.
        type: object
      resources:
        description: ResourceRequirements describes...
        properties:
          claims: {description: Claims lists..., type: array, items: {type: object}}
        type: object
      labels:
        additionalProperties:
          description: The pod this Toleration is attached to...
          properties:
            key: {description: Key is the taint key., type: string}
          type: object
        description: Labels doc.
        type: object
    type: object
type: object
`

const fixtureWant = `
description: FixtureKind doc.
properties:
  apiVersion: {description: APIVersion defines..., type: string}
  kind: {description: Kind is a string value..., type: string}
  metadata: {type: object}
  spec:
    description: Spec doc.
    properties:
      priority: {description: Priority doc., type: integer}
      strategy: {description: Strategy doc., type: string}
      affinity:
        description: Affinity of the berth field.
        properties:
          nodeAffinity:
            properties:
              requiredDuringSchedulingIgnoredDuringExecution:
                properties:
                  nodeSelectorTerms:
                    items: {type: object}
                    type: array
                type: object
            type: object
        type: object
      containers:
        description: Containers of the berth field.
        items:
          properties:
            name: {type: string}
            resources:
              properties:
                limits:
                  additionalProperties:
                    anyOf: [{type: integer}, {type: string}]
                    x-kubernetes-int-or-string: true
                  type: object
              type: object
          type: object
        type: array
      rules:
        description: Rules doc.
        items:
          description: FixtureRule doc.
          properties:
            description: {description: Description of the rule., type: string}
          type: object
        type: array
      byName:
        additionalProperties:
          description: FixtureRule doc.
          properties:
            description: {description: Description of the rule., type: string}
          type: object
        description: ByName doc.
        type: object
      resources:
        description: ResourceRequirements describes...
        properties:
          claims: {type: array, items: {type: object}}
        type: object
      labels:
        additionalProperties:
          properties:
            key: {type: string}
          type: object
        description: Labels doc.
        type: object
    type: object
type: object
`

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(s), &m))
	return m
}

func TestPruneKeepsBerthDocsAndDropsKubernetesDocs(t *testing.T) {
	got := decode(t, fixtureSchema)
	require.NoError(t, Prune(got, reflect.TypeFor[fixtureKind](), own))
	assert.Equal(t, decode(t, fixtureWant), got)
}

func TestPruneTreatsEveryTypeAsForeignOutsideTheModule(t *testing.T) {
	got := decode(t, fixtureSchema)
	require.NoError(t, Prune(got, reflect.TypeFor[fixtureKind](), "example.com/other"))
	// fixtureKind itself is foreign now: only the root keeps its description.
	want := decode(t, fixtureSchema)
	stripBelow(want)
	assert.Equal(t, want, got)
	assert.Equal(t, "FixtureKind doc.", got["description"])
}

func TestPruneFailsOnAPropertyWithoutAGoField(t *testing.T) {
	s := decode(t, `
properties:
  spec:
    properties:
      strategy: {type: string}
      stratgy: {description: typo, type: string}
    type: object
type: object`)
	err := Prune(s, reflect.TypeFor[fixtureKind](), own)
	require.Error(t, err)
	assert.Equal(t, ".spec.stratgy: schema property has no json field in Go type crddocs.fixtureSpec", err.Error())
}

func TestPruneCRDPrunesEveryVersion(t *testing.T) {
	crd := decode(t, `
spec:
  group: example.berth.dev
  names: {kind: Fixture}
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              affinity: {description: Keep., properties: {nodeAffinity: {description: Drop., type: object}}, type: object}
            type: object
        type: object
`)
	var asked []string
	typeOf := func(group, version, kind string) (reflect.Type, error) {
		asked = append(asked, group+"/"+version+"/"+kind)
		return reflect.TypeFor[fixtureKind](), nil
	}
	require.NoError(t, PruneCRD(crd, typeOf, own))
	assert.Equal(t, []string{"example.berth.dev/v1/Fixture"}, asked)
	want := decode(t, `{description: Keep., properties: {nodeAffinity: {type: object}}, type: object}`)
	got := crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)["properties"].(map[string]any)["affinity"]
	assert.Equal(t, want, got)

	err := PruneCRD(crd, func(string, string, string) (reflect.Type, error) { return nil, errors.New("unknown kind") }, own)
	require.Error(t, err)
	assert.Equal(t, "example.berth.dev/v1 Fixture: unknown kind", err.Error())
}
