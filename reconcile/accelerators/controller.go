package accelerators

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/strip"
	"github.com/berthdev/berth/selection"
)

// DefaultAcceleratorStatusInterval bounds AcceleratorClass status writes:
// at most one per class per interval.
const DefaultAcceleratorStatusInterval = 10 * time.Second

// AcceleratorStatusOptions configure the AcceleratorClass status
// controller (accelerator.go).
type AcceleratorStatusOptions struct {
	// Disabled turns the controller off.
	Disabled bool
	// Interval is the least time between two status writes of one class
	// (default DefaultAcceleratorStatusInterval).
	Interval time.Duration
	// Resync re-lists nodes, pods and classes this often (default 10m).
	Resync time.Duration
	Log    *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
	// BerthInformers is the informer factory of berth's objects, shared
	// with the other controllers (the manager passes it); nil makes one.
	BerthInformers berthinformers.SharedInformerFactory
}

// AcceleratorStatusController writes AcceleratorClass status: the Ready,
// schedulable nodes discovery matches, their accelerators, what bound
// pods leave free, and the conditions Ready and SelectorTooBroad. It
// counts with a selection.Index fed as the webhook feeds its own, so the
// status and selection never disagree.
type AcceleratorStatusController struct {
	berth versioned.Interface
	opts  AcceleratorStatusOptions
	log   *slog.Logger

	index   *selection.Index
	classes listers.AcceleratorClassLister
	queue   workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex // guards co
	co       *coalescer
	writes   atomic.Int64
	kube     kubeinformers.SharedInformerFactory
	pods     kubeinformers.SharedInformerFactory
	berthInf berthinformers.SharedInformerFactory
	synced   []cache.InformerSynced
}

// NewAcceleratorStatusController wires the informers: nodes and pods
// (bound, not finished: the server filters) stripped to what counting
// needs, and AcceleratorClasses.
func NewAcceleratorStatusController(kube kubernetes.Interface, berth versioned.Interface, opts AcceleratorStatusOptions) *AcceleratorStatusController {
	if opts.Interval <= 0 {
		opts.Interval = DefaultAcceleratorStatusInterval
	}
	if opts.Resync <= 0 {
		opts.Resync = 10 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &AcceleratorStatusController{berth: berth, opts: opts, log: opts.Log.With("controller", "accelerator-status"),
		index: selection.NewIndex(), co: newCoalescer(opts.Interval),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "acceleratorclass-status"})}
	podFilter := fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()
	a.kube = kubeinformers.NewSharedInformerFactory(kube, opts.Resync)
	a.pods = kubeinformers.NewSharedInformerFactoryWithOptions(kube, opts.Resync,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = podFilter }))
	a.berthInf = opts.BerthInformers
	if a.berthInf == nil {
		a.berthInf = berthinformers.NewSharedInformerFactory(berth, opts.Resync)
	}
	a.wire()
	return a
}

func (a *AcceleratorStatusController) wire() {
	must := func(_ cache.ResourceEventHandlerRegistration, err error) { utilruntime.Must(err) }
	acs := a.berthInf.Ome().V1beta1().AcceleratorClasses()
	a.classes = acs.Lister()
	must(acs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { a.classUpdated(nil, o) },
		UpdateFunc: a.classUpdated,
		DeleteFunc: a.classDeleted,
	}))
	nodes := a.kube.Core().V1().Nodes().Informer()
	utilruntime.Must(nodes.SetTransform(strip.Node))
	must(nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { a.nodeUpdated(nil, o) },
		UpdateFunc: a.nodeUpdated,
		DeleteFunc: a.nodeDeleted,
	}))
	pods := a.pods.Core().V1().Pods().Informer()
	utilruntime.Must(pods.SetTransform(strip.Pod))
	must(pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.podChanged,
		UpdateFunc: func(_, n any) { a.podChanged(n) },
		DeleteFunc: a.podDeleted,
	}))
	a.synced = []cache.InformerSynced{acs.Informer().HasSynced, nodes.HasSynced, pods.HasSynced}
}

func (a *AcceleratorStatusController) classUpdated(old, obj any) {
	c, ok := obj.(*v1beta1.AcceleratorClass)
	if !ok {
		return
	}
	// A status write (ours or another controller's) changes neither the
	// nodes nor the counts: re-compile the class only on a spec change.
	if o, ok := old.(*v1beta1.AcceleratorClass); !ok || o.Generation != c.Generation || o.UID != c.UID {
		a.index.UpsertAcceleratorClass(c)
	}
	a.queue.Add(c.Name)
}

func (a *AcceleratorStatusController) classDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if c, ok := obj.(*v1beta1.AcceleratorClass); ok {
		a.index.DeleteAcceleratorClass(c.Name)
		a.queue.Add(c.Name)
	}
}

// nodeUpdated skips heartbeats: only labels, accelerator allocatable and
// readiness count.
func (a *AcceleratorStatusController) nodeUpdated(old, obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	info := selection.NodeInfoOf(n)
	if o, ok := old.(*corev1.Node); ok {
		prev := selection.NodeInfoOf(o)
		if prev.Ready == info.Ready && maps.Equal(prev.Labels, info.Labels) && maps.Equal(prev.Allocatable, info.Allocatable) {
			return
		}
	}
	before := a.index.ClassesOfNode(n.Name)
	a.index.UpsertNode(info)
	a.enqueue(before)
	a.enqueue(a.index.ClassesOfNode(n.Name))
}

func (a *AcceleratorStatusController) nodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		before := a.index.ClassesOfNode(n.Name)
		a.index.DeleteNode(n.Name)
		a.enqueue(before)
	}
}

func (a *AcceleratorStatusController) podChanged(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	req := selection.PodAcceleratorRequests(p)
	if len(req) == 0 {
		return // holds no accelerator; requests of a pod do not change
	}
	if selection.PodHoldsAccelerators(p) {
		a.index.SetPodUsage(key, p.Spec.NodeName, req)
	} else {
		a.index.DeletePodUsage(key)
	}
	a.enqueue(a.index.ClassesOfNode(p.Spec.NodeName))
}

func (a *AcceleratorStatusController) podDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		a.index.DeletePodUsage(p.Namespace + "/" + p.Name)
		a.enqueue(a.index.ClassesOfNode(p.Spec.NodeName))
	}
}

func (a *AcceleratorStatusController) enqueue(names []string) {
	for _, n := range names {
		a.queue.Add(n)
	}
}

// Writes is how many status writes the controller made (tests, metrics).
func (a *AcceleratorStatusController) Writes() int64 { return a.writes.Load() }

// Run starts the informers and one worker until ctx is done.
func (a *AcceleratorStatusController) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer a.queue.ShutDown()
	a.kube.Start(ctx.Done())
	a.pods.Start(ctx.Done())
	a.berthInf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return fmt.Errorf("accelerator status caches did not sync: %w", ctx.Err())
	}
	a.log.Info("caches synced; writing AcceleratorClass status", "interval", a.opts.Interval.String())
	go wait.UntilWithContext(ctx, a.worker, time.Second)
	<-ctx.Done()
	return nil
}

func (a *AcceleratorStatusController) worker(ctx context.Context) {
	for {
		name, quit := a.queue.Get()
		if quit {
			return
		}
		if err := a.sync(ctx, name); err != nil {
			a.log.Debug("status write failed; retrying", "class", name, "err", err)
			a.queue.AddRateLimited(name)
		} else {
			a.queue.Forget(name)
		}
		a.queue.Done(name)
	}
}

// sync writes one class's status, unless it wrote it less than an interval
// ago (then it comes back when the interval is over) or nothing changed.
func (a *AcceleratorStatusController) sync(ctx context.Context, name string) error {
	c, err := a.classes.Get(name)
	if apierrors.IsNotFound(err) {
		a.mu.Lock()
		a.co.forget(name)
		a.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	now := a.opts.Now()
	a.mu.Lock()
	d := a.co.wait(name, now)
	a.mu.Unlock()
	if d > 0 {
		a.queue.AddAfter(name, d)
		return nil
	}
	avail, ok := a.index.ClassAvailability(name)
	if !ok {
		return nil // the class informer's event has not reached the index yet; it enqueues again
	}
	st, changed := classStatus(c, avail, now)
	if !changed {
		return nil
	}
	out := c.DeepCopy()
	out.Status = st
	if _, err := a.berth.OmeV1beta1().AcceleratorClasses().UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: "berth-accelerator-status"}); err != nil {
		return err
	}
	a.writes.Add(1)
	a.mu.Lock()
	a.co.wrote(name, now)
	a.mu.Unlock()
	return nil
}
