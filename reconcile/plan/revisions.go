package plan

// Rule 3's revisions: at which revision a missing pod, or a group created
// below the partition, comes back. The caller records every revision's pod
// templates (Spec.Recorded) and names the last revision every group ran
// (Spec.StableRevision); the planner only chooses among them.

// shape converts a recorded revision's shape.
func (s Shape) shape() shape { return shape{multi: s.MultiNode || s.Workers > 0, workers: s.Workers} }

// groupRevision is the revision the missing pods of the live group g are
// created at (rule 3): "" (the current one) for a group at it; for an
// outdated group below the partition whose live pods are all at one
// recorded revision, that revision. ok is false when the group is to be
// replaced whole instead; unrecorded then names its revision when that
// alone is why.
func (p *planner) groupRevision(g *group) (rev string, ok bool, unrecorded string) {
	if !g.outdated {
		return "", true, ""
	}
	if g.ordinal >= p.partition {
		return "", false, "" // it rolls anyway
	}
	own := ""
	for _, i := range g.all {
		r := p.pods[i].Revision
		if r == "" || (own != "" && r != own) {
			return "", false, "" // pods of several revisions: no one template
		}
		own = r
	}
	if _, recorded := p.spec.Recorded[own]; !recorded || own == "" {
		return "", false, own
	}
	return own, true, ""
}

// newGroupRevision is the revision and shape of a group rule 2 creates at
// ordinal o: below the partition the stable revision when it differs from
// the current one and is recorded (StatefulSet's currentRevision); else the
// current revision (""), saying so when the stable one is not recorded.
func (p *planner) newGroupRevision(o int32) (string, shape) {
	stable := p.spec.StableRevision
	if o >= p.partition || stable == "" || stable == p.spec.Revision {
		return "", specShape(p.spec)
	}
	if s, ok := p.spec.Recorded[stable]; ok {
		return stable, s.shape()
	}
	p.notRecorded(o, stable)
	return "", specShape(p.spec)
}

// notRecorded says that group o, below the partition at revision rev,
// comes back at the current revision because rev's templates are gone.
func (p *planner) notRecorded(o int32, rev string) {
	p.event(EventWarning, ReasonRevisionMissing,
		"%s: group %d is below the partition at revision %q, whose pod templates are no longer recorded (revision history limit, or the ControllerRevision was deleted); it comes back at the current revision %q",
		p.spec.Component, o, rev, p.spec.Revision)
}

// revisionText names the revision a create uses, for messages.
func (p *planner) revisionText(rev string) string {
	if rev == "" {
		rev = p.spec.Revision
	}
	return `"` + rev + `"`
}
