package plan

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Next decides the next step for one component: which pods to create and
// delete now, when to look again, what to tell the user, and the backoff
// memory to pass to the following call. It is a pure function of its
// arguments (rule 7); the numbered rules are in the package documentation.
func Next(spec Spec, pods []Pod, memory Backoff, now time.Time) Step {
	if pr := spec.Pair; pr != nil && pr.Router {
		return nextRouters(spec, pods, memory, now) // rule 12
	}
	p := newPlanner(spec, pods, memory, now) // rule 1: groups, extras; rule 6: recall the backoff memory
	p.deleteExtras()                         // rule 1
	p.scaleDown()                            // rule 4
	p.roll()                                 // rule 5
	p.replaceIncomplete()                    // rule 3
	p.recreateIncomplete()                   // rule 6 (ServingGroupRecreate)
	p.recoverFailures()                      // rule 6
	p.completeGroups()                       // rule 3
	p.scaleUp()                              // rule 2
	return p.finish()                        // rules 7 and 8
}

// planner carries one call of Next.
type planner struct {
	*view
	now       time.Time
	partition int32
	maxUnav   int32
	// allowance is how many Ready groups may still be deleted (rule 5).
	allowance int32
	backoff   Backoff
	step      Step
	// deleted pods (indices), groups deleted whole, groups with any delete,
	// groups with a create in this step.
	deleted map[int]bool
	gone    map[int32]bool
	touched map[int32]bool
	created map[int32]bool
	// pairs is the component's Range per pairing as the step goes (rule
	// 11); pairHeldSaid: the RatioHold event was written; routerFirstSaid:
	// the RouterFirst one (rule 13).
	pairs           map[string]Range
	pairHeldSaid    bool
	routerFirstSaid bool
}

func newPlanner(spec Spec, pods []Pod, memory Backoff, now time.Time) *planner {
	spec = withDefaults(spec)
	p := &planner{
		view: observe(spec, pods), now: now,
		deleted: map[int]bool{}, gone: map[int32]bool{}, touched: map[int32]bool{}, created: map[int32]bool{},
	}
	var err error
	if p.partition, err = Partition(spec); err != nil {
		p.event(EventWarning, ReasonInvalidRollout, "%s: %v", spec.Component, err)
	}
	if p.maxUnav, err = MaxUnavailable(spec); err != nil {
		p.event(EventWarning, ReasonInvalidRollout, "%s: %v", spec.Component, err)
	}
	p.allowance = allowance(spec.Replicas, p.ready, p.maxUnav)
	p.backoff = p.recall(memory)
	if spec.Pair != nil {
		p.pairs = p.pairRanges()
	}
	return p
}

// event appends an event.
func (p *planner) event(typ, reason, format string, args ...any) {
	p.step.Events = append(p.step.Events, Event{Type: typ, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// requeue asks to be called again after d at the latest; d <= 0 is
// ignored.
func (p *planner) requeue(d time.Duration) {
	if d > 0 && (p.step.Requeue == 0 || d < p.step.Requeue) {
		p.step.Requeue = d
	}
}

// deletePod deletes the live pod i unless it is terminating or already
// deleted in this step (no pod is deleted twice).
func (p *planner) deletePod(i int, reason string) {
	pod := p.pods[i]
	if pod.Terminating || pod.Foreign || p.deleted[i] {
		return
	}
	p.deleted[i] = true
	if pod.Group >= 0 {
		p.touched[pod.Group] = true
	}
	p.step.Delete = append(p.step.Delete, PodRef{
		Name: pod.Name, UID: pod.UID, Group: pod.Group, Role: pod.Role, Worker: pod.Worker, Reason: reason,
	})
}

// deleteGroup deletes every live pod of g, which is then gone for the
// rest of the step.
func (p *planner) deleteGroup(g *group, reason string) {
	for _, i := range g.members {
		p.deletePod(i, reason)
	}
	p.gone[g.ordinal] = true
}

// create adds a pod to create at revision rev ("": the current one),
// stamped with its group's recovery count.
func (p *planner) create(id ident, rev string) {
	p.created[id.group] = true
	var pairing string
	if p.spec.Pair != nil {
		pairing = p.spec.Pair.Pairing
	}
	p.step.Create = append(p.step.Create, PodID{
		Group: id.group, Role: id.role, Worker: id.worker, RecreateCount: p.backoff[id.group].Count, Revision: rev, Pairing: pairing,
	})
}

// liveGroups returns the live groups not deleted in this step, by ordinal.
func (p *planner) liveGroups() []*group {
	var out []*group
	for _, o := range p.ordinals {
		if g := p.groups[o]; g.live && !p.gone[o] {
			out = append(out, g)
		}
	}
	return out
}

// revisions names the revisions of a group's pods, for messages.
func (p *planner) revisions(g *group) string {
	var revs []string
	for _, i := range g.members {
		if r := p.pods[i].Revision; !slices.Contains(revs, r) {
			revs = append(revs, r)
		}
	}
	slices.Sort(revs)
	return fmt.Sprintf("%q", revs)
}

// finish sorts the actions (rule 7), computes the status (rule 8) and
// prunes the backoff memory.
func (p *planner) finish() Step {
	byIdent := func(a, b ident) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.role, b.role), cmp.Compare(a.worker, b.worker))
	}
	slices.SortFunc(p.step.Create, func(a, b PodID) int {
		return byIdent(ident{a.Group, a.Role, a.Worker}, ident{b.Group, b.Role, b.Worker})
	})
	slices.SortFunc(p.step.Delete, func(a, b PodRef) int {
		return cmp.Or(byIdent(ident{a.Group, a.Role, a.Worker}, ident{b.Group, b.Role, b.Worker}),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	for o := range p.backoff {
		if !hasKey(p.groups, o) && !p.created[o] {
			delete(p.backoff, o)
		}
	}
	p.step.Backoff = p.backoff
	p.step.Pairs = p.pairs
	p.step.Status = p.status()
	return p.step
}
