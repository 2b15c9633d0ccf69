package plan

import (
	"cmp"
	"slices"
	"time"
)

// LivePairs are the pairings with a live group of both roles in the
// engine's and the decoder's Ranges (PairRanges, or Step.Pairs): the
// pairings that serve, or may still serve, through a router (rule 12).
func LivePairs(engine, decoder map[string]Range) map[string]bool {
	out := map[string]bool{}
	for q, r := range engine {
		if r.Live > 0 && decoder[q].Live > 0 {
			out[q] = true
		}
	}
	return out
}

// RouterPair is the Pair of the router of a prefill/decode service whose
// current pairing is current, from the engine's and the decoder's Ranges
// per pairing as observed (PairRanges; Live from LivePairs, rule 12) and
// the pairings whose last group the engine's or the decoder's step of this
// sync holds for their routers (Step.RouterFirst, rule 13). Nil without a
// pairing, so the router is planned as any component.
func RouterPair(current string, engine, decoder map[string]Range, retire map[string]bool) *Pair {
	if current == "" {
		return nil
	}
	return &Pair{Pairing: current, Router: true, Live: LivePairs(engine, decoder), Retire: retire}
}

// Served reports whether a router of pairing current is Ready and not
// terminating: the service has a router that answers for the current
// pairing (rule 13).
func Served(current string, routers []Pod) bool {
	return current != "" && slices.ContainsFunc(routers, func(p Pod) bool {
		return !p.Foreign && p.Pairing == current && podReady(p)
	})
}

// RoutedPairs are the pairings other than current with a router pod,
// terminating or not: the engine and the decoder keep the last group of
// such a pairing while its routers may be retired (Pair.Routed; rule 13).
func RoutedPairs(current string, routers []Pod) map[string]bool {
	if current == "" {
		return nil
	}
	out := map[string]bool{}
	for _, p := range routers {
		if !p.Foreign && p.Pairing != "" && p.Pairing != current {
			out[p.Pairing] = true
		}
	}
	return out
}

// nextRouters is Next for the router of a prefill/decode service (rule
// 12; spec.Pair from RouterPair): one set of routers per pairing. The
// routers of the current pairing, and those without a pairing (made
// before routers had one; outdated, so they roll by rule 5), are planned
// by Next at Pair{Pairing: current}: created routers carry the current
// pairing and take the lowest ordinals no router holds (Spec.Held). A
// router of another pairing is kept while that pairing has a live engine
// group and a live decoder group (Pair.Live: it serves, or may again
// serve, that pairing) and deleted once it lacks either; it is deleted
// sooner, while its pairing can still answer, when a step holds that
// pairing's last group for it (Pair.Retire) and the current pairing is
// Served (rule 13). Status is the
// current pairing's, with the Ready routers of the kept pairings counted
// as Ready: they serve.
func nextRouters(spec Spec, pods []Pod, memory Backoff, now time.Time) Step {
	rp := spec.Pair
	var mine, gone, retired []Pod
	held := map[int32]bool{}
	var keptReady int32
	served := Served(rp.Pairing, pods)
	for _, p := range pods {
		if p.Foreign || p.Pairing == "" || p.Pairing == rp.Pairing {
			mine = append(mine, p)
			continue
		}
		if p.Group >= 0 {
			held[p.Group] = true
		}
		switch {
		case p.Terminating:
		case !rp.Live[p.Pairing]:
			gone = append(gone, p)
		case served && rp.Retire[p.Pairing]:
			retired = append(retired, p)
		case podReady(p):
			keptReady++
		}
	}
	spec.Pair = &Pair{Pairing: rp.Pairing}
	spec.Held = held
	step := Next(spec, mine, memory, now)
	step.Pairs = nil // the router's groups are no role of a pairing
	for _, p := range sortedPods(gone) {
		step.Delete = append(step.Delete, PodRef{Name: p.Name, UID: p.UID, Group: p.Group, Role: p.Role, Worker: p.Worker, Reason: ReasonPairingGone})
		step.Events = append(step.Events, Event{Type: EventNormal, Reason: ReasonPairingGone,
			Message: spec.Component + ": deleting pod " + p.Name + ": pairing " + p.Pairing + " has no engine or no decoder group left"})
	}
	for _, p := range sortedPods(retired) {
		step.Delete = append(step.Delete, PodRef{Name: p.Name, UID: p.UID, Group: p.Group, Role: p.Role, Worker: p.Worker, Reason: ReasonRouterRetired})
		step.Events = append(step.Events, Event{Type: EventNormal, Reason: ReasonRouterRetired,
			Message: spec.Component + ": deleting pod " + p.Name + ": pairing " + p.Pairing + " is to lose its last engine or decoder group and pairing " +
				rp.Pairing + " is served; the router leaves first, while its pairing can still answer what it takes"})
	}
	slices.SortFunc(step.Delete, func(a, b PodRef) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Role, b.Role), cmp.Compare(a.Worker, b.Worker),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	step.Status.Ready += keptReady
	step.Status.Unavailable = max(0, step.Status.Desired-step.Status.Ready)
	return step
}

// sortedPods sorts pods by group, then name.
func sortedPods(ps []Pod) []Pod {
	slices.SortFunc(ps, func(a, b Pod) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Name, b.Name))
	})
	return ps
}
