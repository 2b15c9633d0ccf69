package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/berthdev/berth/api/v1beta1"
)

// Condition is a service condition as plain values; the caller copies it
// into metav1.Condition with its generation and transition time.
type Condition struct {
	Type, Status, Reason, Message string
}

// Condition statuses.
const (
	ConditionTrue  = "True"
	ConditionFalse = "False"
)

// Reasons of the conditions Conditions returns (and the Progress* ones).
const (
	ReasonResolved        = "Resolved"
	ReasonNotResolved     = "NotResolved"
	ReasonPinUnresolvable = "PinUnresolvable"
	ReasonAllGroupsReady  = "AllGroupsReady"
	ReasonGroupsNotReady  = "GroupsNotReady"
	ReasonUnschedulable   = "Unschedulable"
	ReasonPodsFailing     = "PodsFailing"
	// ReasonContainersStuck: a container waits for something waiting will
	// not bring: an image the node cannot get, a bad configuration.
	ReasonContainersStuck = "ContainersStuck"
	ReasonAsExpected      = "AsExpected"
)

// Conditions turns the Status of every component of a service, whether
// its runtime is pinned (resolved) and why a pin no longer resolves
// (resolveError, "" when it does) into the conditions Resolved, Ready,
// Progressing and Degraded, in that order. Components are reported engine,
// decoder, router, then others by name.
func Conditions(components []Status, resolved bool, resolveError string) []Condition {
	cs := sortComponents(components)
	return []Condition{
		resolvedCondition(resolved, resolveError),
		readyCondition(cs, resolved, resolveError),
		progressingCondition(cs),
		degradedCondition(cs, resolveError),
	}
}

// ReadyColumn is "<ready>/<desired>" groups over all components, for
// kubectl get; Ready groups beyond the desired count are not counted.
func ReadyColumn(components []Status) string {
	var ready, desired int32
	for _, s := range components {
		ready += min(s.Ready, s.Desired)
		desired += s.Desired
	}
	return fmt.Sprintf("%d/%d", ready, desired)
}

// sortComponents orders components engine, decoder, router, then by name.
func sortComponents(components []Status) []Status {
	rank := func(c string) int {
		if i := slices.Index([]string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder, v1beta1.ComponentRouter}, c); i >= 0 {
			return i
		}
		return 3
	}
	out := slices.Clone(components)
	slices.SortStableFunc(out, func(a, b Status) int {
		return cmp.Or(cmp.Compare(rank(a.Component), rank(b.Component)), cmp.Compare(a.Component, b.Component))
	})
	return out
}

func resolvedCondition(resolved bool, resolveError string) Condition {
	c := Condition{Type: v1beta1.ConditionResolved, Status: ConditionTrue, Reason: ReasonResolved, Message: "runtime pinned"}
	switch {
	case resolveError != "":
		c.Status, c.Reason, c.Message = ConditionFalse, ReasonPinUnresolvable, resolveError
	case !resolved:
		c.Status, c.Reason, c.Message = ConditionFalse, ReasonNotResolved, "no runtime is pinned yet"
	}
	return c
}

// readyReason is a component's Ready reason: AllGroupsReady, or during a
// roll within maxUnavailable RollingUpdate (both Ready: the component
// serves), else Unschedulable, ContainersStuck, PodsFailing or
// GroupsNotReady. Ready means serving: a component with desired groups and
// none Ready is never Ready, whatever maxUnavailable allows; and a roll
// that made no progress for its deadline (Stalled) no longer borrows
// maxUnavailable: ProgressDeadlineExceeded.
func readyReason(s Status) string {
	switch {
	case s.Unavailable == 0:
		return ReasonAllGroupsReady
	case s.Progressing == ProgressRollingUpdate && s.Unavailable <= s.MaxUnavailable && s.Ready > 0 && s.Stalled:
		return ReasonProgressDeadlineExceeded
	case s.Progressing == ProgressRollingUpdate && s.Unavailable <= s.MaxUnavailable && s.Ready > 0:
		return ProgressRollingUpdate
	case s.Unschedulable > 0:
		return ReasonUnschedulable
	case s.Stuck > 0:
		return ReasonContainersStuck
	case len(s.Failing) > 0:
		return ReasonPodsFailing
	}
	return ReasonGroupsNotReady
}

// readyRank orders Ready reasons, worst first; the service takes the worst
// of its components'.
var readyRank = []string{ReasonUnschedulable, ReasonContainersStuck, ReasonPodsFailing, ReasonProgressDeadlineExceeded,
	ReasonGroupsNotReady, ProgressRollingUpdate, ReasonAllGroupsReady}

func readyCondition(cs []Status, resolved bool, resolveError string) Condition {
	c := Condition{Type: v1beta1.ConditionReady, Status: ConditionFalse, Reason: ReasonNotResolved, Message: "no runtime is pinned yet"}
	switch {
	case resolveError != "" && !resolved:
		c.Reason, c.Message = ReasonPinUnresolvable, resolveError
	case resolved:
		var parts []string
		c.Reason = ReasonAllGroupsReady
		for _, s := range cs {
			parts = append(parts, summary(s))
			if r := readyReason(s); slices.Index(readyRank, r) < slices.Index(readyRank, c.Reason) {
				c.Reason = r
			}
		}
		c.Message = strings.Join(parts, "; ")
		if c.Reason == ReasonAllGroupsReady || c.Reason == ProgressRollingUpdate {
			c.Status = ConditionTrue
		}
	}
	return c
}

// summary is one component's part of the Ready message.
func summary(s Status) string {
	out := fmt.Sprintf("%s: %d/%d groups ready", s.Component, min(s.Ready, s.Desired), s.Desired)
	if s.Unschedulable > 0 {
		out += fmt.Sprintf("; %d unschedulable: %s", s.Unschedulable, s.UnschedulableMessage)
	}
	if s.Stuck > 0 {
		out += fmt.Sprintf("; %d stuck: %s", s.Stuck, s.StuckMessage)
	}
	if len(s.Failing) > 0 {
		out += fmt.Sprintf("; %d failing: %s", len(s.Failing), failureText(s.Failing[0]))
	}
	return out
}

// failureText describes a failing group.
func failureText(f Failure) string {
	out := fmt.Sprintf("group %d pod %s", f.Group, f.Pod)
	if f.Reason != "" {
		out += " " + f.Reason
	}
	if f.Restarts > 0 {
		out += ", " + plural(f.Restarts, "restart")
	}
	if f.Recreates > 0 {
		out += ", recreated " + plural(f.Recreates, "time") + " in a row"
	}
	return out
}

// progressRank orders Progress* reasons, most telling first; the service
// takes the first of its components'.
var progressRank = []string{ProgressRollingUpdate, ProgressScaling, ProgressRecovering, ProgressStarting}

func progressingCondition(cs []Status) Condition {
	c := Condition{Type: v1beta1.ConditionProgressing, Status: ConditionFalse, Reason: ReasonAllGroupsReady}
	rank := func(r string) int {
		if i := slices.Index(progressRank, r); i >= 0 {
			return i
		}
		return len(progressRank)
	}
	var parts, stalled []string
	for _, s := range cs {
		if s.Stalled {
			stalled = append(stalled, stalledText(s))
		}
		if s.Progressing == "" {
			continue
		}
		if c.Status == ConditionFalse || rank(s.Progressing) < rank(c.Reason) {
			c.Status, c.Reason = ConditionTrue, s.Progressing
		}
		parts = append(parts, progressText(s))
	}
	c.Message = strings.Join(parts, "; ")
	if len(stalled) > 0 {
		// Rule 9: what does not move for its deadline is not progressing.
		c.Status, c.Reason, c.Message = ConditionFalse, ReasonProgressDeadlineExceeded, strings.Join(stalled, "; ")
	}
	return c
}

// progressText is one component's part of the Progressing message.
func progressText(s Status) string {
	switch s.Progressing {
	case ProgressRollingUpdate:
		return fmt.Sprintf("%s: rolling update, %d/%d groups updated, %d/%d ready", s.Component, s.Updated, s.Desired, min(s.Ready, s.Desired), s.Desired)
	case ProgressScaling:
		return fmt.Sprintf("%s: scaling from %d to %d groups, %d ready", s.Component, s.Replicas, s.Desired, s.Ready)
	case ProgressRecovering:
		return fmt.Sprintf("%s: recovering %s", s.Component, plural(int32(len(s.Failing)), "failing group"))
	default:
		return fmt.Sprintf("%s: %d/%d groups ready", s.Component, min(s.Ready, s.Desired), s.Desired)
	}
}

func degradedCondition(cs []Status, resolveError string) Condition {
	c := Condition{Type: v1beta1.ConditionDegraded, Status: ConditionFalse, Reason: ReasonAsExpected}
	var parts []string
	if resolveError != "" {
		c.Status, c.Reason = ConditionTrue, ReasonPinUnresolvable
		parts = append(parts, resolveError)
	}
	for _, s := range cs {
		if len(s.Failing) > 0 {
			if c.Status == ConditionFalse || c.Reason == ReasonUnschedulable {
				c.Status, c.Reason = ConditionTrue, ReasonPodsFailing
			}
			var fs []string
			for _, f := range s.Failing {
				fs = append(fs, failureText(f))
			}
			parts = append(parts, fmt.Sprintf("%s: %s failing: %s", s.Component, plural(int32(len(s.Failing)), "group"), strings.Join(fs, "; ")))
		}
		if s.Stuck > 0 {
			if c.Status == ConditionFalse || c.Reason == ReasonUnschedulable {
				c.Status, c.Reason = ConditionTrue, ReasonContainersStuck
			}
			parts = append(parts, fmt.Sprintf("%s: %s stuck: %s", s.Component, plural(s.Stuck, "group"), s.StuckMessage))
		}
		if s.Unschedulable > 0 {
			if c.Status == ConditionFalse {
				c.Status, c.Reason = ConditionTrue, ReasonUnschedulable
			}
			parts = append(parts, fmt.Sprintf("%s: %s unschedulable: %s", s.Component, plural(s.Unschedulable, "group"), s.UnschedulableMessage))
		}
	}
	if c.Status == ConditionFalse {
		for _, s := range cs {
			if s.Stalled {
				c.Status, c.Reason = ConditionTrue, ReasonProgressDeadlineExceeded
				parts = append(parts, stalledText(s))
			}
		}
	}
	c.Message = strings.Join(parts, "; ")
	return c
}
