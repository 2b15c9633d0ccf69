// Package cache keeps what the webhook decides from: the generated informers
// for berth's kinds, and nodes and pods stripped down to what accelerator
// availability needs. Every event is forwarded to a selection.Index, which
// holds the indexes a decision reads; the informer stores keep only the
// InferenceServices and profiles the pod handler looks up.
// PersistentVolumeClaims are watched as metadata only (see Presence), for
// the InferenceService webhook's storage checks; they do not gate
// readiness. Secrets are never listed, watched or cached: the webhook
// reads one Secret's metadata by name, in the namespace of the service
// whose pods will read it, when a check needs it (Presence, newByName), so
// its ClusterRole grants get on Secrets and nothing more. An answer
// neither can give is a warning, never a denial.
package cache

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	berthv1beta1 "github.com/berthdev/berth/api/client/informers/externalversions/api/v1beta1"
	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// Cache is the webhook's read model of the cluster.
type Cache struct {
	Index            *selection.Index
	InferenceService listers.InferenceServiceLister
	Profiles         listers.ClusterEngineRuntimeProfileLister
	// Secrets (a GET by name each time) and Claims (a metadata cache) are
	// nil when New got no metadata client.
	Secrets, Claims *Presence
	// Policies are the ServingPolicies in force, compiled, and the labels
	// of namespaces (policy.go).
	Policies *Policies

	// servicesVersion counts InferenceService events (ServicesVersion).
	servicesVersion atomic.Uint64

	servingRuntimes listers.ServingRuntimeLister
	clusterRuntimes listers.ClusterServingRuntimeLister

	berth         berthinformers.SharedInformerFactory
	kubeFactories []informers.SharedInformerFactory
	metaFactory   metadatainformer.SharedInformerFactory
	synced        []toolscache.InformerSynced
}

// Option configures New.
type Option func(*options)

type options struct{ exempt []string }

// ExemptNamespaces are namespaces no ServingPolicy applies to, besides
// kube-system: berth's own, so a policy never locks admins out.
func ExemptNamespaces(names ...string) Option {
	return func(o *options) { o.exempt = append(o.exempt, names...) }
}

// New wires informers to a fresh index. Nothing runs until Start. meta
// (may be nil) feeds Claims, answers their cache misses, and answers
// Secrets.
func New(berthClient versioned.Interface, kubeClient kubernetes.Interface, meta metadata.Interface, resync time.Duration, opts ...Option) (*Cache, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := &Cache{Index: selection.NewIndex()}
	if meta != nil {
		c.metaFactory = metadatainformer.NewSharedInformerFactory(meta, resync)
		var err error
		c.Secrets = newByName(meta, SecretsResource)
		if c.Claims, err = newPresence(c.metaFactory, meta, ClaimsResource); err != nil {
			return nil, err
		}
	}
	c.berth = berthinformers.NewSharedInformerFactory(berthClient, resync)
	// Only pods that hold node resources count against availability:
	// bound to a node and not finished. The server filters, so the cache
	// never sees the rest.
	podFilter := fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()
	nodeFactory := informers.NewSharedInformerFactory(kubeClient, resync)
	podFactory := informers.NewSharedInformerFactoryWithOptions(kubeClient, resync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = podFilter }))

	v := c.berth.Ome().V1beta1()
	isvc := v.InferenceServices()
	profiles := v.ClusterEngineRuntimeProfiles()
	c.InferenceService = isvc.Lister()
	c.Profiles = profiles.Lister()
	c.servingRuntimes = v.ServingRuntimes().Lister()
	c.clusterRuntimes = v.ClusterServingRuntimes().Lister()

	bump := func(any) { c.servicesVersion.Add(1) }
	if _, err := isvc.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: bump, UpdateFunc: func(_, o any) { bump(o) }, DeleteFunc: bump,
	}); err != nil {
		return nil, fmt.Errorf("register event handler: %w", err)
	}

	if err := feedKinds(v, c.Index); err != nil {
		return nil, err
	}
	nodes := nodeFactory.Core().V1().Nodes().Informer()
	pods := podFactory.Core().V1().Pods().Informer()
	if err := feedFleet(nodes, pods, c.Index); err != nil {
		return nil, err
	}

	servingPolicies := c.berth.Policy().V1alpha1().ServingPolicies()
	namespaces := nodeFactory.Core().V1().Namespaces().Informer()
	var err error
	if c.Policies, err = newPolicies(servingPolicies.Informer(), servingPolicies.Lister(), namespaces, o.exempt); err != nil {
		return nil, err
	}

	c.synced = []toolscache.InformerSynced{
		servingPolicies.Informer().HasSynced, namespaces.HasSynced,
		isvc.Informer().HasSynced, profiles.Informer().HasSynced,
		v.ServingRuntimes().Informer().HasSynced, v.ClusterServingRuntimes().Informer().HasSynced,
		v.BaseModels().Informer().HasSynced, v.ClusterBaseModels().Informer().HasSynced,
		v.AcceleratorClasses().Informer().HasSynced, nodes.HasSynced, pods.HasSynced,
	}
	c.kubeFactories = []informers.SharedInformerFactory{nodeFactory, podFactory}
	return c, nil
}

// feedKinds keeps the index's runtimes, models and classes in step with
// their informers.
func feedKinds(v berthv1beta1.Interface, x *selection.Index) error {
	if err := register(v.ServingRuntimes().Informer(), func(o *v1beta1.ServingRuntime) { x.UpsertServingRuntime(o) },
		func(ns, name string) { x.DeleteServingRuntime(ns, name) }); err != nil {
		return err
	}
	if err := register(v.ClusterServingRuntimes().Informer(), func(o *v1beta1.ClusterServingRuntime) { x.UpsertClusterServingRuntime(o) },
		func(_, name string) { x.DeleteClusterServingRuntime(name) }); err != nil {
		return err
	}
	if err := register(v.BaseModels().Informer(), func(o *v1beta1.BaseModel) { x.UpsertBaseModel(o) },
		func(ns, name string) { x.DeleteBaseModel(ns, name) }); err != nil {
		return err
	}
	if err := register(v.ClusterBaseModels().Informer(), func(o *v1beta1.ClusterBaseModel) { x.UpsertClusterBaseModel(o) },
		func(_, name string) { x.DeleteClusterBaseModel(name) }); err != nil {
		return err
	}
	if err := register(v.AcceleratorClasses().Informer(), func(o *v1beta1.AcceleratorClass) { x.UpsertAcceleratorClass(o) },
		func(_, name string) { x.DeleteAcceleratorClass(name) }); err != nil {
		return err
	}
	return nil
}

// feedFleet keeps the index's nodes and pod usage in step with their
// informers, through their transforms (package strip: strip.Node, strip.Pod).
func feedFleet(nodes, pods toolscache.SharedIndexInformer, x *selection.Index) error {
	if err := nodes.SetTransform(stripNode); err != nil {
		return err
	}
	if err := register(nodes, func(n *corev1.Node) { x.UpsertNode(NodeInfo(n)) }, func(_, name string) { x.DeleteNode(name) }); err != nil {
		return err
	}
	if err := pods.SetTransform(stripPod); err != nil {
		return err
	}
	if err := register(pods, func(p *corev1.Pod) {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			x.DeletePodUsage(p.Namespace + "/" + p.Name)
			return
		}
		x.SetPodUsage(p.Namespace+"/"+p.Name, p.Spec.NodeName, PodAcceleratorRequests(p))
	}, func(ns, name string) { x.DeletePodUsage(ns + "/" + name) }); err != nil {
		return err
	}
	return nil
}

// Start runs the informers until ctx is done.
func (c *Cache) Start(ctx context.Context) {
	c.berth.Start(ctx.Done())
	for _, f := range c.kubeFactories {
		f.Start(ctx.Done())
	}
	if c.metaFactory != nil {
		c.metaFactory.Start(ctx.Done())
	}
}

// WaitForSync blocks until every informer has listed once, or ctx ends.
func (c *Cache) WaitForSync(ctx context.Context) bool {
	return toolscache.WaitForCacheSync(ctx.Done(), c.synced...)
}

// Synced reports whether every informer has listed once (for /readyz).
func (c *Cache) Synced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// register forwards add, update and delete events of one informer. Deletes
// may arrive as tombstones when a watch missed the final state.
func register[T interface {
	GetNamespace() string
	GetName() string
}](inf toolscache.SharedIndexInformer, upsert func(T), del func(namespace, name string)) error {
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(T); ok {
				upsert(o)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(T); ok {
				upsert(o)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(T); ok {
				del(o.GetNamespace(), o.GetName())
			}
		},
	})
	if err != nil {
		return fmt.Errorf("register event handler: %w", err)
	}
	return nil
}

// ServicesVersion changes whenever the cache sees an InferenceService
// added, changed or deleted: what is derived from all services of a
// namespace (the accelerators in use, for namespace budgets) stays valid
// while it does not.
func (c *Cache) ServicesVersion() uint64 { return c.servicesVersion.Load() }
