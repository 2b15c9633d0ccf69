package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/gpudiscovery"
	"github.com/berthdev/berth/selection"
)

// AcceleratorOptions configure the AcceleratorClass side of the
// reconciler: discovery of classes from GPU feature discovery node labels
// (this file) and the Kueue ResourceFlavor sync (kueue.go). Both are off
// by default.
type AcceleratorOptions struct {
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
}

// discoveryKey is the queue key of a discovery pass over every node.
const discoveryKey = "discovery"

// fieldManagerDiscovery owns the Stale condition of auto-discovered classes
// (server-side apply on the status subresource, so other writers of the
// class's status keep their conditions).
const fieldManagerDiscovery = "berth-accelerator-discovery"

// accelSync runs discovery and the Kueue sync on one queue of keys:
// discoveryKey, "flavor/<name>" and "class/<name>".
type accelSync struct {
	c     *Controller
	opts  AcceleratorOptions
	kube  kubeinformers.SharedInformerFactory // nodes, filtered by NodeSelector
	nodes corelisters.NodeLister
	queue workqueue.TypedRateLimitingInterface[string]
	kq    *kueueSync // nil without KueueSync

	synced []cache.InformerSynced
	mu     sync.Mutex
	warned map[string]bool // node/label=value already reported in an Event
}

// newAccelSync wires the informers; nil when discovery and the Kueue sync
// are both off.
func newAccelSync(c *Controller) (*accelSync, error) {
	o := c.opts.Accelerators
	if !o.Discovery && !o.KueueSync {
		return nil, nil
	}
	if o.Coalesce <= 0 {
		o.Coalesce = time.Second
	}
	if _, err := labels.Parse(o.NodeSelector); err != nil {
		return nil, fmt.Errorf("accelerator discovery node selector: %w", err)
	}
	a := &accelSync{c: c, opts: o, warned: map[string]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "accelerators"})}
	a.kube = kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, c.opts.Resync,
		kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = o.NodeSelector }))
	nodes := a.kube.Core().V1().Nodes()
	a.nodes = nodes.Lister()
	must := func(_ cache.ResourceEventHandlerRegistration, err error) { utilruntime.Must(err) }
	must(nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.nodesChanged() },
		UpdateFunc: func(o, n any) { a.nodeUpdated(o, n) },
		DeleteFunc: func(any) { a.nodesChanged() },
	}))
	acs := c.berthInformers.Ome().V1beta1().AcceleratorClasses().Informer()
	must(acs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.classChanged,
		UpdateFunc: func(_, n any) { a.classChanged(n) },
		DeleteFunc: a.classChanged,
	}))
	a.synced = []cache.InformerSynced{nodes.Informer().HasSynced, acs.HasSynced}
	if o.KueueSync {
		if c.opts.Dynamic == nil {
			return nil, fmt.Errorf("the Kueue sync needs a dynamic client")
		}
		a.kq = newKueueSync(a)
	}
	return a, nil
}

// nodeUpdated skips heartbeats: only labels, taints, allocatable
// resource names or deletion matter to discovery and the Kueue sync.
func (a *accelSync) nodeUpdated(o, n any) {
	on, ok1 := o.(*corev1.Node)
	nn, ok2 := n.(*corev1.Node)
	if ok1 && ok2 && maps.Equal(on.Labels, nn.Labels) && slices.Equal(allocatableNames(on), allocatableNames(nn)) &&
		taintsEqual(on.Spec.Taints, nn.Spec.Taints) && (on.DeletionTimestamp == nil) == (nn.DeletionTimestamp == nil) {
		return
	}
	a.nodesChanged()
}

func (a *accelSync) nodesChanged() {
	if a.opts.Discovery {
		a.queue.AddAfter(discoveryKey, a.opts.Coalesce)
	}
	if a.kq != nil {
		a.kq.enqueueAll()
	}
}

func (a *accelSync) classChanged(obj any) {
	if a.opts.Discovery {
		a.queue.AddAfter(discoveryKey, a.opts.Coalesce)
	}
	if a.kq != nil {
		a.kq.classChanged(obj)
	}
}

func (a *accelSync) run(ctx context.Context) {
	defer a.queue.ShutDown()
	a.kube.Start(ctx.Done())
	if a.kq != nil {
		a.kq.start(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return
	}
	a.c.log.Info("accelerator sync running", "discovery", a.opts.Discovery, "kueueSync", a.opts.KueueSync,
		"nodeSelector", a.opts.NodeSelector)
	if a.opts.Discovery {
		a.queue.Add(discoveryKey)
	}
	if a.kq != nil {
		// Discovery never waits for Kueue: the flavors' cache syncs (and
		// the sync starts) whenever Kueue's CRD is there.
		go a.kq.waitSynced(ctx)
	}
	go func() {
		<-ctx.Done()
		a.queue.ShutDown()
	}()
	wait.UntilWithContext(ctx, a.worker, time.Second)
}

func (a *accelSync) worker(ctx context.Context) {
	for {
		key, quit := a.queue.Get()
		if quit {
			return
		}
		var err error
		switch {
		case key == discoveryKey:
			err = a.discover(ctx)
		case a.kq != nil:
			err = a.kq.sync(ctx, key)
		}
		if err != nil {
			a.c.log.Error("accelerator sync failed; retrying", "key", key, "err", err)
			a.queue.AddRateLimited(key)
		} else {
			a.queue.Forget(key)
		}
		a.queue.Done(key)
	}
}

// discover is one discovery pass: every node discovery counts, every
// class, gpudiscovery.Plan, then its writes.
func (a *accelSync) discover(ctx context.Context) error {
	nodes, err := a.gpuNodes()
	if err != nil {
		return err
	}
	props, problems := gpudiscovery.Propose(nodes)
	a.reportProblems(problems)
	classes, err := a.c.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	existing := make([]gpudiscovery.ExistingClass, 0, len(classes))
	for _, cl := range classes {
		existing = append(existing, gpudiscovery.ExistingClass{Class: cl, Nodes: matchedNodes(cl, nodes)})
	}
	var errs []error
	for _, act := range gpudiscovery.Plan(props, existing) {
		if err := a.apply(ctx, act); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", act.Kind, act.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// gpuNodes are the nodes discovery counts (NodeSelector; not being
// deleted), as gpudiscovery reads them.
func (a *accelSync) gpuNodes() ([]gpudiscovery.Node, error) {
	all, err := a.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]gpudiscovery.Node, 0, len(all))
	for _, n := range all {
		if n.DeletionTimestamp != nil {
			continue
		}
		out = append(out, gpudiscovery.Node{Name: n.Name, Labels: n.Labels, Resources: allocatableNames(n)})
	}
	return out, nil
}

// matchedNodes are the names of the nodes the class matches, sorted.
func matchedNodes(cl *v1beta1.AcceleratorClass, nodes []gpudiscovery.Node) []string {
	match := selection.ClassNodeMatcher(cl)
	var out []string
	for _, n := range nodes {
		if match(selection.NodeInfo{Name: n.Name, Labels: n.Labels}) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

func (a *accelSync) apply(ctx context.Context, act gpudiscovery.Action) error {
	cls := a.c.berth.OmeV1beta1().AcceleratorClasses()
	switch act.Kind {
	case gpudiscovery.Create:
		obj := &v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: act.Name,
			Labels: map[string]string{v1beta1.LabelAutoDiscovered: "true"}}, Spec: *act.Spec}
		created, err := cls.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManagerDiscovery})
		if apierrors.IsAlreadyExists(err) {
			return nil // the informer will show it; the next pass decides
		}
		if err == nil {
			a.c.recorder.Eventf(created, corev1.EventTypeNormal, "Discovered", "created from the labels of nodes %v",
				act.Spec.Discovery.NodeSelector)
		}
		return err
	case gpudiscovery.Update:
		cur, err := a.c.classes.Get(act.Name)
		if err != nil {
			return err
		}
		upd := cur.DeepCopy()
		upd.Spec = *act.Spec
		_, err = cls.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManagerDiscovery})
		return err
	case gpudiscovery.SetStale:
		return a.applyStale(ctx, act)
	case gpudiscovery.NameTaken:
		a.warnOnce("class/"+act.Name, func() {
			a.c.log.Warn("accelerator discovery: an AcceleratorClass not made by discovery holds the name of a discovered product; left alone",
				"acceleratorclass", act.Name)
		})
	}
	return nil
}

// applyStale sets the Stale condition by server-side apply of the status
// subresource, owning that condition only.
func (a *accelSync) applyStale(ctx context.Context, act gpudiscovery.Action) error {
	status := metav1.ConditionFalse
	if act.Stale {
		status = metav1.ConditionTrue
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1beta1.SchemeGroupVersion.String(), "kind": "AcceleratorClass",
		"metadata": map[string]any{"name": act.Name},
		"status": map[string]any{"conditions": []metav1.Condition{{Type: v1beta1.ConditionStale, Status: status,
			Reason: act.Reason, Message: act.Message, LastTransitionTime: metav1.NewTime(a.c.now())}}},
	})
	if err != nil {
		return err
	}
	force := true
	_, err = a.c.berth.OmeV1beta1().AcceleratorClasses().Patch(ctx, act.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: fieldManagerDiscovery, Force: &force}, "status")
	return err
}

// reportProblems says once per node, label and value, in a Warning Event
// on the node, that a label value was ignored.
func (a *accelSync) reportProblems(problems []gpudiscovery.NodeProblems) {
	for _, np := range problems {
		for _, p := range np.Problems {
			a.warnOnce(np.Node+"/"+p.Label+"="+p.Value, func() {
				ref := &corev1.ObjectReference{Kind: "Node", Name: np.Node, UID: types.UID(np.Node), APIVersion: "v1"}
				a.c.recorder.Event(ref, corev1.EventTypeWarning, "InvalidGPULabel", p.String())
			})
		}
	}
}

func (a *accelSync) warnOnce(key string, f func()) {
	a.mu.Lock()
	seen := a.warned[key]
	a.warned[key] = true
	a.mu.Unlock()
	if !seen {
		f()
	}
}

func allocatableNames(n *corev1.Node) []string {
	out := make([]string, 0, len(n.Status.Allocatable))
	for r := range n.Status.Allocatable {
		out = append(out, string(r))
	}
	sort.Strings(out)
	return out
}

func taintsEqual(a, b []corev1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Taint) bool {
		return x.Key == y.Key && x.Value == y.Value && x.Effect == y.Effect
	})
}
