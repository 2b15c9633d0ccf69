package servinggroups

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// apply sends one planner step: deletes first (with UID preconditions, so a
// pod recreated under the same name is never deleted by mistake), then
// creates of skeleton pods with deterministic names (AlreadyExists is
// success), then the step's events. Every write is recorded in the
// expectations before it is sent.
//
// routerSA is the ServiceAccount router pods run under ("" for none).
func (c *Controller) apply(ctx context.Context, key string, isvc *v1beta1.InferenceService, t merge.ComponentTopology, step plan.Step, gang *gangPlan, routerSA string) error {
	var errs []error
	for _, d := range step.Delete {
		errs = append(errs, c.deletePod(ctx, key, isvc.Namespace, d))
	}
	for _, p := range step.Create {
		errs = append(errs, c.createPod(ctx, key, isvc, t, p, gang, routerSA))
	}
	for _, e := range step.Events {
		c.recorder.Event(isvc, e.Type, e.Reason, e.Message)
	}
	return errors.Join(errs...)
}

// skeleton is the pod the reconciler creates: identity and group env
// (merge.GroupPod, which berth render calls too). The pod webhook
// completes it from the pinned decision.
func skeleton(isvc *v1beta1.InferenceService, t merge.ComponentTopology, p plan.PodID) *corev1.Pod {
	return merge.GroupPod(isvc, t, int(p.Group), p.Role, int(p.Worker), merge.GroupPodOptions{RecreateCount: p.RecreateCount})
}

func (c *Controller) createPod(ctx context.Context, key string, isvc *v1beta1.InferenceService, t merge.ComponentTopology, p plan.PodID, gang *gangPlan, routerSA string) error {
	pod := skeleton(isvc, t, p)
	if p.Revision != "" {
		// A protected group at its recorded revision (revisions.go).
		if r, ok := c.restoredPod(isvc, t, p); ok {
			pod = r
		}
	}
	// Outside every revision: the router's account and the gang mark
	// (merge.MarkPod).
	merge.MarkPod(pod, t.Component, merge.GroupPodOptions{RouterServiceAccount: routerSA, Gang: gang.MarkFor(isvc, t.Component, p.Group), Pairing: p.Pairing})
	c.exp.ExpectCreate(key, pod.Name)
	c.m.write("create", "pods")
	_, err := c.kube.CoreV1().Pods(isvc.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsAlreadyExists(err):
		c.exp.Created(key, pod.Name) // deterministic names: it is there already, ours or not
		return c.podNameConflict(ctx, key, isvc, t, p, pod.Name)
	default:
		c.exp.Created(key, pod.Name) // will never be observed
		if _, quota := quotaDenial(err); quota {
			// Retried on the quota's own backoff (quotaexceeded.go); each
			// refused attempt is an event, as before.
			c.recorder.Eventf(isvc, corev1.EventTypeWarning, "FailedCreate", "creating pod %s: %v", pod.Name, err)
		}
		// Any other refusal reaches the service's status (Degraded
		// FailedCreate, one event per change of reason: problems.go), not
		// an event per attempt.
		return wrapWrite("creating", "pod", pod.Name, err)
	}
}

func (c *Controller) deletePod(ctx context.Context, key, namespace string, d plan.PodRef) error {
	c.exp.ExpectDelete(key, d.UID)
	c.m.write("delete", "pods")
	uid := k8stypes.UID(d.UID)
	err := c.kube.CoreV1().Pods(namespace).Delete(ctx, d.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		c.exp.Deleted(key, d.UID) // gone already, or another pod holds the name now
		return nil
	default:
		c.exp.Deleted(key, d.UID)
		return wrapWrite("deleting", "pod", d.Name, err)
	}
}
