package plan

import "slices"

// status computes the component's Status from the observation (rule 8 for
// the scheduler's message).
func (p *planner) status() Status {
	s := Status{
		Component: p.spec.Component, Desired: p.spec.Replicas, MaxUnavailable: p.maxUnav,
		Replicas: p.live, Ready: p.ready,
		Unavailable: p.spec.Replicas - min(p.ready, p.spec.Replicas),
	}
	rolling := false
	for _, o := range p.ordinals {
		g := p.groups[o]
		if !g.live {
			continue
		}
		if g.outdated {
			s.Outdated++
			rolling = rolling || o >= p.partition
		} else {
			s.Updated++
			if g.ready && p.backoff[o].Count == 0 {
				s.Available++
			}
		}
		if f, ok := p.failure(g); ok {
			s.Failing = append(s.Failing, f)
		}
		if msg := p.stuck(g); msg != "" {
			if s.Stuck == 0 {
				s.StuckMessage = msg
			}
			s.Stuck++
		}
		if msg := p.unschedulable(g); msg != "" {
			if s.Unschedulable == 0 {
				s.UnschedulableMessage = msg
			}
			s.Unschedulable++
		}
	}
	s.Progressing = p.progress(s, rolling)
	return s
}

// failure reports g's first failing expected pod (rule 6's definition,
// whatever the policy).
func (p *planner) failure(g *group) (Failure, bool) {
	for _, i := range g.members {
		if pod := p.pods[i]; failing(pod) {
			return Failure{Group: g.ordinal, Pod: pod.Name, Reason: pod.Reason, Restarts: pod.Restarts,
				Recreates: p.backoff[g.ordinal].Count}, true
		}
	}
	return Failure{}, false
}

// stuck returns the first stuck container of g's live pods (Pod.Stuck).
func (p *planner) stuck(g *group) string {
	for _, i := range g.members {
		if msg := p.pods[i].Stuck; msg != "" && !p.pods[i].Terminating {
			return msg
		}
	}
	return ""
}

// unschedulable returns the scheduler's message for g's first
// unschedulable live pod (rule 8).
func (p *planner) unschedulable(g *group) string {
	for _, i := range g.members {
		if msg := p.pods[i].Unschedulable; msg != "" {
			return msg
		}
	}
	return ""
}

// progress names what the component is doing, "" when it is at rest.
func (p *planner) progress(s Status, rolling bool) string {
	busy := len(p.step.Create) > 0 || len(p.step.Delete) > 0 || s.Ready < s.Replicas ||
		slices.ContainsFunc(p.pods, func(pod Pod) bool { return pod.Terminating })
	switch {
	case rolling:
		return ProgressRollingUpdate
	case s.Replicas != s.Desired:
		return ProgressScaling
	case len(s.Failing) > 0:
		return ProgressRecovering
	case busy:
		return ProgressStarting
	}
	return ""
}
