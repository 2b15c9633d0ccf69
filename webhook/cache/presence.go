package cache

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
)

// The namespaced objects a model's storage names, whose existence the
// InferenceService webhook checks: the Secret of storage.key (of a model
// its pods download) and the PersistentVolumeClaim of a pvc:// URI.
var (
	SecretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	ClaimsResource  = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
)

// Presence says whether namespaced objects of one resource exist, from
// their metadata only (PartialObjectMetadata): the webhook never asks for a
// Secret's data. Claims are fed by a metadata-only informer, and stripMeta
// drops even the annotations, so that cache holds names only. Secrets have
// no cache at all (newByName): each check is one GET of one Secret by name,
// in the namespace that needs it, so the webhook's ClusterRole grants get
// on Secrets and neither list nor watch.
type Presence struct {
	resource schema.GroupVersionResource
	store    toolscache.Store          // nil: no cache, every answer is a GET
	synced   toolscache.InformerSynced // nil with store
	live     metadata.Interface        // nil: the cache only
	timeout  time.Duration
}

// newPresence registers a stripped metadata informer for resource.
func newPresence(f metadatainformer.SharedInformerFactory, live metadata.Interface, resource schema.GroupVersionResource) (*Presence, error) {
	inf := f.ForResource(resource).Informer()
	if err := inf.SetTransform(stripMeta); err != nil {
		return nil, err
	}
	return &Presence{resource: resource, store: inf.GetStore(), synced: inf.HasSynced, live: live, timeout: time.Second}, nil
}

// newByName answers from the API server only, one metadata GET per
// question: for Secrets, which the webhook may not list or watch.
func newByName(live metadata.Interface, resource schema.GroupVersionResource) *Presence {
	return &Presence{resource: resource, live: live, timeout: time.Second}
}

// Has reports whether namespace/name exists. The cache, when there is one,
// answers first; on a miss (the object may have been created milliseconds
// ago, as `kubectl apply -f dir/` does, or the cache has not listed yet),
// and always without a cache, one metadata GET asks the API server, for at
// most a second (the admission deadline is five, shared with selection's
// retries). known is false when neither can tell (the cache has not synced
// and there is no live client, or the GET failed, Forbidden included):
// callers warn instead of denying.
func (p *Presence) Has(ctx context.Context, namespace, name string) (exists, known bool) {
	if p == nil {
		return false, false
	}
	if p.store != nil {
		if _, ok, err := p.store.GetByKey(namespace + "/" + name); err == nil && ok {
			return true, true
		}
	}
	if p.live == nil {
		return false, p.Synced()
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	_, err := p.live.Resource(p.resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, true
	case apierrors.IsNotFound(err):
		return false, true
	}
	return false, false
}

// Synced reports whether the informer has listed once; without a cache,
// whether there is a live client to ask.
func (p *Presence) Synced() bool {
	if p == nil {
		return false
	}
	if p.store == nil {
		return p.live != nil
	}
	return p.synced()
}

// stripMeta keeps an object's identity only.
func stripMeta(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil // tombstones pass through
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}, nil
}
