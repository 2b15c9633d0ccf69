package plan

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/berthdev/berth/api/v1beta1"
)

// Delay is the wait after the n-th recovery in a row of a group before the
// next one: 0 for n = 0, else min(base·2^(n-1), max) (RBG's formula).
func Delay(n int32, base, maxDelay time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	d := base
	for i := int32(1); i < n && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}

// recall prepares the backoff memory (rule 6): a group the memory does not
// know is seeded from its pods' RecreateCount (the memory was lost with a
// controller restart; the delay then counts from now), and a group Ready
// for at least BackoffMax starts counting again from 0.
func (p *planner) recall(memory Backoff) Backoff {
	out := maps.Clone(memory)
	if out == nil {
		out = Backoff{}
	}
	for _, o := range p.ordinals {
		g := p.groups[o]
		r, ok := out[o]
		if !ok && g.recreateCount > 0 {
			r, ok = Recovery{Count: g.recreateCount, Last: p.now}, true
		}
		if !ok {
			continue
		}
		if r.Count > 0 && g.ready && !g.readySince.IsZero() {
			if left := g.readySince.Add(p.spec.BackoffMax).Sub(p.now); left > 0 {
				p.requeue(left)
			} else {
				r.Count = 0
			}
		}
		out[o] = r
	}
	return out
}

// recoverFailures applies rule 6 to the groups no other rule touched in
// this step.
func (p *planner) recoverFailures() {
	for _, g := range p.liveGroups() {
		if p.touched[g.ordinal] {
			continue
		}
		due := p.dueFailures(g)
		if len(due) == 0 || !p.backoffAllows(g) {
			continue
		}
		if g.ready {
			// Only a restarted member that is Ready again makes a Ready
			// group due (ServingGroupRecreate): recreating it costs
			// availability, so it waits for the allowance (rule 5).
			if p.allowance <= 0 {
				continue
			}
			p.allowance--
		}
		r := p.backoff[g.ordinal]
		r.Count++
		r.Last = p.now
		p.backoff[g.ordinal] = r
		p.recoverGroup(g, due, r.Count)
	}
}

// recreateIncomplete applies rule 6 to missing pods: under
// ServingGroupRecreate a multi-pod group that lost a pod (deleted,
// evicted) is recreated whole, as LeaderWorkerSet's
// RecreateGroupOnPodRestart does, not completed pod by pod: its
// collective lost a member. It counts as a recovery; while the group's
// backoff runs it stays incomplete.
func (p *planner) recreateIncomplete() {
	if p.spec.Recovery != v1beta1.ServingGroupRecreate {
		return
	}
	for _, g := range p.liveGroups() {
		if p.touched[g.ordinal] || !g.shape.multi || !p.hasAbsent(g) {
			continue
		}
		p.touched[g.ordinal] = true // never completed pod by pod (rule 3)
		if !p.backoffAllows(g) {
			continue
		}
		r := p.backoff[g.ordinal]
		r.Count++
		r.Last = p.now
		p.backoff[g.ordinal] = r
		var names []string
		for _, id := range g.missing {
			names = append(names, describe(id))
		}
		p.deleteGroup(g, ReasonRecreatingGroup)
		p.event(EventWarning, ReasonRecreatingGroup, "%s: group %d: %s missing; recreating the group",
			p.spec.Component, g.ordinal, strings.Join(names, ", "))
		p.event(EventWarning, ReasonBackOff, "%s: group %d failed %s in a row; next recreate in %s",
			p.spec.Component, g.ordinal, plural(r.Count, "time"), Delay(r.Count, p.spec.BackoffBase, p.spec.BackoffMax))
	}
}

// actsOn reports whether the policy recovers this pod of g: a failing
// pod, or under None only a terminal one; under ServingGroupRecreate, in
// a multi-pod group, also a pod that restarted, even if Ready again
// (LeaderWorkerSet's RecreateGroupOnPodRestart: a restarted member broke
// the group's collective).
func (p *planner) actsOn(g *group, pod Pod) bool {
	switch p.spec.Recovery {
	case v1beta1.RecoveryNone:
		return terminal(pod)
	case v1beta1.ServingGroupRecreate:
		return failing(pod) || (g.shape.multi && g.shape.workers > 0 && pod.Restarts > 0)
	}
	return failing(pod)
}

// dueFailures returns g's expected pods the policy recovers whose grace
// has passed; for the others it asks to be called when it will have.
func (p *planner) dueFailures(g *group) []int {
	var due []int
	for _, i := range g.members {
		pod := p.pods[i]
		if !p.actsOn(g, pod) {
			continue
		}
		if !pod.FailingSince.IsZero() {
			if left := pod.FailingSince.Add(p.spec.RestartGrace).Sub(p.now); left > 0 {
				p.requeue(left)
				continue
			}
		}
		due = append(due, i)
	}
	return due
}

// backoffAllows reports whether g's delay since its last recovery has
// passed; if not, it asks to be called when it will have.
func (p *planner) backoffAllows(g *group) bool {
	r := p.backoff[g.ordinal]
	left := r.Last.Add(Delay(r.Count, p.spec.BackoffBase, p.spec.BackoffMax)).Sub(p.now)
	if r.Count > 0 && left > 0 {
		p.requeue(left)
		return false
	}
	return true
}

// recoverGroup deletes what the policy recreates for the n-th recovery in
// a row of g, and says so.
func (p *planner) recoverGroup(g *group, due []int, n int32) {
	first := p.pods[due[0]]
	why := fmt.Sprintf("pod %s %s", first.Name, symptom(first))
	switch p.spec.Recovery {
	case v1beta1.ServingGroupRecreate:
		p.deleteGroup(g, ReasonRecreatingGroup)
		p.event(EventWarning, ReasonRecreatingGroup, "%s: group %d: %s; recreating the group", p.spec.Component, g.ordinal, why)
	default:
		reason, verb := ReasonRecreatingPod, "recreating"
		if p.spec.Recovery == v1beta1.RecoveryNone {
			reason, verb = ReasonReplacingFailedPod, "replacing"
		}
		for _, i := range due {
			p.deletePod(i, reason)
		}
		p.event(EventWarning, reason, "%s: group %d: %s; %s %s", p.spec.Component, g.ordinal, why, verb, plural(int32(len(due)), "failed pod"))
	}
	p.event(EventWarning, ReasonBackOff, "%s: group %d failed %s in a row; next recreate in %s",
		p.spec.Component, g.ordinal, plural(n, "time"), Delay(n, p.spec.BackoffBase, p.spec.BackoffMax))
}

// symptom describes a failing pod: its phase or restarts, and the
// kubelet's reason.
func symptom(pod Pod) string {
	s := "is restarting (" + plural(pod.Restarts, "restart") + ")"
	if terminal(pod) {
		s = "is " + string(pod.Phase)
	}
	if pod.Reason != "" {
		s += ": " + pod.Reason
	}
	return s
}
