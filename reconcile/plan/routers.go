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
// current pairing is current and whose engine and decoder both have live
// groups of the pairings live (LivePairs; rule 12); nil without a
// pairing, so the router is planned as any component.
func RouterPair(current string, live map[string]bool) *Pair {
	if current == "" {
		return nil
	}
	return &Pair{Pairing: current, Router: true, Live: live}
}

// nextRouters is Next for the router of a prefill/decode service (rule
// 12; spec.Pair from RouterPair): one set of routers per pairing. The
// routers of the current pairing, and those without a pairing (made
// before routers had one; outdated, so they roll by rule 5), are planned
// by Next at Pair{Pairing: current}: created routers carry the current
// pairing and take the lowest ordinals no router holds (Spec.Held). A
// router of another pairing is kept while that pairing has a live engine
// group and a live decoder group (Pair.Live: it serves, or may again
// serve, that pairing) and deleted once it lacks either. Status is the
// current pairing's, with the Ready routers of the kept pairings counted
// as Ready: they serve.
func nextRouters(spec Spec, pods []Pod, memory Backoff, now time.Time) Step {
	rp := spec.Pair
	var mine, gone []Pod
	held := map[int32]bool{}
	var keptReady int32
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
		case podReady(p):
			keptReady++
		}
	}
	spec.Pair = &Pair{Pairing: rp.Pairing}
	spec.Held = held
	step := Next(spec, mine, memory, now)
	step.Pairs = nil // the router's groups are no role of a pairing
	slices.SortFunc(gone, func(a, b Pod) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Name, b.Name))
	})
	for _, p := range gone {
		step.Delete = append(step.Delete, PodRef{Name: p.Name, UID: p.UID, Group: p.Group, Role: p.Role, Worker: p.Worker, Reason: ReasonPairingGone})
		step.Events = append(step.Events, Event{Type: EventNormal, Reason: ReasonPairingGone,
			Message: spec.Component + ": deleting pod " + p.Name + ": pairing " + p.Pairing + " has no engine or no decoder group left"})
	}
	slices.SortFunc(step.Delete, func(a, b PodRef) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Role, b.Role), cmp.Compare(a.Worker, b.Worker),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	step.Status.Ready += keptReady
	step.Status.Unavailable = max(0, step.Status.Desired-step.Status.Ready)
	return step
}
