package servinggroups

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/reconcile/plan"
)

// desiredStatus computes the service's status from the components' steps.
// With unres set, the decision does not resolve: the Resolved and Degraded
// conditions say why, and the group counts keep their last values (pods are
// left running).
func desiredStatus(isvc *v1beta1.InferenceService, topo []merge.ComponentTopology, results []componentResult, dec *decision,
	unres *unresolved, gang *gangPlan, probs *syncProblems) v1beta1.InferenceServiceStatus {
	st := *isvc.Status.DeepCopy()
	st.ObservedGeneration = isvc.Generation
	p, err := pin.Read(isvc)
	if err == nil && pin.Pinned(isvc) {
		st.Runtime = &v1beta1.ResolvedRef{Kind: p.RuntimeKind, Name: p.RuntimeName}
	}
	st.AcceleratorClass = p.AcceleratorClass

	var statuses []plan.Status
	if unres == nil {
		st.Components = map[string]v1beta1.ComponentStatus{}
		for _, r := range results {
			s := r.step.Status
			statuses = append(statuses, s)
			st.Components[r.topo.Component] = v1beta1.ComponentStatus{Replicas: s.Replicas, ReadyReplicas: s.Ready,
				UpdatedReplicas: s.Updated, Revision: revisionOf(r), Workers: r.topo.Workers}
		}
		engine := results[0]
		st.Replicas, st.ReadyReplicas = engine.step.Status.Replicas, engine.step.Status.Ready
		st.Selector = labels.SelectorFromSet(frontSelector(isvc, engine.topo)).String()
		st.Ready = plan.ReadyColumn(statuses)
		st.URL = serviceURL(isvc)
	}
	conds := plan.Conditions(statuses, pin.Pinned(isvc), "")
	if unres != nil {
		conds = plan.Conditions(nil, false, unres.message)
	}
	for _, c := range conds {
		mc := metav1.Condition{Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message, ObservedGeneration: isvc.Generation}
		switch {
		case unres != nil && waitingReason(unres.reason) && c.Type == v1beta1.ConditionDegraded:
			// Waiting for a model's metadata, or for the model or runtime
			// it names to be created, is expected, not degraded.
			mc.Status, mc.Reason, mc.Message = metav1.ConditionFalse, unres.reason, waitingNote(unres.reason)
		case unres != nil && (c.Type == v1beta1.ConditionResolved || c.Type == v1beta1.ConditionDegraded ||
			c.Type == v1beta1.ConditionReady && waitingReason(unres.reason)):
			mc.Reason = unres.reason // the precise reason: which pin, and how
			if c.Type == v1beta1.ConditionDegraded {
				mc.Reason = degradedReason(unres.reason)
			}
		case c.Type == v1beta1.ConditionResolved && dec != nil:
			mc.Message = resolvedMessage(isvc, dec)
		case c.Type == v1beta1.ConditionDegraded && dec != nil && dec.disabled != "" && c.Status == plan.ConditionFalse:
			mc.Status, mc.Reason, mc.Message = metav1.ConditionTrue, ReasonRuntimeDisabled, dec.disabled
		case c.Type == v1beta1.ConditionDegraded && dec != nil && dec.router.conflict != "" && c.Status == plan.ConditionFalse:
			mc.Status, mc.Reason, mc.Message = metav1.ConditionTrue, ReasonRouterRBACConflict, dec.router.conflict
		}
		meta.SetStatusCondition(&st.Conditions, mc)
	}
	if unres == nil {
		setProblems(&st, probs, isvc.Generation)
	}
	if unres == nil && results != nil {
		setGangCondition(&st, gang) // else the last word on the gang stands
		setPairings(&st, isvc, results)
	}
	return st
}

func revisionOf(r componentResult) string { return r.revision }

// setProblems lays what the sync met that a person must fix (a name
// conflict, a refused write) over the conditions: Degraded=True with its
// reason and the apiserver's words, ahead of what the groups say; Ready,
// when False, takes the same reason, so `kubectl get isvc` shows it.
func setProblems(st *v1beta1.InferenceServiceStatus, probs *syncProblems, generation int64) {
	reason, msg, ok := probs.condition()
	if !ok {
		return
	}
	deg := metav1.Condition{Type: v1beta1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: generation}
	if old := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionDegraded); old != nil && old.Status == metav1.ConditionTrue && old.Message != "" {
		deg.Message += "; " + old.Message
	}
	meta.SetStatusCondition(&st.Conditions, deg)
	if r := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionReady); r != nil && r.Status != metav1.ConditionTrue {
		ready := *r
		ready.Reason, ready.Message = reason, r.Message+"; "+msg
		meta.SetStatusCondition(&st.Conditions, ready)
	}
}

// waitingNote is the Degraded=False message of a waiting service.
func waitingNote(reason string) string {
	switch reason {
	case ReasonModelNotFound:
		return "nothing is wrong yet: the service waits for the model it names to be created"
	case ReasonRuntimeNotFound:
		return "nothing is wrong yet: the service waits for the runtime it names to be created"
	}
	return "nothing is wrong: the service waits for its model's metadata"
}

// resolvedMessage quotes the headline of the webhook's decision (what won
// and why it could) and how many candidates ranked lower; the full ranking
// stays in the ome.io/decision annotation.
func resolvedMessage(isvc *v1beta1.InferenceService, dec *decision) string {
	if text := isvc.Annotations[v1beta1.AnnotationDecision]; text != "" {
		head, rest, _ := strings.Cut(text, "\n")
		if n := strings.Count(rest, "\n") + 1; rest != "" {
			return fmt.Sprintf("%s; %d candidate line(s) ranked lower, in annotation %s", head, n, v1beta1.AnnotationDecision)
		}
		return head
	}
	msg := "pinned to " + dec.pin.Runtime()
	if dec.class != nil {
		msg += " on AcceleratorClass " + dec.class.Name
	}
	return msg
}

// writeStatus updates the status subresource when it changed, and records
// an event when the Ready or Degraded condition changes its reason, so the
// scheduler's or kubelet's word reaches `kubectl describe` once, not on
// every sync.
func (c *Controller) writeStatus(ctx context.Context, isvc *v1beta1.InferenceService, topo []merge.ComponentTopology,
	results []componentResult, dec *decision, unres *unresolved, pods []*corev1.Pod, gang *gangPlan, probs *syncProblems) error {
	want := desiredStatus(isvc, topo, results, dec, unres, gang, probs)
	c.recordMetrics(isvc, results)
	c.servingPolicyConditions(isvc, &want)
	return c.putStatus(ctx, isvc, want)
}

// putStatus writes want as the service's status when it differs from the
// current one: the one status write path of a service (writeStatus, and
// quotaRetry's QuotaExceeded condition).
func (c *Controller) putStatus(ctx context.Context, isvc *v1beta1.InferenceService, want v1beta1.InferenceServiceStatus) error {
	if apiequality.Semantic.DeepEqual(isvc.Status, want) {
		return nil
	}
	upd := isvc.DeepCopy()
	upd.Status = want
	c.m.write("update", "inferenceservices/status")
	_, err := c.berth.OmeV1beta1().InferenceServices(isvc.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	switch {
	case err == nil:
		// Only a written change is said: a sync on a stale cache (its
		// write conflicts) must not say the same change again.
		c.conditionEvents(isvc, isvc.Status.Conditions, want.Conditions)
		return nil
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil // a newer version is queued already
	}
	return err
}

// conditionEvents emits one event when a condition changes its status or
// reason: a Warning for what needs a person (pods that cannot schedule or
// keep failing, a pin that no longer resolves, Degraded), a Normal one when
// the service becomes Ready. Counts changing during a roll make no events.
func (c *Controller) conditionEvents(isvc *v1beta1.InferenceService, old, cur []metav1.Condition) {
	said := map[string]bool{} // one event per reason: Ready and Degraded often share one
	for _, n := range cur {
		o := meta.FindStatusCondition(old, n.Type)
		if o != nil && o.Status == n.Status && o.Reason == n.Reason || said[n.Reason] {
			continue
		}
		if typ := conditionEventType(n, o); typ != "" {
			said[n.Reason] = true // only once said: a condition that makes no event does not hush another
			c.recorder.Event(isvc, typ, n.Reason, n.Message)
		}
	}
}

// conditionEventType is the type of the event a changed condition makes,
// "" for none.
func conditionEventType(n metav1.Condition, o *metav1.Condition) string {
	switch {
	case waitingReason(n.Reason):
		if n.Type == v1beta1.ConditionResolved {
			return corev1.EventTypeNormal
		}
	case n.Type == v1beta1.ConditionDegraded && n.Status == metav1.ConditionTrue,
		n.Type == v1beta1.ConditionResolved && n.Status == metav1.ConditionFalse,
		n.Type == v1beta1.ConditionReady && (n.Reason == plan.ReasonUnschedulable || n.Reason == plan.ReasonPodsFailing),
		n.Reason == plan.ReasonProgressDeadlineExceeded:
		return corev1.EventTypeWarning
	case n.Type == v1beta1.ConditionReady && n.Status == metav1.ConditionTrue && (o == nil || o.Status != n.Status):
		return corev1.EventTypeNormal
	}
	return ""
}

// recordMetrics keeps the service's group counts for /metrics.
func (c *Controller) recordMetrics(isvc *v1beta1.InferenceService, results []componentResult) {
	states := map[string]int{}
	rolling := false
	for _, r := range results {
		s := r.step.Status
		states["ready"] += int(s.Ready)
		states["notready"] += int(s.Replicas - s.Ready)
		states["outdated"] += int(s.Outdated)
		rolling = rolling || s.Progressing == plan.ProgressRollingUpdate
	}
	c.m.setService(isvc.Namespace+"/"+isvc.Name, states, rolling)
}
