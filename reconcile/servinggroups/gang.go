package servinggroups

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

// Gang scheduling (doc.go, "Gang scheduling"): the PodGroup kinds of the
// two backends, found through their CRDs.
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

// gangBackend is one backend's PodGroup kind: whether its CRD is
// installed, whether its schema has subGroupPolicy (Volcano >= 1.14), and
// the informer on its PodGroups, started once the CRD is seen.
type gangBackend struct {
	scheduler v1beta1.GangScheduler
	gvr       schema.GroupVersionResource
	kind, crd string

	mu        sync.Mutex
	installed bool
	subGroups bool
	lister    cache.GenericLister
	synced    cache.InformerSynced
}

func (b *gangBackend) apiVersion() string { return b.gvr.GroupVersion().String() }

// state is a snapshot: installed, subGroupPolicy known, lister (nil until
// the informer exists) and whether it synced.
func (b *gangBackend) state() (installed, subGroups bool, lister cache.GenericLister, synced cache.InformerSynced) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.installed, b.subGroups, b.lister, b.synced
}

// gangs holds both backends and the dynamic informers behind them.
type gangs struct {
	dyn      dynamic.Interface
	backends []*gangBackend
	crds     []dynamicinformer.DynamicSharedInformerFactory
	pgs      dynamicinformer.DynamicSharedInformerFactory
	ctx      context.Context // Run's; PodGroup informers start under it
}

func newGangs(dyn dynamic.Interface, resync time.Duration) *gangs {
	g := &gangs{dyn: dyn, backends: []*gangBackend{
		{scheduler: v1beta1.GangSchedulerVolcano, kind: "PodGroup", crd: "podgroups.scheduling.volcano.sh",
			gvr: volcano.SchemeGroupVersion.WithResource("podgroups")},
		{scheduler: v1beta1.GangSchedulerCoscheduling, kind: "PodGroup", crd: "podgroups.scheduling.x-k8s.io",
			gvr: cosched.SchemeGroupVersion.WithResource("podgroups")},
	}}
	g.pgs = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, resync, metav1.NamespaceAll, managedSelector)
	return g
}

func (g *gangs) backend(s v1beta1.GangScheduler) *gangBackend {
	for _, b := range g.backends {
		if b.scheduler == s {
			return b
		}
	}
	return nil
}

// wireGangInformers watches the two PodGroup CRDs by name. A CRD that
// appears starts the informer on its PodGroups, and every change of
// either requeues every service: a service waiting with
// PodGroupCRDMissing gets its PodGroups once the CRD is installed.
func (c *Controller) wireGangInformers() {
	if c.gang == nil {
		return
	}
	for _, b := range c.gang.backends {
		name := b.crd
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.gang.dyn, c.opts.Resync, "", func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
		inf := f.ForResource(crdResource).Informer()
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { c.crdChanged(b, o, false) },
			UpdateFunc: func(_, n any) { c.crdChanged(b, n, false) },
			DeleteFunc: func(o any) { c.crdChanged(b, o, true) },
		})
		utilruntime.Must(err)
		c.gang.crds = append(c.gang.crds, f)
		c.synced = append(c.synced, inf.HasSynced)
	}
}

func (c *Controller) crdChanged(b *gangBackend, obj any, deleted bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if ok && u.GetName() != b.crd {
		return // the informer selects by name; never trust another CRD
	}
	b.mu.Lock()
	b.installed = !deleted && ok
	b.subGroups = ok && hasSubGroupPolicy(u, b.gvr.Version)
	start := b.installed && b.lister == nil
	if start {
		inf := c.gang.pgs.ForResource(b.gvr)
		_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueOwner,
			UpdateFunc: func(_, n any) { c.enqueueOwner(n) },
			DeleteFunc: c.enqueueOwner,
		})
		utilruntime.Must(err)
		b.lister, b.synced = inf.Lister(), inf.Informer().HasSynced
	}
	b.mu.Unlock()
	if start && c.gang.ctx != nil {
		c.gang.pgs.Start(c.gang.ctx.Done())
	}
	c.enqueueAll()
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

// startGangs starts the CRD informers (and any PodGroup informer already
// asked for) under ctx.
func (c *Controller) startGangs(ctx context.Context) {
	if c.gang == nil {
		return
	}
	c.gang.ctx = ctx
	for _, f := range c.gang.crds {
		f.Start(ctx.Done())
	}
	c.gang.pgs.Start(ctx.Done())
}
