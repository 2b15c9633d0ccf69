package servinggroups

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/byservice"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// backoffMemory is the planner's per-group recreate memory of one service,
// by component. It lives in memory; the count also rides on the recreated
// pods (ome.io/recreate-count), so a restarted reconciler recovers it.
type backoffMemory map[string]plan.Backoff

// componentResult is what one component's step produced.
type componentResult struct {
	topo     merge.ComponentTopology
	revision string
	step     plan.Step
}

// sync reconciles one InferenceService. It reads like the steps it takes:
//
//  1. load the service; a deleted one is forgotten (garbage collection
//     removes what it owned);
//  2. wait for the pod creations and deletions already sent to show up;
//  3. an unpinned service whose named model or runtime does not exist
//     (ModelNotFound, RuntimeNotFound) or whose model awaits metadata
//     (ModelMetadataPending) waits; once they exist and the model is
//     resolved it is nudged (refwait.go, modelwait.go) and the webhook
//     pins it on that update;
//  4. read the pinned decision back; if it does not resolve, keep every
//     running pod and report Degraded;
//  5. the router's ServiceAccount, Role and RoleBinding (routerrbac.go);
//     per component: revision, observed pods, the planner's next step,
//     applied (router pods name the account);
//  6. delete pods of components the service no longer has; label running
//     pods OME's runtimes would not find;
//  7. Services (whole service, headless per multi-node group) and the HPA;
//  8. status, written only when it changed, with what the sync met that
//     a person must fix first (problems.go: NameConflict, FailedCreate,
//     FailedUpdate) and the progress deadline (progress.go). Pods the
//     service does not control at its names are given to the planner as
//     Foreign from step 2 on.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil // a malformed key never becomes valid
	}
	isvc, err := c.services.InferenceServices(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if isvc.DeletionTimestamp != nil {
		return 0, nil
	}
	if !c.exp.Satisfied(key) {
		return 0, nil // the informer events of our own writes requeue the service
	}
	isvc = isvc.DeepCopy()
	all, err := byservice.For[*corev1.Pod](c.podIndex, ns, name)
	if err != nil {
		return 0, err
	}
	pods, foreign := foreignPods(all, isvc) // only pods it controls are managed

	wait, nudged, requeue, err := c.waitForReferences(ctx, isvc)
	if err != nil {
		return 0, err
	}
	if nudged {
		return renudgeDelay, nil // look again: renudge if the webhook could not decide yet
	}
	if wait != nil {
		return requeue, c.writeStatus(ctx, isvc, nil, nil, nil, wait, pods, nil, nil)
	}
	dec, unres := c.resolve(isvc)
	if unres != nil {
		return requeue, c.writeStatus(ctx, isvc, nil, nil, dec, unres, pods, nil, nil) // requeue: renudge's next look
	}
	topo := merge.Topology(isvc, dec.runtime)
	ratioTopology(isvc, topo) // the decoder follows the engine
	if dec.router, err = c.syncRouterRBAC(ctx, isvc, topo); err != nil {
		return 0, err
	}
	probs := &syncProblems{}
	lookAgain := c.recallForeign(ctx, key, isvc, foreign, probs)
	reportForeign(probs, topo, foreign, all)
	results, gang, err := c.syncComponents(ctx, key, isvc, dec, topo, pods, foreign)
	var ce *composeError
	if errors.As(err, &ce) {
		// Retrying cannot help until the service, runtime or a profile
		// changes, and each change requeues the service.
		u := &unresolved{ReasonCannotCompose, fmt.Sprintf("InferenceService %s/%s: pods of %s cannot be composed from the pinned decision: %v", ns, name, ce.component, ce.err)}
		return 0, c.writeStatus(ctx, isvc, nil, nil, dec, u, pods, nil, nil)
	}
	if _, quota := quotaDenial(err); quota || (err != nil && results == nil) {
		if quota && results != nil {
			c.firstStatus(ctx, key, isvc, topo, results, dec, gang)
		}
		return 0, err // a quota's refusal: QuotaExceeded (quotaRetry)
	}
	return c.finishSync(ctx, key, isvc, dec, topo, results, gang, pods, probs, lookAgain, err)
}

// firstStatus writes the counts and conditions of a service that has
// none yet, when a quota refused its pods (status is never empty once the
// service is seen). QuotaExceeded is quotaRetry's; the rest waits for a
// sync that creates every pod, which clears QuotaExceeded.
func (c *Controller) firstStatus(ctx context.Context, key string, isvc *v1beta1.InferenceService, topo []merge.ComponentTopology,
	results []componentResult, dec *decision, gang *gangPlan) {
	if meta.FindStatusCondition(isvc.Status.Conditions, v1beta1.ConditionReady) != nil {
		return
	}
	if err := c.putStatus(ctx, isvc, desiredStatus(isvc, topo, results, dec, nil, gang, nil)); err != nil {
		c.log.Error("writing the first status failed", "inferenceservice", key, "err", err)
	}
}

// finishSync is the rest of a sync once the components' steps were
// applied (applyErr: the writes that failed): stray pods, labels, the
// Services and the HPA, then the status, which says what the sync met
// that a person must fix (Degraded NameConflict, FailedCreate,
// FailedUpdate; problems.go). A refused write is still an error, retried
// with the queue's backoff; a name conflict is looked at again every
// conflictRequeue.
func (c *Controller) finishSync(ctx context.Context, key string, isvc *v1beta1.InferenceService, dec *decision, topo []merge.ComponentTopology,
	results []componentResult, gang *gangPlan, pods []*corev1.Pod, probs *syncProblems, lookAgain bool, applyErr error) (time.Duration, error) {
	errs := []error{applyErr}
	errs = append(errs, c.deleteStrayPods(ctx, key, isvc, topo, pods))
	errs = append(errs, c.syncPodLabels(ctx, pods))
	errs = append(errs, c.syncServices(ctx, isvc, topo, results, pods))
	errs = append(errs, wrapWrite("writing", "HorizontalPodAutoscaler", isvc.Name, c.syncHPA(ctx, isvc, topo[0])))
	err := errors.Join(errs...)
	probs.addRefusals(err)
	c.objectConflicts(ctx, isvc, topo, results, pods, probs)
	err = errors.Join(err, c.writeStatus(ctx, isvc, topo, results, dec, nil, pods, gang, probs))
	requeue := routerRequeue(requeueOf(results), dec.router)
	if lookAgain || len(probs.conflicts) > 0 {
		requeue = minRequeue(requeue, conflictRequeue)
	}
	return requeue, err
}

// minRequeue is the sooner of two requeue delays; 0 is none.
func minRequeue(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// syncComponents plans one step per component, then applies them with
// the PodGroups around them (gang scheduling): PodGroups that ask less are
// written before the pods are deleted, those that ask more after the pods
// are created, and PodGroups no longer wanted are deleted last.
func (c *Controller) syncComponents(ctx context.Context, key string, isvc *v1beta1.InferenceService, dec *decision,
	topo []merge.ComponentTopology, pods []*corev1.Pod, foreign map[string][]plan.Pod) ([]componentResult, *gangPlan, error) {
	ps, err := c.planComponents(ctx, key, isvc, dec, topo, pods, foreign)
	if err != nil {
		return nil, nil, err
	}
	gang, err := c.planGang(ctx, isvc, dec, ps, pods)
	if err != nil {
		return nil, nil, err
	}
	if err := c.writeGangsBeforePods(ctx, isvc, gang); err != nil {
		return nil, nil, err
	}
	// Every component's step is applied even when a write of another
	// failed, so the status speaks for all of them; the PodGroups that
	// would ask for the pods created wait for a step that wrote them all.
	var results []componentResult
	var applyErrs []error
	for _, p := range ps {
		applyErrs = append(applyErrs, c.apply(ctx, key, isvc, p.topo, p.step, gang, dec.router.serviceAccount))
		results = append(results, componentResult{topo: p.topo, revision: p.revision, step: p.step})
	}
	if err := errors.Join(applyErrs...); err != nil {
		return results, gang, err
	}
	if err := c.writeGangsAfterPods(ctx, isvc, gang); err != nil {
		return nil, nil, err
	}
	return results, gang, c.deleteGangs(ctx, isvc, gang)
}

// planComponents runs the planner for every component.
func (c *Controller) planComponents(ctx context.Context, key string, isvc *v1beta1.InferenceService, dec *decision,
	topo []merge.ComponentTopology, pods []*corev1.Pod, foreign map[string][]plan.Pod) ([]planned, error) {
	mem := c.backoffFor(key)
	now := c.now()
	revs, err := componentRevisions(isvc, dec, topo)
	if err != nil {
		return nil, err
	}
	var ps []planned
	earlier := map[string]plan.Step{} // the steps planned before, by component
	for _, t := range topo {
		c.warnClamped(key, isvc, t)
		rev := revs[t.Component]
		spec := planSpec(isvc, t, rev, c.opts)
		spec.Pair = c.pairFor(isvc, topo, t, revs, pods, earlier) // plan rules 10 to 13
		observed := observe(pods, t.Component)
		hist := c.syncHistory(ctx, isvc, dec, t, rev, observed) // partitions hold (revisions.go)
		spec.StableRevision, spec.Recorded = hist.stable, hist.recorded
		if t.Component == v1beta1.ComponentRouter {
			c.markRouterAccount(isvc, dec, pods, observed)
		}
		// Pods it does not control hold their names (plan.Pod.Foreign).
		step := plan.Next(spec, append(slices.Clip(observed), foreign[t.Component]...), mem[t.Component], now)
		c.setBackoff(key, t.Component, step.Backoff)
		c.trackProgress(key, isvc, t.Component, rev, &step)
		earlier[t.Component] = step
		ps = append(ps, planned{topo: t, revision: rev, step: step, observed: observed})
	}
	return ps, nil
}

// composeError: the pinned inputs cannot be composed into a pod (a template
// key the service lacks, a missing profile). Nothing can be created until
// the service or runtime is fixed; it is reported, not retried hot.
type composeError struct {
	component string
	err       error
}

func (e *composeError) Error() string { return fmt.Sprintf("%s: %v", e.component, e.err) }

// planSpec maps the API onto the planner's inputs for one component.
func planSpec(isvc *v1beta1.InferenceService, t merge.ComponentTopology, revision string, o Options) plan.Spec {
	s := plan.Spec{
		Component: t.Component, Replicas: t.Replicas, Workers: t.Workers, MultiNode: t.MultiNode,
		Revision: revision, Recovery: v1beta1.RoleRecreate,
		BackoffBase: o.BackoffBase, BackoffMax: o.BackoffMax,
	}
	if p := isvc.Spec.RecoveryPolicy; p != nil {
		s.Recovery = *p
	}
	if g := isvc.Spec.RestartGracePeriodSeconds; g != nil {
		s.RestartGrace = time.Duration(*g) * time.Second
	}
	if rs := isvc.Spec.RolloutStrategy; rs != nil && rs.RollingUpdateConfiguration != nil {
		if p := rs.RollingUpdateConfiguration.Partition; p != nil {
			s.Partition = *p
		}
		if m := rs.RollingUpdateConfiguration.MaxUnavailable; m != nil {
			s.MaxUnavailable = *m
		}
	}
	return s
}

// observe converts the pods of one component for the planner.
func observe(pods []*corev1.Pod, component string) []plan.Pod {
	var out []plan.Pod
	for _, p := range pods {
		if componentOf(p) == component {
			// A malformed label makes the pod extra (deleted by the
			// planner); the planner's event names it.
			o, _ := plan.ObservePod(p)
			out = append(out, o)
		}
	}
	return out
}

func componentOf(p *corev1.Pod) string {
	if c := p.Labels[v1beta1.LabelComponent]; c != "" {
		return c
	}
	return v1beta1.ComponentEngine
}

// isOwnedPod: only pods this service controls are managed. A pod that
// merely carries the label (a user's Deployment pod, a leftover of an
// earlier service of the same name) is never touched.
func isOwnedPod(p *corev1.Pod, isvc *v1beta1.InferenceService) bool {
	return metav1.IsControlledBy(p, isvc)
}

func requeueOf(results []componentResult) time.Duration {
	var d time.Duration
	for _, r := range results {
		if r.step.Requeue > 0 && (d == 0 || r.step.Requeue < d) {
			d = r.step.Requeue
		}
	}
	return d
}

func (c *Controller) backoffFor(key string) backoffMemory {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.backoff[key]
	if m == nil {
		m = backoffMemory{}
		c.backoff[key] = m
	}
	return m
}

func (c *Controller) setBackoff(key, component string, b plan.Backoff) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.backoff[key] == nil {
		c.backoff[key] = backoffMemory{}
	}
	c.backoff[key][component] = b
}

func (c *Controller) forget(key string) {
	c.exp.Forget(key)
	c.mu.Lock()
	delete(c.backoff, key)
	delete(c.nudgedAt, key)
	delete(c.progress, key)
	delete(c.foreign, key)
	for _, comp := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder, v1beta1.ComponentRouter} {
		delete(c.clamped, key+"/"+comp)
	}
	c.mu.Unlock()
	c.m.forgetService(key)
}

// warnClamped says once, as an event, when a component's replicas lie
// outside [minReplicas, maxReplicas] and the reconciler runs the bound
// instead. The validating webhook denies such updates of the service, but
// `kubectl scale` and autoscalers write through the scale subresource,
// which admission sees as a Scale, not an InferenceService.
func (c *Controller) warnClamped(key string, isvc *v1beta1.InferenceService, t merge.ComponentTopology) {
	var asked *int32
	switch t.Component {
	case v1beta1.ComponentEngine:
		if isvc.Spec.Engine != nil {
			asked = isvc.Spec.Engine.Replicas
		}
	case v1beta1.ComponentDecoder:
		if isvc.Spec.Decoder != nil {
			asked = isvc.Spec.Decoder.Replicas
		}
	case v1beta1.ComponentRouter:
		if isvc.Spec.Router != nil {
			asked = isvc.Spec.Router.Replicas
		}
	}
	id := key + "/" + t.Component
	c.mu.Lock()
	defer c.mu.Unlock()
	if asked == nil || *asked == t.Replicas {
		delete(c.clamped, id)
		return
	}
	if c.clamped[id] == *asked {
		return
	}
	c.clamped[id] = *asked
	c.recorder.Eventf(isvc, corev1.EventTypeWarning, "ReplicasOutOfBounds",
		"%s: spec.%s.replicas %d is outside [%d, %s]; running %d group(s). Change minReplicas/maxReplicas to allow it",
		t.Component, t.Component, *asked, t.MinReplicas, boundText(t.MaxReplicas), t.Replicas)
}

func boundText(maxReplicas int32) string {
	if maxReplicas == 0 {
		return "unbounded"
	}
	return fmt.Sprint(maxReplicas)
}
