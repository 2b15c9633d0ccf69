package gang

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	cosched "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcano "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// The condition, its reasons and the pod metadata of gang scheduling
// (doc.go); package servinggroups re-exports them.
const (
	// DefaultCoschedulingScheduler is the schedulerName of the
	// scheduler-plugins scheduler that runs the coscheduling plugin
	// (--coscheduling-scheduler-name).
	DefaultCoschedulingScheduler = plan.DefaultCoschedulingScheduler

	// ConditionGangScheduling says whether the service's PodGroups exist
	// and what their scheduler says; present only while gang scheduling
	// is on (or cannot be).
	ConditionGangScheduling = "GangScheduling"
	// Its reasons.
	ReasonPodGroupsSynced    = "PodGroupsSynced"
	ReasonPodGroupCRDMissing = "PodGroupCRDMissing"
	ReasonSchedulerMismatch  = "SchedulerMismatch"
	ReasonGangUnschedulable  = "Unschedulable"

	// Pod metadata that puts a pod in a PodGroup.
	// (merge.MarkPod writes them; berth render shows them).
	AnnotationVolcanoGroupName = merge.AnnotationVolcanoGroupName
	AnnotationVolcanoTaskSpec  = merge.AnnotationVolcanoTaskSpec
	AnnotationVolcanoQueueName = "scheduling.volcano.sh/queue-name"
	LabelCoschedulingPodGroup  = merge.LabelCoschedulingPodGroup
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// managed selects the PodGroups berth owns: those carrying the
// InferenceService label.
var managed = func(o *metav1.ListOptions) { o.LabelSelector = v1beta1.LabelInferenceService }

// backend is one backend's PodGroup kind: whether its CRD is installed,
// whether its schema has subGroupPolicy (Volcano >= 1.14), and the
// informer on its PodGroups, started once the CRD is seen.
type backend struct {
	scheduler v1beta1.GangScheduler
	gvr       schema.GroupVersionResource
	kind, crd string

	mu        sync.Mutex
	installed bool
	subGroups bool
	lister    cache.GenericLister
	synced    cache.InformerSynced
}

func (b *backend) apiVersion() string { return b.gvr.GroupVersion().String() }

// state is a snapshot: installed, subGroupPolicy known, lister (nil until
// the informer exists) and whether it synced.
func (b *backend) state() (installed, subGroups bool, lister cache.GenericLister, synced cache.InformerSynced) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.installed, b.subGroups, b.lister, b.synced
}

// newBackends is the two backends: Volcano, then coscheduling.
func newBackends() []*backend {
	return []*backend{
		{scheduler: v1beta1.GangSchedulerVolcano, kind: "PodGroup", crd: "podgroups.scheduling.volcano.sh",
			gvr: volcano.SchemeGroupVersion.WithResource("podgroups")},
		{scheduler: v1beta1.GangSchedulerCoscheduling, kind: "PodGroup", crd: "podgroups.scheduling.x-k8s.io",
			gvr: cosched.SchemeGroupVersion.WithResource("podgroups")},
	}
}

func find(bs []*backend, s v1beta1.GangScheduler) *backend {
	for _, b := range bs {
		if b.scheduler == s {
			return b
		}
	}
	return nil
}

// Config is what the controller gives the step (Wire): its scheduler
// option, and the hooks into its queue and metrics.
type Config struct {
	// CoschedulingScheduler is the schedulerName of the scheduler running
	// the coscheduling plugin (default DefaultCoschedulingScheduler).
	CoschedulingScheduler string
	// RequeueAll queues every service: a PodGroup CRD appeared, changed
	// or went.
	RequeueAll func()
	// RequeueOwner queues the service an object is labelled with: one of
	// its PodGroups changed.
	RequeueOwner func(obj any)
	// CountWrite counts one API write (verb, resource "podgroups").
	CountWrite func(verb, resource string)
}

// Gangs holds both backends and the dynamic informers behind them. A nil
// *Gangs is gang scheduling off: every method does nothing.
type Gangs struct {
	dyn      dynamic.Interface
	cfg      Config
	backends []*backend
	crds     []dynamicinformer.DynamicSharedInformerFactory
	synced   []cache.InformerSynced
	pgs      dynamicinformer.DynamicSharedInformerFactory
	ctx      context.Context // Start's; PodGroup informers start under it
}

// New is the gang step on a dynamic client, re-listing every resync: it
// watches the two PodGroup CRDs by name (informers started by Start). A
// CRD that appears starts the informer on its PodGroups, and every change
// of either requeues every service (Config.RequeueAll): a service waiting
// with PodGroupCRDMissing gets its PodGroups once the CRD is installed.
// nil without a client.
func New(dyn dynamic.Interface, resync time.Duration) *Gangs {
	if dyn == nil {
		return nil
	}
	g := &Gangs{dyn: dyn, backends: newBackends()}
	g.Wire(Config{})
	g.pgs = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, resync, metav1.NamespaceAll, managed)
	for _, b := range g.backends {
		name := b.crd
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, resync, "", func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
		inf := f.ForResource(crdResource).Informer()
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { g.crdChanged(b, o, false) },
			UpdateFunc: func(_, n any) { g.crdChanged(b, n, false) },
			DeleteFunc: func(o any) { g.crdChanged(b, o, true) },
		})
		utilruntime.Must(err)
		g.crds = append(g.crds, f)
		// Synced once the handler has seen the CRD (not only the cache):
		// a sync never takes an installed CRD for a missing one.
		g.synced = append(g.synced, reg.HasSynced)
	}
	return g
}

// Wire sets the controller's config (before Start) and returns the CRD
// informers' readiness (Synced).
func (g *Gangs) Wire(cfg Config) []cache.InformerSynced {
	if g == nil {
		return nil
	}
	if cfg.CoschedulingScheduler == "" {
		cfg.CoschedulingScheduler = DefaultCoschedulingScheduler
	}
	if cfg.RequeueAll == nil {
		cfg.RequeueAll = func() {}
	}
	if cfg.RequeueOwner == nil {
		cfg.RequeueOwner = func(any) {}
	}
	if cfg.CountWrite == nil {
		cfg.CountWrite = func(string, string) {}
	}
	g.cfg = cfg
	return g.synced
}

// Synced is the CRD informers' readiness (the PodGroup informers are
// waited for by the sync that needs them).
func (g *Gangs) Synced() []cache.InformerSynced {
	if g == nil {
		return nil
	}
	return g.synced
}

func (g *Gangs) crdChanged(b *backend, obj any, deleted bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if ok && u.GetName() != b.crd {
		return // the informer selects by name; never trust another CRD
	}
	b.mu.Lock()
	b.installed = !deleted && ok
	b.subGroups = ok && hasSubGroupPolicy(u, b.gvr.Version)
	start := b.installed && b.lister == nil
	if start {
		inf := g.pgs.ForResource(b.gvr)
		_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    g.cfg.RequeueOwner,
			UpdateFunc: func(_, n any) { g.cfg.RequeueOwner(n) },
			DeleteFunc: g.cfg.RequeueOwner,
		})
		utilruntime.Must(err)
		b.lister, b.synced = inf.Lister(), inf.Informer().HasSynced
	}
	b.mu.Unlock()
	if start && g.ctx != nil {
		g.pgs.Start(g.ctx.Done())
	}
	g.cfg.RequeueAll()
}

// hasSubGroupPolicy reads the CRD's schema of version: does spec have
// subGroupPolicy (Kthena reads it the same way).
func hasSubGroupPolicy(crd *unstructured.Unstructured, version string) bool {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok || m["name"] != version {
			continue
		}
		_, found, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema", "properties", "spec", "properties", "subGroupPolicy")
		return found
	}
	return false
}

// Start starts the CRD informers (and any PodGroup informer already
// asked for) under ctx.
func (g *Gangs) Start(ctx context.Context) {
	if g == nil {
		return
	}
	g.ctx = ctx
	for _, f := range g.crds {
		f.Start(ctx.Done())
	}
	g.pgs.Start(ctx.Done())
}
