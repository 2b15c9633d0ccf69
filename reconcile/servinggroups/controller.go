package servinggroups

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/byservice"
	"github.com/berthdev/berth/internal/events"
	"github.com/berthdev/berth/reconcile/plan"
)

// Options tune the controller. Zero values are the defaults.
type Options struct {
	// Resync re-lists every object this often (default 10m).
	Resync time.Duration
	// Backoff of group recreation after failures (defaults 10s and 5m).
	BackoffBase, BackoffMax time.Duration
	// ExpectationsTTL bounds how long an unobserved create or delete
	// blocks a service (default 5m).
	ExpectationsTTL time.Duration
	Log             *slog.Logger
	Metrics         *Metrics
	// Now is the clock (tests).
	Now func() time.Time
	// Policy configures the service's side of ServingPolicy (verdicts.go).
	Policy PolicyOptions
	// Dynamic reads and writes PodGroups and watches their CRDs (gang
	// scheduling, gang.go); nil turns gang scheduling off.
	Dynamic dynamic.Interface
	// CoschedulingScheduler is the schedulerName of the scheduler running
	// the coscheduling plugin (default DefaultCoschedulingScheduler).
	CoschedulingScheduler string
	// BerthInformers is the informer factory of berth's objects, shared
	// with the other controllers (the manager passes it); nil makes one.
	BerthInformers berthinformers.SharedInformerFactory
}

// Controller runs serving groups of InferenceServices.
type Controller struct {
	kube  kubernetes.Interface
	berth versioned.Interface
	opts  Options
	log   *slog.Logger
	m     *Metrics
	now   func() time.Time

	kubeInformers  kubeinformers.SharedInformerFactory
	berthInformers berthinformers.SharedInformerFactory

	services        listers.InferenceServiceLister
	runtimes        listers.ServingRuntimeLister
	clusterRuntimes listers.ClusterServingRuntimeLister
	classes         listers.AcceleratorClassLister
	profiles        listers.ClusterEngineRuntimeProfileLister
	pods            corelisters.PodLister
	svcs            corelisters.ServiceLister
	hpas            autoscalinglisters.HorizontalPodAutoscalerLister
	revisions       appslisters.ControllerRevisionLister // recorded revisions (revisions.go)
	// A service's pods, Services and ControllerRevisions, indexed by
	// service (internal/byservice): a sync reads its own, not the
	// namespace's.
	podIndex, svcIndex, revisionIndex cache.Indexer
	// The router's ServiceAccount, Role and RoleBinding (routerrbac.go).
	serviceAccounts corelisters.ServiceAccountLister
	roles           rbaclisters.RoleLister
	roleBindings    rbaclisters.RoleBindingLister
	baseModels      listers.BaseModelLister
	clusterModels   listers.ClusterBaseModelLister
	serviceIndex    cache.Indexer // services by spec.model.name
	synced          []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]
	// runtimeQueue holds conflictsKey: the after-the-fact priority check
	// of all runtimes (conflicts.go), coalesced over runtime events.
	runtimeQueue workqueue.TypedRateLimitingInterface[string]
	exp          *expectations
	recorder     record.EventRecorder
	events       record.EventBroadcaster
	// pol: the service's side of ServingPolicy: verdicts, QuotaExceeded (verdicts.go).
	pol *policyController

	mu      sync.Mutex
	backoff map[string]backoffMemory // by service key
	// nudgedAt: when this process last nudged an unpinned service (renudge)
	nudgedAt map[string]time.Time
	clamped  map[string]int32 // "<key>/<component>" → replicas last warned about
	// progress: the planner's rule 9 memory, by service key and component
	progress map[string]map[string]plan.Progress
	// foreign: unlabelled pods holding a name a service uses, by service
	// key and pod name (problems.go)
	foreign map[string]map[string]foreignPod
	gang    *gangs // nil without Options.Dynamic
}

// managedSelector selects what the controller owns: objects carrying the
// InferenceService label. Pods without it are never watched.
var managedSelector = func(o *metav1.ListOptions) { o.LabelSelector = v1beta1.LabelInferenceService }

// New wires informers, listers, the queue and the event recorder.
func New(kube kubernetes.Interface, berth versioned.Interface, opts Options) *Controller {
	if opts.Resync == 0 {
		opts.Resync = 10 * time.Minute
	}
	if opts.ExpectationsTTL == 0 {
		opts.ExpectationsTTL = 5 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CoschedulingScheduler == "" {
		opts.CoschedulingScheduler = DefaultCoschedulingScheduler
	}
	c := &Controller{kube: kube, berth: berth, opts: opts, log: opts.Log, m: opts.Metrics, now: opts.Now,
		backoff: map[string]backoffMemory{}, clamped: map[string]int32{}, progress: map[string]map[string]plan.Progress{},
		foreign: map[string]map[string]foreignPod{}, nudgedAt: map[string]time.Time{}}
	c.kubeInformers = kubeinformers.NewSharedInformerFactoryWithOptions(kube, opts.Resync, ownedInformers...)
	c.berthInformers = opts.BerthInformers
	if c.berthInformers == nil {
		c.berthInformers = berthinformers.NewSharedInformerFactory(berth, opts.Resync)
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "inferenceservices"})
	c.runtimeQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "runtime-conflicts"})
	c.exp = newExpectations(opts.ExpectationsTTL, opts.Now)
	if opts.Dynamic != nil {
		c.gang = newGangs(opts.Dynamic, opts.Resync)
	}
	c.wireInformers()
	c.wireRevisions()
	c.wireModelInformers()
	c.pol = newPolicyController(c)
	c.wireGangInformers()

	c.events, c.recorder = events.New()
	return c
}

func (c *Controller) wireInformers() {
	om := c.berthInformers.Ome().V1beta1()
	isvcs, rts, crts, acs, profs := om.InferenceServices(), om.ServingRuntimes(), om.ClusterServingRuntimes(), om.AcceleratorClasses(), om.ClusterEngineRuntimeProfiles()
	pods, svcs := c.kubeInformers.Core().V1().Pods(), c.kubeInformers.Core().V1().Services()
	hpas := c.kubeInformers.Autoscaling().V2().HorizontalPodAutoscalers()
	c.services, c.runtimes, c.clusterRuntimes = isvcs.Lister(), rts.Lister(), crts.Lister()
	c.classes, c.profiles, c.pods, c.svcs, c.hpas = acs.Lister(), profs.Lister(), pods.Lister(), svcs.Lister(), hpas.Lister()
	sas, roles, bindings := c.kubeInformers.Core().V1().ServiceAccounts(), c.kubeInformers.Rbac().V1().Roles(), c.kubeInformers.Rbac().V1().RoleBindings()
	c.serviceAccounts, c.roles, c.roleBindings = sas.Lister(), roles.Lister(), bindings.Lister()
	utilruntime.Must(byservice.Add(pods.Informer()))
	utilruntime.Must(byservice.Add(svcs.Informer()))
	c.podIndex, c.svcIndex = pods.Informer().GetIndexer(), svcs.Informer().GetIndexer()

	must := func(_ cache.ResourceEventHandlerRegistration, err error) { utilruntime.Must(err) }
	must(isvcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueObject,
		UpdateFunc: func(_, n any) { c.enqueueObject(n) },
		DeleteFunc: c.enqueueObject,
	}))
	must(pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podAdded,
		UpdateFunc: c.podUpdated,
		DeleteFunc: c.podDeleted,
	}))
	owned := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, n any) { c.enqueueOwner(n) },
		DeleteFunc: c.enqueueOwner,
	}
	must(svcs.Informer().AddEventHandler(owned))
	must(hpas.Informer().AddEventHandler(owned))
	for _, inf := range []cache.SharedIndexInformer{sas.Informer(), roles.Informer(), bindings.Informer()} {
		must(inf.AddEventHandler(owned))
	}
	// A change to a runtime, class or profile changes the revision (or the
	// resolvability) of every service pinned to it.
	inputs := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAll() },
		UpdateFunc: func(o, n any) { c.enqueueAllIfChanged(o, n) },
		DeleteFunc: func(any) { c.enqueueAll() },
	}
	for _, inf := range []cache.SharedIndexInformer{rts.Informer(), crts.Informer(), acs.Informer(), profs.Informer()} {
		must(inf.AddEventHandler(inputs))
	}
	checkConflicts := func(any) { c.runtimeQueue.Add(conflictsKey) }
	for _, inf := range []cache.SharedIndexInformer{rts.Informer(), crts.Informer()} {
		must(inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: checkConflicts, UpdateFunc: func(_, n any) { checkConflicts(n) }, DeleteFunc: checkConflicts,
		}))
	}
	c.synced = []cache.InformerSynced{isvcs.Informer().HasSynced, rts.Informer().HasSynced, crts.Informer().HasSynced,
		acs.Informer().HasSynced, profs.Informer().HasSynced, pods.Informer().HasSynced, svcs.Informer().HasSynced, hpas.Informer().HasSynced,
		sas.Informer().HasSynced, roles.Informer().HasSynced, bindings.Informer().HasSynced}
}

// Run starts the informers and workers and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.runtimeQueue.ShutDown()
	c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	defer c.events.Shutdown()
	c.kubeInformers.Start(ctx.Done())
	c.berthInformers.Start(ctx.Done())
	c.startGangs(ctx)
	c.log.Info("waiting for caches")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("caches did not sync: %w", ctx.Err())
	}
	c.log.Info("caches synced; reconciling", "workers", workers)
	c.m.synced.Set(1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, c.conflictWorker, time.Second)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.pol.run(ctx)
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.worker, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	c.runtimeQueue.ShutDown()
	wg.Wait()
	return nil
}

// Synced reports whether the caches have synced (readiness).
func (c *Controller) Synced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// conflictWorker runs the runtime priority check whenever runtimes change.
func (c *Controller) conflictWorker(ctx context.Context) {
	for {
		key, quit := c.runtimeQueue.Get()
		if quit {
			return
		}
		if _, err := c.syncConflicts(ctx); err != nil {
			c.log.Error("runtime priority check failed; retrying", "err", err)
			c.runtimeQueue.AddRateLimited(key)
		} else {
			c.runtimeQueue.Forget(key)
		}
		c.runtimeQueue.Done(key)
	}
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	start := time.Now()
	requeue, err := c.sync(ctx, key)
	c.m.observeSync(time.Since(start), err)
	switch {
	case err != nil && c.quotaRetry(ctx, key, err):
		// A ResourceQuota refused pods: said on the service, retried on
		// its own backoff (quotaexceeded.go).
	case err != nil:
		c.log.Error("reconcile failed; retrying with backoff", "inferenceservice", key, "err", err)
		c.queue.AddRateLimited(key)
	case requeue > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, requeue)
	default:
		c.queue.Forget(key)
	}
	return true
}

func (c *Controller) enqueueObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// enqueueOwner queues the service named by an owned object's label.
func (c *Controller) enqueueOwner(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	if name := m.GetLabels()[v1beta1.LabelInferenceService]; name != "" {
		c.queue.Add(m.GetNamespace() + "/" + name)
	}
}

func (c *Controller) enqueueAll() {
	all, err := c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range all {
		c.queue.Add(s.Namespace + "/" + s.Name)
	}
}

// enqueueAllIfChanged skips resyncs and status-only updates of inputs.
func (c *Controller) enqueueAllIfChanged(o, n any) {
	om, err1 := metaOf(o)
	nm, err2 := metaOf(n)
	if err1 == nil && err2 == nil && om.GetResourceVersion() == nm.GetResourceVersion() {
		return
	}
	if err1 == nil && err2 == nil && om.GetGeneration() == nm.GetGeneration() && om.GetGeneration() != 0 &&
		maps.Equal(om.GetLabels(), nm.GetLabels()) && maps.Equal(om.GetAnnotations(), nm.GetAnnotations()) {
		return
	}
	c.enqueueAll()
}

func (c *Controller) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := podOwnerKey(pod)
	if key == "" {
		return
	}
	c.exp.Created(key, pod.Name)
	if pod.DeletionTimestamp != nil {
		c.exp.Deleted(key, string(pod.UID))
	}
	c.queue.Add(key)
}

func (c *Controller) podUpdated(_, n any) {
	c.podAdded(n)
}

func (c *Controller) podDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := podOwnerKey(pod)
	if key == "" {
		return
	}
	c.exp.Deleted(key, string(pod.UID))
	c.queue.Add(key)
}

func podOwnerKey(pod *corev1.Pod) string {
	name := pod.Labels[v1beta1.LabelInferenceService]
	if name == "" {
		return ""
	}
	return pod.Namespace + "/" + name
}

func metaOf(obj any) (metav1.Object, error) {
	switch o := obj.(type) {
	case metav1.Object:
		return o, nil
	default:
		return nil, fmt.Errorf("not an object: %T", obj)
	}
}
