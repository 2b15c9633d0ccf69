package cache

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metafake "k8s.io/client-go/metadata/fake"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// The informers feed whole model objects to the index, status included:
// selection reads status.discovered and the MetadataResolved condition.
func TestModelsReachTheIndexWithTheirStatus(t *testing.T) {
	arch, size := "LlamaForCausalLM", "8.03B"
	resolved := &v1beta1.ClusterBaseModel{ // OME's config/models/meta/Llama-3.1-8B-Instruct.yaml, discovered
		ObjectMeta: metav1.ObjectMeta{Name: "llama-3-1-8b-instruct", Generation: 1},
		Spec:       v1beta1.BaseModelSpec{Storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://meta-llama/Llama-3.1-8B-Instruct")}},
		Status: v1beta1.ModelStatus{
			Discovered: &v1beta1.ModelMetadata{ModelFormat: &v1beta1.ModelFormat{Name: "safetensors"}, ModelArchitecture: &arch, ModelParameterSize: &size},
			Conditions: []metav1.Condition{{Type: v1beta1.ConditionMetadataResolved, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Discovered", LastTransitionTime: metav1.Now()}},
		},
	}
	pending := &v1beta1.BaseModel{
		ObjectMeta: metav1.ObjectMeta{Name: "mistral", Namespace: "team-a", Generation: 1},
		Spec:       v1beta1.BaseModelSpec{Storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://mistralai/Mistral-7B-Instruct-v0.3")}},
	}
	c, err := New(berthfake.NewSimpleClientset(resolved, pending), kubefake.NewClientset(), nil, time.Hour)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Start(ctx)
	require.True(t, c.WaitForSync(ctx))
	assert.Nil(t, c.Secrets, "no metadata client: no presence caches")

	svc := func(ns, model string) *v1beta1.InferenceService {
		return &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc"}, Spec: v1beta1.InferenceServiceSpec{Model: &v1beta1.ModelRef{Name: model}}}
	}
	require.Eventually(t, func() bool { return c.Index.Stats().Models == 2 }, 5*time.Second, 10*time.Millisecond)
	m, err := c.Index.Model(svc("team-a", "llama-3-1-8b-instruct"))
	require.NoError(t, err)
	assert.Empty(t, m.Pending)
	assert.Equal(t, arch, *m.Spec.ModelArchitecture)
	assert.Equal(t, "safetensors", m.Spec.ModelFormat.Name)

	m, err = c.Index.Model(svc("team-a", "mistral"))
	require.NoError(t, err)
	assert.Equal(t, "model metadata not yet known: modelFormat.name, modelArchitecture and modelParameterSize are not in the spec; discovery from hf://mistralai/Mistral-7B-Instruct-v0.3 is pending", m.Pending)
}

func ptr[T any](v T) *T { return &v }

// Secrets are never listed or watched: the webhook asks for one Secret's
// metadata by name when a check needs it, so its ClusterRole grants only
// get on Secrets. Claims are still cached (metadata, list and watch).
func TestSecretsAreReadByNameOnly(t *testing.T) {
	scheme := metafake.NewTestScheme()
	for _, kind := range []string{"Secret", "PersistentVolumeClaim"} {
		scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: kind}, &metav1.PartialObjectMetadata{})
		scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: kind + "List"}, &metav1.PartialObjectMetadataList{})
	}
	meta := metafake.NewSimpleMetadataClient(scheme, secretMeta("team-a", "hf-token"))
	c, err := New(berthfake.NewSimpleClientset(), kubefake.NewClientset(), meta, time.Hour)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Start(ctx)
	require.True(t, c.WaitForSync(ctx))
	require.True(t, c.Claims.Synced(), "claims are cached")

	exists, known := c.Secrets.Has(ctx, "team-a", "hf-token")
	assert.True(t, exists && known, "Has(team-a/hf-token) = %v, %v", exists, known)
	exists, known = c.Secrets.Has(ctx, "team-b", "hf-token")
	assert.True(t, !exists && known, "Has(team-b/hf-token) = %v, %v", exists, known)

	var secretVerbs []string
	for _, a := range meta.Actions() {
		if a.GetResource() == SecretsResource {
			secretVerbs = append(secretVerbs, a.GetVerb()+" "+a.GetNamespace())
		}
	}
	assert.Equal(t, []string{"get team-a", "get team-b"}, secretVerbs, "Secrets are read by name, one GET per check")
}
