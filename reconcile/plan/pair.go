package plan

import (
	"fmt"
	"slices"

	"github.com/berthdev/berth/api/v1beta1"
)

// Pair is what the planner of one role of a prefill/decode service (the
// engine is prefill, the decoder decode) knows of the pair (rules 10 and
// 11). The caller plans the engine first, with Other from PairRanges of
// the decoder's pods, then the decoder with Other from the engine's
// Step.Pairs, so the decoder's step is checked against both.
type Pair struct {
	// Pairing is the current pairing: created pods carry it (the caller
	// stamps the label) and a group with a pod of another pairing is
	// outdated, as one of another revision is.
	Pairing string
	// Prefill: this component is the prefill (engine) side.
	Prefill bool
	// Ratio, when set, gates the deletes of Ready groups and the creates
	// of groups (rule 11).
	Ratio *v1beta1.PrefillDecodeRatio
	// Other is the other role's Range per pairing.
	Other map[string]Range
	// Router: this is the router's Pair (rule 12), and Next plans one set
	// of routers per pairing; Live are then the pairings with a live engine
	// group and a live decoder group (LivePairs), Retire those whose last
	// group a step of the engine or the decoder holds for their routers
	// (Step.RouterFirst; rule 13).
	Router bool
	Live   map[string]bool
	Retire map[string]bool
	// Routed, for the engine and the decoder: the pairings other than the
	// current one with a router pod (RoutedPairs); Served: a router of the
	// current pairing is Ready and not terminating (Served). The last live
	// group of a Routed pairing is not deleted while the current pairing
	// is Served or has a live group of this role (rule 13).
	Routed map[string]bool
	Served bool
}

// Range is what one role has of one pairing: Live and Ready groups as
// observed before the step, and the span of Ready groups it may have while the step's writes land in
// any order: Low counts the Ready groups this step deletes as gone, High
// the groups not yet Ready (live, or created in this step) as Ready.
type Range struct {
	Live, Ready, Low, High int32
}

// PairRanges are the Ranges of one role before any step: the caller's
// Other for the role planned first.
func PairRanges(spec Spec, pods []Pod) map[string]Range {
	return observe(withDefaults(spec), pods).pairRanges()
}

// pairRanges counts the live groups per pairing (rule 10).
func (v *view) pairRanges() map[string]Range {
	out := map[string]Range{}
	for _, o := range v.ordinals {
		g := v.groups[o]
		if !g.live {
			continue
		}
		r := out[g.pairing]
		r.Live++
		r.High++
		if g.ready {
			r.Ready++
			r.Low++
		}
		out[g.pairing] = r
	}
	return out
}

// groupPairing is the pairing of g's pods (rule 10): the first live pod's,
// and whether every live pod has it.
func (v *view) groupPairing(g *group) (string, bool) {
	if len(g.all) == 0 {
		return "", true
	}
	first := v.pods[g.all[0]].Pairing
	same := !slices.ContainsFunc(g.all, func(i int) bool { return v.pods[i].Pairing != first })
	return first, same
}

// pairDelete reports whether the Ready group g may be deleted under rule
// 11, and if so counts it as gone. A group that is not Ready only leaves
// the span.
func (p *planner) pairDelete(g *group) bool {
	if p.spec.Pair == nil || p.pairs == nil {
		return true
	}
	if p.routerFirst(g) {
		return false
	}
	r := p.pairs[g.pairing]
	if !g.ready {
		r.High--
		p.pairs[g.pairing] = r
		return true
	}
	next := r
	next.Low--
	if !p.pairAllows(g.pairing, next) {
		p.pairHeld(g.pairing, "deleting", g.ordinal)
		return false
	}
	p.pairs[g.pairing] = next
	return true
}

// routerFirst applies rule 13: g is the last live group of a pairing
// with a router pod (Pair.Routed) and a live group of the other role
// (Pair.Other), while the current pairing is Served or keeps a live group
// of this role, so it waits until that pairing's routers are gone; the
// first such hold of a step is said.
func (p *planner) routerFirst(g *group) bool {
	pr := p.spec.Pair
	q := g.pairing
	if !pr.Routed[q] || q == pr.Pairing || pr.Other[q].Live == 0 {
		return false // no router, or one that serves nothing: rule 12 deletes it
	}
	current := false
	for _, o := range p.liveGroups() {
		if o.pairing == q && o.ordinal != g.ordinal {
			return false
		}
		current = current || o.pairing == pr.Pairing
	}
	if !pr.Served && !current {
		return false // no group to spare: nothing can serve until it goes
	}
	if p.step.RouterFirst == nil {
		p.step.RouterFirst = map[string]bool{}
	}
	p.step.RouterFirst[q] = true
	if !p.routerFirstSaid {
		p.routerFirstSaid = true
		p.event(EventNormal, ReasonRouterFirst, "%s: deleting group %d waits: it is the last of pairing %q, whose router goes first so that it takes no request its pairing cannot answer",
			p.spec.Component, g.ordinal, q)
	}
	return true
}

// pairCreate reports whether a group may be created at the current
// pairing under rule 11, and if so counts it.
func (p *planner) pairCreate(o int32) bool {
	if p.spec.Pair == nil || p.pairs == nil {
		return true
	}
	q := p.spec.Pair.Pairing
	next := p.pairs[q]
	next.High++
	if !p.pairAllows(q, next) {
		p.pairHeld(q, "creating", o)
		return false
	}
	p.pairs[q] = next
	return true
}

// pairAllows applies rule 11 to pairing q with own span r: every count
// the Ready groups of both roles may pass through is within the ratio's
// bounds, or no further out than the Ready groups are now.
func (p *planner) pairAllows(q string, r Range) bool {
	pr := p.spec.Pair
	if pr.Ratio == nil {
		return true
	}
	o := pr.Other[q]
	pre, dec := r, o
	if !pr.Prefill {
		pre, dec = o, r
	}
	now := pr.Ratio.Skew(pre.Ready, dec.Ready)
	limit := max(now, pr.Ratio.Tolerance())
	for _, np := range []int32{pre.Low, pre.High} {
		for _, nd := range []int32{dec.Low, dec.High} {
			if pr.Ratio.Skew(max(np, 0), max(nd, 0)) > limit {
				return false
			}
		}
	}
	return true
}

// pairHeld says, once per step, that the ratio holds an action back.
func (p *planner) pairHeld(q, action string, o int32) {
	if p.pairHeldSaid {
		return
	}
	p.pairHeldSaid = true
	p.event(EventNormal, ReasonRatioHold, "%s: %s group %d waits: it could take pairing %q outside the prefill:decode ratio %s (%s)",
		p.spec.Component, action, o, q, ratioText(p.spec.Pair.Ratio), p.pairCounts(q))
}

// pairCounts names the Ready groups of both roles of pairing q.
func (p *planner) pairCounts(q string) string {
	pr := p.spec.Pair
	own, other := p.pairs[q], pr.Other[q]
	if pr.Prefill {
		return fmt.Sprintf("%d prefill and %d decode groups Ready", own.Ready, other.Ready)
	}
	return fmt.Sprintf("%d prefill and %d decode groups Ready", other.Ready, own.Ready)
}

// ratioText writes a ratio as "1:2 (maxSkew 1)".
func ratioText(r *v1beta1.PrefillDecodeRatio) string {
	skew := int32(1)
	if r.MaxSkew != nil {
		skew = *r.MaxSkew
	}
	return fmt.Sprintf("%d:%d (maxSkew %d)", r.Prefill, r.Decode, skew)
}
