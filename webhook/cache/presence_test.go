package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	metafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
)

func secretMeta(ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
	}
}

// A Secret's metadata may carry its data (kubectl apply's
// last-applied-configuration); the cache keeps its identity only.
func TestStripMetaKeepsIdentityOnly(t *testing.T) {
	in := secretMeta("team-a", "hf-token")
	in.UID, in.ResourceVersion = "u1", "42"
	in.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"HF_TOKEN":"c2VjcmV0"}}`}
	in.Labels = map[string]string{"a": "b"}
	in.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	out, err := stripMeta(in)
	require.NoError(t, err)
	want := secretMeta("team-a", "hf-token")
	want.UID, want.ResourceVersion = "u1", "42"
	assert.Equal(t, want, out)

	tomb := toolscache.DeletedFinalStateUnknown{Key: "a/b"}
	out, err = stripMeta(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, out, "tombstones pass through")
}

func TestPresenceHas(t *testing.T) {
	scheme := metafake.NewTestScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, &metav1.PartialObjectMetadata{})
	live := metafake.NewSimpleMetadataClient(scheme, secretMeta("team-a", "created-just-now"))
	forbidden := metafake.NewSimpleMetadataClient(scheme, secretMeta("team-a", "created-just-now"))
	forbidden.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(SecretsResource.GroupResource(), "created-just-now", errors.New("RBAC"))
	})
	for _, tc := range []struct {
		name          string
		cached        []string // namespace/name in the informer's store
		synced        bool
		live          metadata.Interface
		ns, obj       string
		byName        bool // no cache: newByName
		exists, known bool
	}{
		{name: "cache hit", cached: []string{"team-a/hf-token"}, synced: true, ns: "team-a", obj: "hf-token", exists: true, known: true},
		{name: "cache hit before sync", cached: []string{"team-a/hf-token"}, ns: "team-a", obj: "hf-token", exists: true, known: true},
		{name: "other namespace", cached: []string{"team-a/hf-token"}, synced: true, ns: "team-b", obj: "hf-token", exists: false, known: true},
		{name: "miss before sync, no live client", ns: "team-a", obj: "hf-token", exists: false, known: false},
		{name: "miss answered live: found", synced: true, live: live, ns: "team-a", obj: "created-just-now", exists: true, known: true},
		{name: "miss answered live: not found", synced: true, live: live, ns: "team-a", obj: "nope", exists: false, known: true},
		{name: "miss before sync answered live", live: live, ns: "team-a", obj: "nope", exists: false, known: true},
		{name: "by name: found", byName: true, live: live, ns: "team-a", obj: "created-just-now", exists: true, known: true},
		{name: "by name: not found", byName: true, live: live, ns: "team-a", obj: "nope", exists: false, known: true},
		{name: "by name: GET refused", byName: true, live: forbidden, ns: "team-a", obj: "created-just-now", exists: false, known: false},
		{name: "by name: no client", byName: true, ns: "team-a", obj: "created-just-now", exists: false, known: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
			for _, k := range tc.cached {
				ns, name, _ := toolscache.SplitMetaNamespaceKey(k)
				require.NoError(t, store.Add(secretMeta(ns, name)))
			}
			p := &Presence{resource: SecretsResource, store: store, synced: func() bool { return tc.synced }, live: tc.live, timeout: time.Second}
			if tc.byName {
				p = newByName(tc.live, SecretsResource)
			}
			exists, known := p.Has(context.Background(), tc.ns, tc.obj)
			assert.Equal(t, tc.exists, exists, "exists")
			assert.Equal(t, tc.known, known, "known")
		})
	}
	var none *Presence
	exists, known := none.Has(context.Background(), "a", "b")
	assert.False(t, exists || known, "no cache: unknown")
}
