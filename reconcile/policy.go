package reconcile

import (
	"context"
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
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	policylisters "github.com/berthdev/berth/api/client/listers/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// PolicyOptions configure the reconciler's half of ServingPolicy: the
// ResourceQuota backstop of namespace budgets, the policies' status, the
// PolicyCompliant condition of services, and the QuotaExceeded condition
// of services whose pods a quota refuses. Zero values are the defaults.
type PolicyOptions struct {
	// Disabled turns off everything that reads ServingPolicies (their CRD
	// is not installed); QuotaExceeded still works.
	Disabled bool
	// Namespace is the reconciler's own: never subject to a policy, as
	// kube-system never is.
	Namespace string
	// QuotaRetryBase is the first retry delay of a service whose pods a
	// quota refuses; it doubles up to QuotaRetryMax (defaults 5s, 5m).
	QuotaRetryBase, QuotaRetryMax time.Duration
	// Coalesce is how long a policy's evaluation waits to gather a burst
	// of changes (default 500ms).
	Coalesce time.Duration
}

func (o PolicyOptions) withDefaults() PolicyOptions {
	if o.QuotaRetryBase <= 0 {
		o.QuotaRetryBase = 5 * time.Second
	}
	if o.QuotaRetryMax < o.QuotaRetryBase {
		o.QuotaRetryMax = max(5*time.Minute, o.QuotaRetryBase)
	}
	if o.Coalesce <= 0 {
		o.Coalesce = 500 * time.Millisecond
	}
	return o
}

// policyController keeps ServingPolicies' quotas and status. Its queue
// holds policy names; every change that can change a policy's verdicts
// (a service, namespace, runtime, class or profile) queues the policies it
// concerns, after Coalesce, so a burst costs one evaluation.
type policyController struct {
	c    *Controller
	opts PolicyOptions
	kube kubeinformers.SharedInformerFactory // namespaces and ResourceQuotas, unfiltered

	namespaces corelisters.NamespaceLister       // nil when Disabled
	quotas     corelisters.ResourceQuotaLister   // every quota: any can refuse pods
	policies   policylisters.ServingPolicyLister // nil when Disabled
	synced     []cache.InformerSynced            // this controller's informers
	queue      workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// primed: every policy was evaluated once since the start; until
	// then a service's PolicyCompliant condition is left as it is.
	primed bool
	// verdicts: per policy, the services it selects (by key) and their
	// violations of it (empty: compliant), as admission words them.
	verdicts map[string]map[string][]string
	// quotaDelay: the last retry delay of services a quota refuses.
	quotaDelay map[string]time.Duration
}

func newPolicyController(c *Controller) *policyController {
	p := &policyController{c: c, opts: c.opts.Policy.withDefaults(),
		verdicts: map[string]map[string][]string{}, quotaDelay: map[string]time.Duration{}}
	p.kube = kubeinformers.NewSharedInformerFactory(c.kube, c.opts.Resync)
	p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "servingpolicies"})
	must := func(_ cache.ResourceEventHandlerRegistration, err error) { utilruntime.Must(err) }
	qinf := p.kube.Core().V1().ResourceQuotas()
	p.quotas = qinf.Lister()
	must(qinf.Informer().AddEventHandler(p.quotaEvents()))
	p.synced = append(p.synced, qinf.Informer().HasSynced)
	if p.opts.Disabled {
		return p
	}
	nsinf := p.kube.Core().V1().Namespaces()
	p.namespaces = nsinf.Lister()
	must(nsinf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.enqueueAll() },
		UpdateFunc: func(o, n any) { p.enqueueAllIf(labelsChanged(o, n)) },
		DeleteFunc: func(any) { p.enqueueAll() },
	}))
	pinf := c.berthInformers.Policy().V1alpha1().ServingPolicies()
	p.policies = pinf.Lister()
	must(pinf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.enqueueObject,
		UpdateFunc: func(o, n any) { p.enqueueObjectIf(n, specChanged(o, n)) },
		DeleteFunc: p.enqueueObject,
	}))
	om := c.berthInformers.Ome().V1beta1()
	must(om.InferenceServices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.enqueueForService,
		UpdateFunc: func(o, n any) { p.enqueueForServiceIf(n, specChanged(o, n) || quotaRefusalChanged(o, n)) },
		DeleteFunc: p.enqueueForService,
	}))
	inputs := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.enqueueAll() },
		UpdateFunc: func(o, n any) { p.enqueueAllIf(specChanged(o, n)) },
		DeleteFunc: func(any) { p.enqueueAll() },
	}
	for _, inf := range []cache.SharedIndexInformer{om.ServingRuntimes().Informer(), om.ClusterServingRuntimes().Informer(),
		om.AcceleratorClasses().Informer(), om.ClusterEngineRuntimeProfiles().Informer()} {
		must(inf.AddEventHandler(inputs))
	}
	p.synced = append(p.synced, nsinf.Informer().HasSynced, pinf.Informer().HasSynced)
	return p
}

// run starts this controller's informers, waits for every cache (the
// service controller's too), evaluates every policy once (primed), then
// works the queue until ctx is done.
func (p *policyController) run(ctx context.Context) {
	defer p.queue.ShutDown()
	p.kube.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), append(slices.Clone(p.synced), p.c.synced...)...) {
		return
	}
	if !p.opts.Disabled {
		p.prime(ctx)
		go wait.UntilWithContext(ctx, p.worker, time.Second)
	}
	<-ctx.Done()
}

// prime evaluates every policy once, then queues the services whose
// PolicyCompliant condition differs from the verdicts (a policy deleted
// while the reconciler was down leaves conditions no policy sync visits).
func (p *policyController) prime(ctx context.Context) {
	all, err := p.policies.List(labels.Everything())
	if err != nil {
		p.c.log.Error("listing ServingPolicies", "err", err)
	}
	for _, sp := range all {
		if err := p.sync(ctx, sp.Name); err != nil {
			p.c.log.Error("ServingPolicy sync failed; retrying", "servingpolicy", sp.Name, "err", err)
			p.queue.AddRateLimited(sp.Name)
		}
	}
	p.mu.Lock()
	p.primed = true
	p.mu.Unlock()
	svcs, err := p.c.services.List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range svcs {
		key := s.Namespace + "/" + s.Name
		want, _ := p.compliance(key, s.Generation)
		have := meta.FindStatusCondition(s.Status.Conditions, ConditionPolicyCompliant)
		if !sameCondition(have, want) {
			p.c.queue.Add(key)
		}
	}
}

func (p *policyController) worker(ctx context.Context) {
	for {
		name, quit := p.queue.Get()
		if quit {
			return
		}
		if err := p.sync(ctx, name); err != nil {
			p.c.log.Error("ServingPolicy sync failed; retrying with backoff", "servingpolicy", name, "err", err)
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
func (p *policyController) sync(ctx context.Context, name string) error {
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
	st := policyStatus(sp, verdicts, quotaName(sp.Name), quotas, qerr, metav1.NewTime(p.c.now()))
	if !apiequality.Semantic.DeepEqual(sp.Status, st) {
		upd := sp.DeepCopy()
		upd.Status = st
		p.c.m.write("update", "servingpolicies/status")
		_, err := p.c.berth.PolicyV1alpha1().ServingPolicies().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return qerr
}

// setVerdicts replaces one policy's verdicts (nil: the policy is gone) and
// queues every service whose verdict changed, so its PolicyCompliant
// condition follows (through the service's own status write).
func (p *policyController) setVerdicts(policy string, cur map[string][]string) {
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
			p.c.queue.Add(key)
		}
	}
	for key := range old {
		if _, ok := cur[key]; !ok {
			p.c.queue.Add(key)
		}
	}
}

// compliance is the service's PolicyCompliant condition from the
// verdicts: nil when no policy selects it; known is false until every
// policy was evaluated once (the condition is then left as it is).
func (p *policyController) compliance(key string, generation int64) (cond *metav1.Condition, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.primed || p.opts.Disabled {
		return nil, p.opts.Disabled
	}
	mine := map[string][]string{}
	for policy, vs := range p.verdicts {
		if v, ok := vs[key]; ok {
			mine[policy] = v
		}
	}
	return complianceCondition(mine, generation), true
}

// servingPolicyConditions puts the conditions of this file and
// quotaexceeded.go into a status the service's sync is about to write:
// QuotaExceeded goes (the sync created every pod), PolicyCompliant follows
// the verdicts.
func (c *Controller) servingPolicyConditions(isvc *v1beta1.InferenceService, st *v1beta1.InferenceServiceStatus) {
	c.clearQuotaExceeded(isvc, st)
	cond, known := c.pol.compliance(isvc.Namespace+"/"+isvc.Name, isvc.Generation)
	switch {
	case !known:
	case cond == nil:
		meta.RemoveStatusCondition(&st.Conditions, ConditionPolicyCompliant)
	default:
		meta.SetStatusCondition(&st.Conditions, *cond)
	}
}

func sameCondition(a, b *metav1.Condition) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}

func (p *policyController) enqueue(name string) {
	if !p.opts.Disabled {
		p.queue.AddAfter(name, p.opts.Coalesce)
	}
}

func (p *policyController) enqueueObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if m, err := metaOf(obj); err == nil {
		p.enqueue(m.GetName())
	}
}

func (p *policyController) enqueueObjectIf(obj any, ok bool) {
	if ok {
		p.enqueueObject(obj)
	}
}

func (p *policyController) enqueueAll() {
	all, err := p.policies.List(labels.Everything())
	if err != nil {
		return
	}
	for _, sp := range all {
		p.enqueue(sp.Name)
	}
}

func (p *policyController) enqueueAllIf(ok bool) {
	if ok {
		p.enqueueAll()
	}
}

// enqueueForService queues the policies whose namespaceSelector selects
// the service's namespace: a service changes its own verdict and, under a
// namespace budget, its neighbours'.
func (p *policyController) enqueueForService(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := metaOf(obj)
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

func (p *policyController) enqueueForServiceIf(obj any, ok bool) {
	if ok {
		p.enqueueForService(obj)
	}
}

// exempt: kube-system and the reconciler's own namespace are never
// subject to a policy.
func (p *policyController) exempt(namespace string) bool {
	return namespace == "kube-system" || namespace != "" && namespace == p.opts.Namespace
}

// specChanged: not a resync, and more than the status changed (the
// generation, labels or annotations; annotations carry a service's pin).
func specChanged(o, n any) bool {
	om, err1 := metaOf(o)
	nm, err2 := metaOf(n)
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
