package servinggroups

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// A service whose pods a ResourceQuota refuses (the backstop of a namespace
// budget, or any other quota) says so in its status and is retried on a
// backoff of its own, not hot: the quota's usage only changes when pods go
// away, and a change that frees room wakes the blocked services at once.
const (
	// ConditionQuotaExceeded is True while a ResourceQuota refuses pods of
	// the service; it is removed by the next sync that creates everything.
	ConditionQuotaExceeded = "QuotaExceeded"
	// ReasonExceededQuota: the apiserver refused a pod with "exceeded
	// quota" (or "status unknown for quota", a quota just created).
	ReasonExceededQuota = "ExceededQuota"
)

// quotaDenial is the message of a pod creation a ResourceQuota refused,
// found in err (possibly joined with others); ok is false for any other
// error.
func quotaDenial(err error) (msg string, ok bool) {
	for _, e := range flatten(err) {
		var st apierrors.APIStatus
		if apierrors.IsForbidden(e) && errors.As(e, &st) {
			m := st.Status().Message
			if strings.Contains(m, "exceeded quota") || strings.Contains(m, "status unknown for quota") {
				return m, true
			}
		}
	}
	return "", false
}

// flatten lists the leaves of a tree of joined and wrapped errors.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	if u := errors.Unwrap(err); u != nil {
		if _, isJoin := u.(interface{ Unwrap() []error }); isJoin {
			return flatten(u)
		}
	}
	return []error{err}
}

// quotaName of a denial: "exceeded quota: <name>, requested: ..." or
// "status unknown for quota: <name>, resources: ...".
func deniedQuotaName(msg string) string {
	for _, marker := range []string{"exceeded quota: ", "status unknown for quota: "} {
		if _, rest, ok := strings.Cut(msg, marker); ok {
			name, _, _ := strings.Cut(rest, ",")
			return strings.TrimSpace(name)
		}
	}
	return ""
}

// quotaExceededCondition is the service's condition for a denial; policy
// names the ServingPolicy whose budget the quota keeps ("" for a quota
// that is not berth's).
func quotaExceededCondition(msg, policy string, generation int64) metav1.Condition {
	text := "pods cannot be created: " + msg
	if policy != "" {
		text += fmt.Sprintf(" (ResourceQuota %s keeps the namespace budget of ServingPolicy/%s)", deniedQuotaName(msg), policy)
	}
	text += "; retried with backoff, and at once when the quota frees room"
	return metav1.Condition{Type: ConditionQuotaExceeded, Status: metav1.ConditionTrue, Reason: ReasonExceededQuota,
		Message: text, ObservedGeneration: generation}
}

// quotaRetry handles a failed sync whose error includes a quota denial:
// the service gets the QuotaExceeded condition (through the one status
// write path, putStatus) and is requeued after its own backoff
// (PolicyOptions.QuotaRetryBase doubling up to QuotaRetryMax). It reports
// false, doing nothing, for any other error.
func (c *Controller) quotaRetry(ctx context.Context, key string, err error) bool {
	msg, ok := quotaDenial(err)
	if !ok {
		return false
	}
	delay := c.pol.nextQuotaDelay(key)
	c.log.Info("pods exceed a ResourceQuota; retrying later", "inferenceservice", key, "after", delay, "err", msg)
	c.queue.AddAfter(key, delay)
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	isvc, gerr := c.services.InferenceServices(ns).Get(name)
	if gerr != nil {
		return true
	}
	var policy string
	if q, qerr := c.pol.quotas.ResourceQuotas(ns).Get(deniedQuotaName(msg)); qerr == nil {
		policy = c.pol.verdicts.QuotaPolicy(q)
	}
	want := *isvc.Status.DeepCopy()
	cond := quotaExceededCondition(msg, policy, isvc.Generation)
	if old := meta.FindStatusCondition(want.Conditions, ConditionQuotaExceeded); old == nil || old.Status != cond.Status {
		c.recorder.Event(isvc, corev1.EventTypeWarning, ReasonExceededQuota, cond.Message)
	}
	meta.SetStatusCondition(&want.Conditions, cond)
	if perr := c.putStatus(ctx, isvc, want); perr != nil {
		c.log.Error("writing the QuotaExceeded condition failed", "inferenceservice", key, "err", perr)
	}
	return true
}

// nextQuotaDelay is the next retry delay of a service blocked by a quota.
func (p *policyController) nextQuotaDelay(key string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.quotaDelay[key] * 2
	if d == 0 {
		d = p.opts.QuotaRetryBase
	}
	d = min(d, p.opts.QuotaRetryMax)
	p.quotaDelay[key] = d
	return d
}

// forgetQuotaDelay: the service's pods were all created.
func (p *policyController) forgetQuotaDelay(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.quotaDelay, key)
}

// quotaFreed: some resource of the quota has more room (hard minus used)
// than before, or the quota is new or its status was just computed.
func quotaFreed(old, cur *corev1.ResourceQuota) bool {
	if old == nil {
		return true
	}
	for name, hard := range cur.Status.Hard {
		room := hard.DeepCopy()
		room.Sub(cur.Status.Used[name])
		oldHard, had := old.Status.Hard[name]
		if !had {
			return true
		}
		oldRoom := oldHard.DeepCopy()
		oldRoom.Sub(old.Status.Used[name])
		if room.Cmp(oldRoom) > 0 {
			return true
		}
	}
	return false
}

// wakeQuotaBlocked queues the services of a namespace that carry
// QuotaExceeded=True.
func (c *Controller) wakeQuotaBlocked(namespace string) {
	svcs, err := c.services.InferenceServices(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range svcs {
		if meta.IsStatusConditionTrue(s.Status.Conditions, ConditionQuotaExceeded) {
			c.queue.Add(s.Namespace + "/" + s.Name)
		}
	}
}

// quotaEvents wake the services a quota blocked when it frees room or
// goes away.
func (p *policyController) quotaEvents() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if q, ok := obj.(*corev1.ResourceQuota); ok {
				p.c.wakeQuotaBlocked(q.Namespace)
			}
		},
		UpdateFunc: func(o, n any) {
			oq, ok1 := o.(*corev1.ResourceQuota)
			nq, ok2 := n.(*corev1.ResourceQuota)
			if ok1 && ok2 && quotaFreed(oq, nq) {
				p.c.wakeQuotaBlocked(nq.Namespace)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if q, ok := obj.(*corev1.ResourceQuota); ok {
				p.c.wakeQuotaBlocked(q.Namespace)
			}
		},
	}
}

// clearQuotaExceeded: a status written by a sync that reached the end
// created every pod, so no quota blocks the service any more.
func (c *Controller) clearQuotaExceeded(isvc *v1beta1.InferenceService, st *v1beta1.InferenceServiceStatus) {
	c.pol.forgetQuotaDelay(isvc.Namespace + "/" + isvc.Name)
	meta.RemoveStatusCondition(&st.Conditions, ConditionQuotaExceeded)
}
