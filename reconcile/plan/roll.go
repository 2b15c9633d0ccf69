package plan

import (
	"slices"
	"strconv"
)

// roll applies rule 5: outdated groups at or above the partition are
// deleted whole, to be recreated at the current revision by rule 2. Those
// not Ready go first and cost nothing; then Ready ones from the highest
// ordinal down, within the allowance.
func (p *planner) roll() {
	cands := p.rollable()
	for _, g := range cands {
		if !g.ready && p.pairDelete(g) {
			p.rollGroup(g, "not Ready, ")
		}
	}
	for _, g := range cands {
		if g.ready && !p.gone[g.ordinal] {
			if p.allowance <= 0 {
				return
			}
			if !p.pairDelete(g) { // rule 11
				continue
			}
			p.allowance--
			p.rollGroup(g, "")
		}
	}
}

// rollable returns the live outdated groups at or above the partition,
// highest ordinal first.
func (p *planner) rollable() []*group {
	var out []*group
	for _, g := range p.liveGroups() {
		if g.outdated && g.ordinal >= p.partition {
			out = append(out, g)
		}
	}
	slices.Reverse(out)
	return out
}

// rollGroup deletes an outdated group.
func (p *planner) rollGroup(g *group, state string) {
	p.deleteGroup(g, ReasonRollingGroup)
	p.event(EventNormal, ReasonRollingGroup, "%s: replacing group %d (%srevision %s to %q)",
		p.spec.Component, g.ordinal, state, p.revisions(g), p.spec.Revision)
}

// plural writes "1 pod", "3 pods".
func plural(n int32, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
