package plan

import (
	"cmp"
	"slices"
	"strings"
)

// deleteExtras applies rule 1: pods outside their group's shape, and
// duplicates, are deleted.
func (p *planner) deleteExtras() {
	for _, i := range p.extras {
		pod := p.pods[i]
		p.deletePod(i, ReasonExtraPod)
		p.event(EventNormal, ReasonExtraPod, "%s: deleting pod %s: %s", p.spec.Component, pod.Name, p.misfit[i])
	}
}

// scaleDown applies rule 4: while more groups are live than wanted, delete
// whole groups, those not Ready first, then the highest ordinal; groups
// below the partition last. A Ready group is deleted only within the
// allowance of rule 5; without one, the next group that is not Ready goes.
func (p *planner) scaleDown() {
	excess := p.live - p.spec.Replicas
	for _, g := range p.scaleDownOrder() {
		if excess <= 0 {
			return
		}
		if g.ready && p.allowance <= 0 {
			continue
		}
		if !p.pairDelete(g) { // rule 11
			continue
		}
		if g.ready {
			p.allowance--
		}
		p.deleteGroup(g, ReasonScalingDown)
		p.event(EventNormal, ReasonScalingDown, "%s: deleting group %d (%d live, %d wanted)",
			p.spec.Component, g.ordinal, p.live, p.spec.Replicas)
		excess--
	}
}

// scaleDownOrder sorts the live groups by rule 4's preference.
func (p *planner) scaleDownOrder() []*group {
	gs := p.liveGroups()
	slices.SortStableFunc(gs, func(a, b *group) int {
		return cmp.Or(
			cmpBool(a.ordinal < p.partition, b.ordinal < p.partition), // unprotected first
			cmpBool(a.ready, b.ready),                                 // not Ready first
			cmp.Compare(b.ordinal, a.ordinal))                         // highest first
	})
	return gs
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	default:
		return 1
	}
}

// replaceIncomplete applies rule 3's exception: a group missing a pod
// that cannot be completed at its own revision (outdated at or above the
// partition, pods of several revisions, a revision no longer recorded) is
// deleted whole, to come back by rule 2, rather than completed with a pod
// of another revision.
func (p *planner) replaceIncomplete() {
	for _, g := range p.liveGroups() {
		if !g.outdated || p.touched[g.ordinal] || !p.hasAbsent(g) {
			continue
		}
		_, ok, unrecorded := p.groupRevision(g)
		if ok {
			continue
		}
		if unrecorded != "" {
			p.notRecorded(g.ordinal, unrecorded)
		}
		p.deleteGroup(g, ReasonReplacingGroup)
		p.event(EventNormal, ReasonReplacingGroup, "%s: group %d lost a pod and its pods are at revision %s; replacing the group",
			p.spec.Component, g.ordinal, p.revisions(g))
	}
}

// hasAbsent reports whether a missing pod of g has its slot free.
func (p *planner) hasAbsent(g *group) bool {
	return slices.ContainsFunc(g.missing, func(id ident) bool { return !p.occupied[id.slot()] })
}

// completeGroups applies rule 3: missing pods of live groups are created
// again at their group's revision (groupRevision), once their slot is free.
func (p *planner) completeGroups() {
	for _, g := range p.liveGroups() {
		if p.touched[g.ordinal] || len(g.missing) == 0 {
			continue
		}
		rev, ok, _ := p.groupRevision(g)
		if !ok {
			continue
		}
		var names []string
		for _, id := range g.missing {
			if p.occupied[id.slot()] {
				p.requeue(WaitRequeue)
				continue
			}
			p.create(id, rev)
			names = append(names, describe(id))
		}
		if len(names) > 0 {
			p.event(EventNormal, ReasonCreatingPod, "%s: group %d: creating missing %s at revision %s",
				p.spec.Component, g.ordinal, strings.Join(names, ", "), p.revisionText(rev))
		}
	}
}

// scaleUp applies rule 2: while fewer groups are live than wanted, fill
// the lowest ordinals without a live group, all pods of a group at once,
// at the revision rule 3 gives (newGroupRevision).
// An ordinal that still has a pod (terminating, or an extra being deleted)
// is waited for, not skipped.
func (p *planner) scaleUp() {
	need := p.spec.Replicas - p.live
	for o := int32(0); need > 0 && o >= 0; o++ {
		g := p.groups[o]
		if g != nil && g.live || p.spec.Held[o] {
			continue // rule 12: another pairing's router holds it
		}
		need--
		if g != nil {
			p.requeue(WaitRequeue)
			continue
		}
		if !p.pairCreate(o) { // rule 11: a Ready group of the other role, or a deleted one, calls again
			return
		}
		rev, s := p.newGroupRevision(o)
		ids := expected(s, o)
		for _, id := range ids {
			p.create(id, rev)
		}
		p.event(EventNormal, ReasonCreatingGroup, "%s: creating group %d (%s at revision %s)",
			p.spec.Component, o, plural(int32(len(ids)), "pod"), p.revisionText(rev))
	}
}

// describe names an identity in messages.
func describe(id ident) string {
	switch id.role {
	case "":
		return "pod"
	case RoleLeader:
		return "leader"
	default:
		return id.role + " " + itoa(id.worker)
	}
}
