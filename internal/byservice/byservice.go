// Package byservice indexes the objects an InferenceService owns by the
// service they belong to, so a controller reads one service's pods,
// Services or ControllerRevisions from its informer in time proportional
// to what that service has, not to the namespace.
//
// Listing with a label selector (lister.Pods(ns).List(selector)) walks
// every object of the namespace and matches each: one sync costs O(n) in
// the namespace's objects, and a resync of a namespace of m services
// O(m·n). The index's key is <namespace>/<ome.io/inferenceservice label>,
// the label every object berth creates for a service carries.
//
// Add the index before the informer starts (Add); read with For.
package byservice

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Index is the indexer's name.
const Index = "byservice"

// Key is the index key of a service's objects.
func Key(namespace, service string) string { return namespace + "/" + service }

// keys is the index function: an object labelled with a service is under
// that service's key; an object without the label is under none.
func keys(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	name := m.GetLabels()[v1beta1.LabelInferenceService]
	if name == "" {
		return nil, nil
	}
	return []string{Key(m.GetNamespace(), name)}, nil
}

// Add adds the index to an informer that has not started; adding it
// twice (two controllers sharing one informer) is not an error.
func Add(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[Index]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{Index: keys})
}

// For returns the objects of type T the indexer holds for the service
// namespace/service. An object of another type is an error (the index was
// added to the wrong informer).
func For[T any](idx cache.Indexer, namespace, service string) ([]T, error) {
	objs, err := idx.ByIndex(Index, Key(namespace, service))
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("byservice: index holds a %T, not a %T", o, t)
		}
		out = append(out, t)
	}
	return out, nil
}
