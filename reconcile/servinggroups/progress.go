package servinggroups

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/reconcile/plan"
)

// progressDeadline is spec.progressDeadlineSeconds, or the default.
func progressDeadline(isvc *v1beta1.InferenceService) time.Duration {
	if s := isvc.Spec.ProgressDeadlineSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return plan.DefaultProgressDeadline
}

// trackProgress applies the planner's rule 9 to one component's step: it
// sets the step's Status.Stalled, keeps the progress memory, and asks to
// be called again when the deadline would pass. A memory lost with a
// restart is seeded from the status the service shows: a component the
// service already said was stalled stays so until it makes progress.
func (c *Controller) trackProgress(key string, isvc *v1beta1.InferenceService, component, revision string, step *plan.Step) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mem, ok := c.progress[key][component]
	if !ok && saidStalled(isvc, component) {
		s := step.Status
		mem = plan.Progress{Known: true, Revision: revision, Desired: s.Desired, Outdated: s.Outdated,
			Available: s.Available, Excess: max(s.Replicas-s.Desired, 0)}
	}
	mem, st, requeue := plan.TrackProgress(mem, step.Status, revision, progressDeadline(isvc), c.now())
	step.Status = st
	if requeue > 0 && (step.Requeue == 0 || requeue < step.Requeue) {
		step.Requeue = requeue
	}
	if c.progress[key] == nil {
		c.progress[key] = map[string]plan.Progress{}
	}
	c.progress[key][component] = mem
}

// saidStalled: the service's Progressing condition, for its current
// generation, says the component exceeded its deadline.
func saidStalled(isvc *v1beta1.InferenceService, component string) bool {
	p := meta.FindStatusCondition(isvc.Status.Conditions, v1beta1.ConditionProgressing)
	return p != nil && p.Reason == plan.ReasonProgressDeadlineExceeded && p.ObservedGeneration == isvc.Generation &&
		strings.Contains(p.Message, component+": ")
}
