package objects

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/policy"
	"github.com/berthdev/berth/selection"
)

// Feed puts every object selection reads into x, as the webhook's cache
// forwards informer events (webhook/cache.New): runtimes, models and
// classes as they are (the index copies them and folds OME's aliases when
// it compiles a runtime), nodes through selection.NodeInfoOf, and the pods that
// hold node resources (bound, not finished) through
// selection.PodAcceleratorRequests.
func (s *Set) Feed(x *selection.Index) {
	for _, o := range s.ServingRuntimes {
		x.UpsertServingRuntime(o)
	}
	for _, o := range s.ClusterServingRuntimes {
		x.UpsertClusterServingRuntime(o)
	}
	for _, o := range s.BaseModels {
		x.UpsertBaseModel(o)
	}
	for _, o := range s.ClusterBaseModels {
		x.UpsertClusterBaseModel(o)
	}
	for _, o := range s.AcceleratorClasses {
		x.UpsertAcceleratorClass(o)
	}
	for _, n := range s.Nodes {
		x.UpsertNode(selection.NodeInfoOf(n.DeepCopy()))
	}
	for _, p := range s.Pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		x.SetPodUsage(p.Namespace+"/"+p.Name, p.Spec.NodeName, selection.PodAcceleratorRequests(p))
	}
}

// Index is a new index fed with the set.
func (s *Set) Index() *selection.Index {
	x := selection.NewIndex()
	s.Feed(x)
	return x
}

func indexer() toolscache.Indexer {
	return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
}

// ProfileLister lists the set's ClusterEngineRuntimeProfiles, as the
// webhook's cache lister does.
func (s *Set) ProfileLister() listers.ClusterEngineRuntimeProfileLister {
	ix := indexer()
	for _, p := range s.Profiles {
		_ = ix.Add(p) // MetaNamespaceKeyFunc cannot fail on an object with metadata
	}
	return listers.NewClusterEngineRuntimeProfileLister(ix)
}

// ServiceLister lists the given InferenceServices (the set's and, for
// render, the one being rendered as admission left it).
func ServiceLister(services ...*v1beta1.InferenceService) listers.InferenceServiceLister {
	ix := indexer()
	for _, o := range services {
		_ = ix.Add(o)
	}
	return listers.NewInferenceServiceLister(ix)
}

// Policies compiles the set's ServingPolicies as the webhook's cache does
// (policy.Compile), with exempt namespaces besides kube-system.
func (s *Set) Policies(exempt ...string) *policy.Set {
	return policy.Compile(s.ServingPolicies, policy.Options{ExemptNamespaces: exempt})
}

// NamespaceLabels are the labels of a namespace of the set, nil when the
// set has no such namespace.
func (s *Set) NamespaceLabels(name string) map[string]string {
	for _, n := range s.Namespaces {
		if n.Name == name {
			return n.Labels
		}
	}
	return nil
}
