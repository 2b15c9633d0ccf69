package servinggroups

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// Reasons of Degraded (and of Ready, while the service is not Ready) for
// what a sync met that only a person can fix.
const (
	// ReasonNameConflict: a pod, Service or HPA of a name the service uses
	// exists and the service does not control it.
	ReasonNameConflict = "NameConflict"
	// ReasonFailedCreate: the apiserver refused to create an object.
	ReasonFailedCreate = "FailedCreate"
	// ReasonFailedUpdate: the apiserver refused to update or delete one.
	ReasonFailedUpdate = "FailedUpdate"
)

// conflictRequeue is how often a service in a name conflict looks again:
// an object without berth's label is seen by no informer.
const conflictRequeue = 30 * time.Second

// writeError is a write of one object that failed.
type writeError struct {
	verb, kind, name string
	err              error
}

func (e *writeError) Error() string {
	return fmt.Sprintf("%s %s %s: %v", e.verb, e.kind, e.name, e.err)
}
func (e *writeError) Unwrap() error { return e.err }

// wrapWrite wraps a failed write of kind/name; nil stays nil.
func wrapWrite(verb, kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return &writeError{verb: verb, kind: kind, name: name, err: err}
}

// syncProblems is what one sync met that the user must see: objects of
// its names it does not control, and writes the apiserver refused.
type syncProblems struct {
	conflicts []string
	refused   []*writeError
}

func (p *syncProblems) conflict(kind, name string, owner *metav1.OwnerReference) {
	who := "no controller"
	if owner != nil {
		who = "controlled by " + owner.Kind + " " + owner.Name
	}
	p.conflicts = append(p.conflicts, fmt.Sprintf("%s %s (%s)", kind, name, who))
}

// addRefusals records the writes in err the apiserver refused for a
// reason retrying alone does not fix (a 4xx other than not found,
// conflict, already exists and too many requests; a quota denial has its
// own condition, QuotaExceeded).
func (p *syncProblems) addRefusals(err error) {
	for _, e := range flatten(err) {
		var we *writeError
		if errors.As(e, &we) && refusal(we.err) {
			p.refused = append(p.refused, we)
		}
	}
}

func refusal(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	if _, quota := quotaDenial(err); quota {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500 && code != 404 && code != 409 && code != 429
}

// condition is the Degraded condition the problems call for, if any:
// NameConflict first (nothing can be created in its place), then
// FailedCreate, then FailedUpdate; the message lists them all.
func (p *syncProblems) condition() (reason, message string, ok bool) {
	if p == nil || len(p.conflicts)+len(p.refused) == 0 {
		return "", "", false
	}
	var parts []string
	if len(p.conflicts) > 0 {
		reason = ReasonNameConflict
		cs := slices.Clone(p.conflicts)
		slices.Sort(cs)
		parts = append(parts, "not controlled by this InferenceService, so never adopted or counted: "+strings.Join(cs, ", ")+
			"; delete or rename them (an object left by `kubectl delete --cascade=orphan` belongs to nobody)")
	}
	for _, w := range p.refused {
		r := ReasonFailedUpdate
		if w.verb == "creating" {
			r = ReasonFailedCreate
		}
		if reason == "" || reason == ReasonFailedUpdate && r == ReasonFailedCreate {
			reason = r
		}
		parts = append(parts, "the apiserver refused "+w.Error())
	}
	return reason, strings.Join(parts, "; "), true
}

// foreignPods splits the labelled pods of a service into those it
// controls and those it does not but that sit at a name it uses for the
// identity their labels give (an orphan of `kubectl delete
// --cascade=orphan`, someone else's): the planner sees these as Foreign
// and creates nothing in their place. Other labelled pods are ignored.
func foreignPods(all []*corev1.Pod, isvc *v1beta1.InferenceService) (owned []*corev1.Pod, foreign map[string][]plan.Pod) {
	foreign = map[string][]plan.Pod{}
	for _, p := range all {
		if metav1.IsControlledBy(p, isvc) {
			owned = append(owned, p)
			continue
		}
		o, err := plan.ObservePod(p)
		if err != nil || o.Group < 0 {
			continue
		}
		g := merge.GroupIdentity{GroupIndex: int(o.Group), Role: o.Role, WorkerIndex: int(o.Worker)}
		if p.Name != merge.PodName(isvc.Name, componentOf(p), g) {
			continue
		}
		o.Foreign = true
		foreign[componentOf(p)] = append(foreign[componentOf(p)], o)
	}
	return owned, foreign
}

// reportForeign records, as conflicts, the foreign pods in the desired
// groups of each component.
func reportForeign(p *syncProblems, topo []merge.ComponentTopology, foreign map[string][]plan.Pod, all []*corev1.Pod) {
	for _, t := range topo {
		for _, f := range foreign[t.Component] {
			if f.Group >= t.Replicas {
				continue
			}
			for _, pod := range all {
				if pod.Name == f.Name {
					p.conflict("pod", pod.Name, metav1.GetControllerOf(pod))
				}
			}
		}
	}
}

// podNameConflict checks, after a create of name was refused as
// AlreadyExists, whose pod holds the name: nil when it is the service's
// (the cache is behind), else the conflict, which the next syncs see as a
// Foreign pod until it is gone (rememberForeign).
func (c *Controller) podNameConflict(ctx context.Context, key string, isvc *v1beta1.InferenceService, t merge.ComponentTopology, id plan.PodID, name string) error {
	have, err := c.kube.CoreV1().Pods(isvc.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // gone since: the next sync creates it
	case err != nil:
		return fmt.Errorf("read pod %s/%s after AlreadyExists: %w", isvc.Namespace, name, err)
	case metav1.IsControlledBy(have, isvc):
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.foreign[key] == nil {
		c.foreign[key] = map[string]foreignPod{}
	}
	c.foreign[key][name] = foreignPod{component: t.Component, pod: plan.Pod{Name: name, UID: string(have.UID), Group: id.Group,
		Role: id.Role, Worker: id.Worker, Foreign: true}, owner: metav1.GetControllerOf(have), checked: c.now()}
	return nil
}

// foreignPod is a pod without berth's label that holds a name the service
// uses, found by a create refused as AlreadyExists.
type foreignPod struct {
	component string
	pod       plan.Pod
	owner     *metav1.OwnerReference
	// checked is when it was last seen; it is read again only
	// conflictRequeue later (the planner waits on its slot every few
	// seconds).
	checked time.Time
}

// recallForeign adds the remembered unlabelled foreign pods that still
// exist (one GET each, at most every conflictRequeue) to foreign and to
// the conflicts, and forgets the others. It reports whether any remain,
// so the service looks again.
func (c *Controller) recallForeign(ctx context.Context, key string, isvc *v1beta1.InferenceService, foreign map[string][]plan.Pod, probs *syncProblems) bool {
	c.mu.Lock()
	remembered := c.foreign[key]
	c.mu.Unlock()
	var keep bool
	for name, f := range remembered {
		if c.now().Sub(f.checked) < conflictRequeue {
			foreign[f.component] = append(foreign[f.component], f.pod)
			probs.conflict("pod", name, f.owner)
			keep = true
			continue
		}
		have, err := c.kube.CoreV1().Pods(isvc.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && string(have.UID) == f.pod.UID && !metav1.IsControlledBy(have, isvc) {
			foreign[f.component] = append(foreign[f.component], f.pod)
			probs.conflict("pod", name, f.owner)
			keep = true
			f.checked = c.now()
			c.mu.Lock()
			c.foreign[key][name] = f
			c.mu.Unlock()
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			keep = true // cannot tell: keep it, look again
			continue
		}
		c.mu.Lock()
		delete(c.foreign[key], name)
		c.mu.Unlock()
	}
	return keep
}

// objectConflicts records the Services and the HPA of names the service
// uses that it does not control (ensureService and syncHPA leave them
// alone). Labelled ones are in the caches (an orphaned service leaves
// those); a name the cache lacks is read once from the apiserver, since an
// unlabelled object of that name is seen by no informer and makes a create
// fail as AlreadyExists.
func (c *Controller) objectConflicts(ctx context.Context, isvc *v1beta1.InferenceService, topo []merge.ComponentTopology,
	results []componentResult, pods []*corev1.Pod, probs *syncProblems) {
	names := []string{isvc.Name}
	for _, r := range results {
		if r.topo.MultiNode {
			for _, g := range liveGroups(pods, r) {
				names = append(names, merge.GroupServiceName(isvc.Name, r.topo.Component, int(g)))
			}
		}
	}
	for _, n := range names {
		s, err := c.svcs.Services(isvc.Namespace).Get(n)
		if apierrors.IsNotFound(err) {
			s, err = c.kube.CoreV1().Services(isvc.Namespace).Get(ctx, n, metav1.GetOptions{})
		}
		if err == nil && !metav1.IsControlledBy(s, isvc) {
			probs.conflict("Service", n, metav1.GetControllerOf(s))
		}
	}
	if desiredHPA(isvc, topo[0]) == nil {
		return
	}
	h, err := c.hpas.HorizontalPodAutoscalers(isvc.Namespace).Get(isvc.Name)
	if apierrors.IsNotFound(err) {
		h, err = c.kube.AutoscalingV2().HorizontalPodAutoscalers(isvc.Namespace).Get(ctx, isvc.Name, metav1.GetOptions{})
	}
	if err == nil && !metav1.IsControlledBy(h, isvc) {
		probs.conflict("HorizontalPodAutoscaler", isvc.Name, metav1.GetControllerOf(h))
	}
}
