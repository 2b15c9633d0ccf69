package classsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
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
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	"github.com/berthdev/berth/internal/events"
)

// Options configure the controller: discovery of classes from GPU feature
// discovery node labels (discovery.go) and the Kueue ResourceFlavor sync
// (kueue.go). Both are off by default; New needs at least one.
type Options struct {
	// Discovery creates and updates auto-discovered classes.
	Discovery bool
	// NodeSelector (label selector syntax) restricts the nodes discovery
	// and the Kueue sync read; empty: every node.
	NodeSelector string
	// KueueSync keeps ResourceFlavors and classes in sync both ways.
	KueueSync bool
	// Coalesce is how long a burst of node and class events is gathered
	// before one discovery pass (default 1s).
	Coalesce time.Duration

	// Resync re-lists nodes and flavors (and classes, when New makes its
	// own informer factory) this often (default 10m).
	Resync time.Duration
	Log    *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

// Enabled reports whether the options ask for discovery or the Kueue sync.
func (o Options) Enabled() bool { return o.Discovery || o.KueueSync }

func (o Options) withDefaults() Options {
	if o.Coalesce <= 0 {
		o.Coalesce = time.Second
	}
	if o.Resync == 0 {
		o.Resync = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// discoveryKey is the queue key of a discovery pass over every node.
const discoveryKey = "discovery"

// fieldManagerDiscovery owns the Stale condition of auto-discovered classes
// (server-side apply on the status subresource, so other writers of the
// class's status keep their conditions).
const fieldManagerDiscovery = "berth-accelerator-discovery"

// Controller runs discovery and the Kueue sync on one queue of keys:
// discoveryKey, "flavor/<name>" and "class/<name>".
type Controller struct {
	kube  kubernetes.Interface
	berth versioned.Interface
	dyn   dynamic.Interface
	opts  Options
	log   *slog.Logger
	now   func() time.Time

	informers berthinformers.SharedInformerFactory // classes (shared)
	nodeInf   kubeinformers.SharedInformerFactory  // nodes, filtered by NodeSelector
	classes   listers.AcceleratorClassLister
	nodes     corelisters.NodeLister
	queue     workqueue.TypedRateLimitingInterface[string]
	kq        *kueueSync // nil without KueueSync
	recorder  record.EventRecorder
	events    record.EventBroadcaster

	synced []cache.InformerSynced
	mu     sync.Mutex
	warned map[string]bool // node/label=value already reported in an Event
}

// New wires the node informer, the class informer of informers (a shared
// factory the manager passes; nil makes one), the flavors' dynamic
// informer (KueueSync; dyn must not be nil then), the queue and the event
// recorder. It fails when the options ask for neither discovery nor the
// Kueue sync, or NodeSelector does not parse.
func New(kube kubernetes.Interface, berth versioned.Interface, dyn dynamic.Interface,
	informers berthinformers.SharedInformerFactory, opts Options) (*Controller, error) {
	if !opts.Enabled() {
		return nil, errors.New("neither accelerator discovery nor the Kueue sync is on")
	}
	if _, err := labels.Parse(opts.NodeSelector); err != nil {
		return nil, fmt.Errorf("accelerator discovery node selector: %w", err)
	}
	if opts.KueueSync && dyn == nil {
		return nil, fmt.Errorf("the Kueue sync needs a dynamic client")
	}
	opts = opts.withDefaults()
	if informers == nil {
		informers = berthinformers.NewSharedInformerFactory(berth, opts.Resync)
	}
	c := &Controller{kube: kube, berth: berth, dyn: dyn, opts: opts, log: opts.Log, now: opts.Now,
		informers: informers, warned: map[string]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "accelerators"})}
	c.wireInformers()
	if opts.KueueSync {
		c.kq = newKueueSync(c)
	}
	c.events, c.recorder = events.New()
	return c, nil
}

func (c *Controller) wireInformers() {
	sel := c.opts.NodeSelector
	c.nodeInf = kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, c.opts.Resync,
		kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = sel }))
	nodes := c.nodeInf.Core().V1().Nodes()
	c.nodes = nodes.Lister()
	must := func(_ cache.ResourceEventHandlerRegistration, err error) { utilruntime.Must(err) }
	must(nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.nodesChanged() },
		UpdateFunc: func(o, n any) { c.nodeUpdated(o, n) },
		DeleteFunc: func(any) { c.nodesChanged() },
	}))
	acs := c.informers.Ome().V1beta1().AcceleratorClasses()
	c.classes = acs.Lister()
	must(acs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.classChanged,
		UpdateFunc: func(_, n any) { c.classChanged(n) },
		DeleteFunc: c.classChanged,
	}))
	c.synced = []cache.InformerSynced{nodes.Informer().HasSynced, acs.Informer().HasSynced}
}

// nodeUpdated skips heartbeats: only labels, taints, allocatable
// resource names or deletion matter to discovery and the Kueue sync.
func (c *Controller) nodeUpdated(o, n any) {
	on, ok1 := o.(*corev1.Node)
	nn, ok2 := n.(*corev1.Node)
	if ok1 && ok2 && maps.Equal(on.Labels, nn.Labels) && slices.Equal(allocatableNames(on), allocatableNames(nn)) &&
		taintsEqual(on.Spec.Taints, nn.Spec.Taints) && (on.DeletionTimestamp == nil) == (nn.DeletionTimestamp == nil) {
		return
	}
	c.nodesChanged()
}

func (c *Controller) nodesChanged() {
	if c.opts.Discovery {
		c.queue.AddAfter(discoveryKey, c.opts.Coalesce)
	}
	if c.kq != nil {
		c.kq.enqueueAll()
	}
}

func (c *Controller) classChanged(obj any) {
	if c.opts.Discovery {
		c.queue.AddAfter(discoveryKey, c.opts.Coalesce)
	}
	if c.kq != nil {
		c.kq.classChanged(obj)
	}
}

// Run starts the informers and the worker and blocks until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	defer c.events.Shutdown()
	c.nodeInf.Start(ctx.Done())
	c.informers.Start(ctx.Done())
	if c.kq != nil {
		c.kq.start(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("node and AcceleratorClass caches did not sync: %w", ctx.Err())
	}
	c.log.Info("accelerator sync running", "discovery", c.opts.Discovery, "kueueSync", c.opts.KueueSync,
		"nodeSelector", c.opts.NodeSelector)
	if c.opts.Discovery {
		c.queue.Add(discoveryKey)
	}
	if c.kq != nil {
		// Discovery never waits for Kueue: the flavors' cache syncs (and
		// the sync starts) whenever Kueue's CRD is there.
		go c.kq.waitSynced(ctx)
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	wait.UntilWithContext(ctx, c.worker, time.Second)
	return nil
}

// Synced reports whether the node and class caches have synced
// (readiness). The flavors' cache is not waited for.
func (c *Controller) Synced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

// processNext syncs one key; false when the queue shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	var err error
	switch {
	case key == discoveryKey:
		err = c.discover(ctx)
	case c.kq != nil:
		err = c.kq.sync(ctx, key)
	}
	if err != nil {
		c.log.Error("accelerator sync failed; retrying", "key", key, "err", err)
		c.queue.AddRateLimited(key)
	} else {
		c.queue.Forget(key)
	}
	return true
}

func metaOf(obj any) (metav1.Object, error) {
	switch o := obj.(type) {
	case metav1.Object:
		return o, nil
	default:
		return nil, fmt.Errorf("not an object: %T", obj)
	}
}
