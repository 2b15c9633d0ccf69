package policy

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	policylisters "github.com/berthdev/berth/api/client/listers/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Options configure the ServingPolicy controller. Zero values are the
// defaults.
type Options struct {
	// Disabled is the older spelling of leaving the controller out
	// (--serving-policies=false: the policy.berth.dev CRD is not
	// installed); the manager does not build it then.
	Disabled bool
	// Namespace is the reconciler's own: never subject to a policy, as
	// kube-system never is.
	Namespace string
	// Coalesce is how long a policy's evaluation waits to gather a burst
	// of changes (default 500ms).
	Coalesce time.Duration
	// Resync re-lists every object this often (default 10m).
	Resync time.Duration
	Log    *slog.Logger
	// Writes counts one API write (the manager wires the serving groups
	// controller's berth_reconciler_api_writes_total); nil counts nothing.
	Writes func(verb, resource string)
	// Now is the clock (tests).
	Now func() time.Time
	// Services reach the serving groups controller (nil: it is not
	// running; verdicts are then kept but reach no service).
	Services Services
	// BerthInformers is the informer factory of berth's objects, shared
	// with the other controllers (the manager passes it); nil makes one.
	BerthInformers berthinformers.SharedInformerFactory
	// KubeInformers is an unfiltered factory of namespaces and
	// ResourceQuotas, shared with the serving groups controller (its
	// QuotaExceeded side watches quotas too); nil makes one.
	KubeInformers kubeinformers.SharedInformerFactory
}

// Services is what the controller needs of the serving groups
// controller: queueing a service (by namespace/name) whose verdict
// changed, so its own status write puts PolicyCompliant right.
type Services interface {
	Enqueue(key string)
}

func (o Options) withDefaults() Options {
	if o.Coalesce <= 0 {
		o.Coalesce = 500 * time.Millisecond
	}
	if o.Resync == 0 {
		o.Resync = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Writes == nil {
		o.Writes = func(string, string) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Controller keeps ServingPolicies' quotas and status, and the verdicts
// behind services' PolicyCompliant condition. Its queue holds policy
// names; every change that can change a policy's verdicts (a service,
// namespace, runtime, class or profile) queues the policies it concerns,
// after Coalesce, so a burst costs one evaluation.
type Controller struct {
	opts  Options
	log   *slog.Logger
	kube  kubernetes.Interface
	berth versioned.Interface

	kubeInformers  kubeinformers.SharedInformerFactory // namespaces and ResourceQuotas, unfiltered
	berthInformers berthinformers.SharedInformerFactory

	namespaces corelisters.NamespaceLister
	quotas     corelisters.ResourceQuotaLister // every quota: berth's are found by label
	policies   policylisters.ServingPolicyLister
	objects    objects // what a service's pin names (resolve.go)
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// primed: every policy was evaluated once since the start; until
	// then a service's PolicyCompliant condition is left as it is.
	primed bool
	// verdicts: per policy, the services it selects (by key) and their
	// violations of it (empty: compliant), as admission words them.
	verdicts map[string]map[string][]string
}

// New wires the controller's informers, listers and queue.
func New(kube kubernetes.Interface, berth versioned.Interface, opts Options) *Controller {
	opts = opts.withDefaults()
	p := &Controller{opts: opts, log: opts.Log, kube: kube, berth: berth, verdicts: map[string]map[string][]string{}}
	p.kubeInformers, p.berthInformers = opts.KubeInformers, opts.BerthInformers
	if p.kubeInformers == nil {
		p.kubeInformers = kubeinformers.NewSharedInformerFactory(kube, opts.Resync)
	}
	if p.berthInformers == nil {
		p.berthInformers = berthinformers.NewSharedInformerFactory(berth, opts.Resync)
	}
	p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "servingpolicies"})
	p.wireInformers()
	return p
}

func (p *Controller) wireInformers() {
	must := func(_ cache.ResourceEventHandlerRegistration, err error) { utilruntime.Must(err) }
	qinf := p.kubeInformers.Core().V1().ResourceQuotas()
	p.quotas = qinf.Lister()
	must(qinf.Informer().AddEventHandler(p.quotaEvents()))
	nsinf := p.kubeInformers.Core().V1().Namespaces()
	p.namespaces = nsinf.Lister()
	must(nsinf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.enqueueAll() },
		UpdateFunc: func(o, n any) { p.enqueueAllIf(labelsChanged(o, n)) },
		DeleteFunc: func(any) { p.enqueueAll() },
	}))
	pinf := p.berthInformers.Policy().V1alpha1().ServingPolicies()
	p.policies = pinf.Lister()
	must(pinf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.enqueueObject,
		UpdateFunc: func(o, n any) { p.enqueueObjectIf(n, specChanged(o, n)) },
		DeleteFunc: p.enqueueObject,
	}))
	om := p.berthInformers.Ome().V1beta1()
	isvcs := om.InferenceServices()
	must(isvcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.enqueueForService,
		UpdateFunc: func(o, n any) { p.enqueueForServiceIf(n, specChanged(o, n) || quotaRefusalChanged(o, n)) },
		DeleteFunc: p.enqueueForService,
	}))
	inputs := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.enqueueAll() },
		UpdateFunc: func(o, n any) { p.enqueueAllIf(specChanged(o, n)) },
		DeleteFunc: func(any) { p.enqueueAll() },
	}
	rts, crts, acs, profs := om.ServingRuntimes(), om.ClusterServingRuntimes(), om.AcceleratorClasses(), om.ClusterEngineRuntimeProfiles()
	for _, inf := range []cache.SharedIndexInformer{rts.Informer(), crts.Informer(), acs.Informer(), profs.Informer()} {
		must(inf.AddEventHandler(inputs))
	}
	bms, cbms := om.BaseModels(), om.ClusterBaseModels()
	p.objects = objects{services: isvcs.Lister(), runtimes: rts.Lister(), clusterRuntimes: crts.Lister(), classes: acs.Lister(),
		profiles: profs.Lister(), baseModels: bms.Lister(), clusterModels: cbms.Lister()}
	p.synced = []cache.InformerSynced{qinf.Informer().HasSynced, nsinf.Informer().HasSynced, pinf.Informer().HasSynced,
		isvcs.Informer().HasSynced, rts.Informer().HasSynced, crts.Informer().HasSynced, acs.Informer().HasSynced,
		profs.Informer().HasSynced, bms.Informer().HasSynced, cbms.Informer().HasSynced}
}

// objects are the listers a service's pinned decision is read back from.
type objects struct {
	services        listers.InferenceServiceLister
	runtimes        listers.ServingRuntimeLister
	clusterRuntimes listers.ClusterServingRuntimeLister
	classes         listers.AcceleratorClassLister
	profiles        listers.ClusterEngineRuntimeProfileLister
	baseModels      listers.BaseModelLister
	clusterModels   listers.ClusterBaseModelLister
}

// Synced: every cache the controller reads has synced.
func (p *Controller) Synced() bool {
	for _, s := range p.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Run starts the informers, waits for every cache, evaluates every policy
// once (primed), then works the queue until ctx is done.
func (p *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer p.queue.ShutDown()
	p.kubeInformers.Start(ctx.Done())
	p.berthInformers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return fmt.Errorf("caches did not sync: %w", ctx.Err())
	}
	p.prime(ctx)
	go wait.UntilWithContext(ctx, p.worker, time.Second)
	<-ctx.Done()
	return nil
}

// prime evaluates every policy once, then queues the services whose
// PolicyCompliant condition differs from the verdicts (a policy deleted
// while the reconciler was down leaves conditions no policy sync visits).
func (p *Controller) prime(ctx context.Context) {
	all, err := p.policies.List(labels.Everything())
	if err != nil {
		p.log.Error("listing ServingPolicies", "err", err)
	}
	for _, sp := range all {
		if err := p.sync(ctx, sp.Name); err != nil {
			p.log.Error("ServingPolicy sync failed; retrying", "servingpolicy", sp.Name, "err", err)
			p.queue.AddRateLimited(sp.Name)
		}
	}
	p.mu.Lock()
	p.primed = true
	p.mu.Unlock()
	svcs, err := p.objects.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range svcs {
		key := s.Namespace + "/" + s.Name
		want, _ := p.Compliance(key, s.Generation)
		have := meta.FindStatusCondition(s.Status.Conditions, ConditionPolicyCompliant)
		if !sameCondition(have, want) {
			p.enqueueService(key)
		}
	}
}

func (p *Controller) worker(ctx context.Context) {
	for {
		name, quit := p.queue.Get()
		if quit {
			return
		}
		if err := p.sync(ctx, name); err != nil {
			p.log.Error("ServingPolicy sync failed; retrying with backoff", "servingpolicy", name, "err", err)
			p.queue.AddRateLimited(name)
		} else {
			p.queue.Forget(name)
		}
		p.queue.Done(name)
	}
}

// sync evaluates one policy (a deleted one: forgets it): its verdicts on
// the services it selects, its ResourceQuotas, and its status, written
// only when it changed.
func (p *Controller) sync(ctx context.Context, name string) error {
	sp, err := p.policies.Get(name)
	if apierrors.IsNotFound(err) {
		sp, err = nil, nil
	}
	if err != nil {
		return err
	}
	namespaces, err := p.namespaces.List(labels.Everything())
	if err != nil {
		return err
	}
	var verdicts map[string][]string
	if sp != nil {
		if verdicts, err = p.evaluate(sp, namespaces); err != nil {
			return err
		}
	}
	p.setVerdicts(name, verdicts)
	quotas, qerr := p.syncQuotas(ctx, name, sp, namespaces)
	if sp == nil {
		return qerr
	}
	st := policyStatus(sp, verdicts, quotaName(sp.Name), quotas, qerr, metav1.NewTime(p.opts.Now()))
	if !apiequality.Semantic.DeepEqual(sp.Status, st) {
		upd := sp.DeepCopy()
		upd.Status = st
		p.opts.Writes("update", "servingpolicies/status")
		_, err := p.berth.PolicyV1alpha1().ServingPolicies().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return qerr
}

// setVerdicts replaces one policy's verdicts (nil: the policy is gone) and
// queues every service whose verdict changed, so its PolicyCompliant
// condition follows (through the service's own status write).
func (p *Controller) setVerdicts(policy string, cur map[string][]string) {
	p.mu.Lock()
	old := p.verdicts[policy]
	if cur == nil {
		delete(p.verdicts, policy)
	} else {
		p.verdicts[policy] = cur
	}
	p.mu.Unlock()
	for key, v := range cur {
		if o, ok := old[key]; !ok || !slices.Equal(o, v) {
			p.enqueueService(key)
		}
	}
	for key := range old {
		if _, ok := cur[key]; !ok {
			p.enqueueService(key)
		}
	}
}

func (p *Controller) enqueueService(key string) {
	if p.opts.Services != nil {
		p.opts.Services.Enqueue(key)
	}
}

// Compliance is the service's PolicyCompliant condition from the
// verdicts: nil when no policy selects it; known is false until every
// policy was evaluated once (the condition is then left as it is). The
// serving groups controller puts it in the service's status.
func (p *Controller) Compliance(key string, generation int64) (cond *metav1.Condition, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.primed {
		return nil, false
	}
	mine := map[string][]string{}
	for policy, vs := range p.verdicts {
		if v, ok := vs[key]; ok {
			mine[policy] = v
		}
	}
	return complianceCondition(mine, generation), true
}

// QuotaPolicy names the ServingPolicy whose namespace budget a
// ResourceQuota keeps ("" for a quota that is not berth's): the serving
// groups controller names it in QuotaExceeded.
func (p *Controller) QuotaPolicy(q *corev1.ResourceQuota) string { return quotaPolicy(q) }

func sameCondition(a, b *metav1.Condition) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}

func (p *Controller) enqueue(name string) {
	p.queue.AddAfter(name, p.opts.Coalesce)
}

func (p *Controller) enqueueObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if m, err := meta.Accessor(obj); err == nil {
		p.enqueue(m.GetName())
	}
}

func (p *Controller) enqueueObjectIf(obj any, ok bool) {
	if ok {
		p.enqueueObject(obj)
	}
}

func (p *Controller) enqueueAll() {
	all, err := p.policies.List(labels.Everything())
	if err != nil {
		return
	}
	for _, sp := range all {
		p.enqueue(sp.Name)
	}
}

func (p *Controller) enqueueAllIf(ok bool) {
	if ok {
		p.enqueueAll()
	}
}

// enqueueForService queues the policies whose namespaceSelector selects
// the service's namespace: a service changes its own verdict and, under a
// namespace budget, its neighbours'.
func (p *Controller) enqueueForService(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	ns, err := p.namespaces.Get(m.GetNamespace())
	if err != nil {
		p.enqueueAll()
		return
	}
	all, err := p.policies.List(labels.Everything())
	if err != nil {
		return
	}
	for _, sp := range all {
		if namespaceSelected(sp, ns, p.exempt) {
			p.enqueue(sp.Name)
		}
	}
}

func (p *Controller) enqueueForServiceIf(obj any, ok bool) {
	if ok {
		p.enqueueForService(obj)
	}
}

// exempt: kube-system and the reconciler's own namespace are never
// subject to a policy.
func (p *Controller) exempt(namespace string) bool {
	return namespace == "kube-system" || namespace != "" && namespace == p.opts.Namespace
}

// specChanged: not a resync, and more than the status changed (the
// generation, labels or annotations; annotations carry a service's pin).
func specChanged(o, n any) bool {
	om, err1 := meta.Accessor(o)
	nm, err2 := meta.Accessor(n)
	if err1 != nil || err2 != nil {
		return true
	}
	if om.GetResourceVersion() == nm.GetResourceVersion() {
		return true // a resync: evaluate again
	}
	return om.GetGeneration() != nm.GetGeneration() || om.GetGeneration() == 0 ||
		!maps.Equal(om.GetLabels(), nm.GetLabels()) || !maps.Equal(om.GetAnnotations(), nm.GetAnnotations())
}

// quotaRefusalChanged: a service's QuotaExceeded condition came or went
// (namespaceVerdicts counts refused services last).
func quotaRefusalChanged(o, n any) bool {
	os, ok1 := o.(*v1beta1.InferenceService)
	ns, ok2 := n.(*v1beta1.InferenceService)
	return ok1 && ok2 && meta.IsStatusConditionTrue(os.Status.Conditions, ConditionQuotaExceeded) != meta.IsStatusConditionTrue(ns.Status.Conditions, ConditionQuotaExceeded)
}

// labelsChanged: a namespace's labels changed (what selectors read), or a
// resync.
func labelsChanged(o, n any) bool {
	on, ok1 := o.(*corev1.Namespace)
	nn, ok2 := n.(*corev1.Namespace)
	return !ok1 || !ok2 || on.ResourceVersion == nn.ResourceVersion || !maps.Equal(on.Labels, nn.Labels) ||
		(on.DeletionTimestamp == nil) != (nn.DeletionTimestamp == nil)
}
