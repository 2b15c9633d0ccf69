package plan

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ident is a pod's place in the component: (group, role, worker).
type ident struct {
	group  int32
	role   string
	worker int32
}

// slot is what a pod's name is made of: two pods with the same group and
// worker index may share a name whatever their roles (rule 2).
type slot struct{ group, worker int32 }

func (id ident) slot() slot { return slot{id.group, id.worker} }

func podIdent(p Pod) ident { return ident{p.Group, p.Role, p.Worker} }

// shape is what a group is made of: one pod, or a leader and workers.
type shape struct {
	multi   bool
	workers int32
}

// group is what rule 1 knows about one ordinal.
type group struct {
	ordinal int32
	// shape is the spec's, or for an outdated group its own (rule 1).
	shape shape
	// all holds the live pods of the ordinal with a known role (indices
	// into view.pods), sorted; pods the live expected pods by identity;
	// members the same sorted: what deleting the group deletes.
	all     []int
	pods    map[ident]int
	members []int
	// missing are expected identities without a live pod, sorted.
	missing []ident
	// live: at least one expected pod is not terminating. ready: every
	// expected pod is live and Ready. outdated: a live pod is at another
	// revision. readySince: when the last of them became Ready.
	live, ready, outdated bool
	readySince            time.Time
	recreateCount         int32
	// pairing is its pods' ome.io/pairing (rule 10).
	pairing string
}

// view is the observed state of the component after rule 1.
type view struct {
	spec Spec
	pods []Pod
	// groups by ordinal, for every ordinal that has a pod; ordinals sorted.
	groups   map[int32]*group
	ordinals []int32
	// extras are live pods rule 1 deletes, and why.
	extras []int
	misfit map[int]string
	// occupied slots: any pod, live or terminating, sits there.
	occupied map[slot]bool
	// live and ready count groups.
	live, ready int32
}

// sortPods orders pods by identity, then name and UID (rule 7).
func sortPods(pods []Pod) []Pod {
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b Pod) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Role, b.Role),
			cmp.Compare(a.Worker, b.Worker), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	return out
}

// specShape is the shape the spec asks for.
func specShape(spec Spec) shape { return shape{spec.MultiNode, spec.Workers} }

// expected lists the identities of group g's pods in shape s, sorted.
func expected(s shape, g int32) []ident {
	if !s.multi {
		return []ident{{g, "", 0}}
	}
	ids := []ident{{g, RoleLeader, 0}}
	for w := int32(1); w <= s.workers; w++ {
		ids = append(ids, ident{g, RoleWorker, w})
	}
	return ids
}

// fits reports whether id is an expected identity in shape s.
func fits(s shape, id ident) bool {
	if !s.multi {
		return id.role == "" && id.worker == 0
	}
	return (id.role == RoleLeader && id.worker == 0) ||
		(id.role == RoleWorker && id.worker >= 1 && id.worker <= s.workers)
}

// knownRole reports whether r is a role the planner knows.
func knownRole(r string) bool { return r == "" || r == RoleLeader || r == RoleWorker }

// terminal reports whether a pod's phase is final: it never runs again.
func terminal(p Pod) bool { return p.Phase == corev1.PodFailed || p.Phase == corev1.PodSucceeded }

// podReady: Ready, not terminating, not terminal.
func podReady(p Pod) bool { return p.Ready && !p.Terminating && !terminal(p) }

// failing (rule 6): terminal, or restarting and not Ready.
func failing(p Pod) bool { return terminal(p) || (p.Restarts > 0 && !podReady(p)) }

// observe applies rule 1: it places every pod in its group, finds the
// extras and duplicates, and derives each group's state.
func observe(spec Spec, pods []Pod) *view {
	v := &view{spec: spec, pods: sortPods(pods), groups: map[int32]*group{}, misfit: map[int]string{}, occupied: map[slot]bool{}}
	for i, p := range v.pods {
		if p.Group >= 0 {
			v.occupied[podIdent(p).slot()] = true
		}
		switch {
		case p.Terminating || p.Foreign:
			if p.Group >= 0 {
				v.group(p.Group) // its ordinal is taken until it is gone
			}
		case p.Group < 0:
			v.extra(i, "its group index is missing or invalid")
		case !knownRole(p.Role):
			v.group(p.Group)
			v.extra(i, "role "+p.Role+" is not leader or worker")
		default:
			g := v.group(p.Group)
			g.all = append(g.all, i)
		}
	}
	for _, o := range v.ordinals {
		v.derive(v.groups[o])
	}
	slices.Sort(v.extras)
	return v
}

func hasKey[K comparable, V any](m map[K]V, k K) bool { _, ok := m[k]; return ok }

// extra marks pod i for deletion under rule 1.
func (v *view) extra(i int, why string) {
	v.extras = append(v.extras, i)
	v.misfit[i] = why
}

// group returns the group of ordinal o, adding it in order.
func (v *view) group(o int32) *group {
	if g, ok := v.groups[o]; ok {
		return g
	}
	g := &group{ordinal: o, pods: map[ident]int{}}
	v.groups[o] = g
	i, _ := slices.BinarySearch(v.ordinals, o)
	v.ordinals = slices.Insert(v.ordinals, i, o)
	return g
}

// ownShape is the shape an outdated group was made with: one pod when
// none of its pods has a leader or worker role, else a leader and
// GroupSize-1 workers as its pods say (the leader's, else the first by
// identity), or as many as its highest worker index when none does.
func (v *view) ownShape(g *group) shape {
	var s shape
	var size int32
	for _, i := range g.all {
		p := v.pods[i]
		if p.Role == RoleLeader || p.Role == RoleWorker {
			s.multi = true
		}
		if p.Role == RoleWorker {
			s.workers = max(s.workers, p.Worker)
		}
		if p.GroupSize > 0 && (size == 0 || (p.Role == RoleLeader && p.Worker == 0)) {
			size = p.GroupSize
		}
	}
	if s.multi && size > 0 {
		s.workers = size - 1
	}
	if !s.multi {
		s.workers = 0
	}
	return s
}

// derive computes a group's state from its pods (rule 1): its shape, its
// expected pods (a Ready one of duplicates, else the first by name), the
// extras, readiness and revision.
func (v *view) derive(g *group) {
	g.shape = specShape(v.spec)
	for _, i := range g.all {
		g.outdated = g.outdated || v.pods[i].Revision != v.spec.Revision
		g.recreateCount = max(g.recreateCount, v.pods[i].RecreateCount)
	}
	pairing, same := v.groupPairing(g)
	g.pairing = pairing
	if pr := v.spec.Pair; pr != nil && (!same || pairing != pr.Pairing) {
		g.outdated = true // rule 10: another pairing is another revision
	}
	if g.outdated {
		g.shape = v.ownShape(g)
	}
	for _, i := range g.all {
		id := podIdent(v.pods[i])
		switch j, dup := g.pods[id]; {
		case !fits(g.shape, id):
			v.extra(i, shapeText(g.shape))
		case dup && (podReady(v.pods[j]) || !podReady(v.pods[i])):
			v.extra(i, "another pod has the same group, role and worker index")
		case dup:
			v.extra(j, "another pod has the same group, role and worker index")
			g.pods[id] = i
		default:
			g.pods[id] = i
		}
	}
	v.readiness(g)
}

// readiness sets live, ready, readySince, members and missing.
func (v *view) readiness(g *group) {
	g.live = len(g.pods) > 0
	g.ready = g.live
	for _, id := range expected(g.shape, g.ordinal) {
		i, ok := g.pods[id]
		if !ok {
			g.missing = append(g.missing, id)
			g.ready = false
			continue
		}
		p := v.pods[i]
		g.members = append(g.members, i)
		g.ready = g.ready && podReady(p)
		if p.ReadySince.After(g.readySince) {
			g.readySince = p.ReadySince
		}
	}
	if g.live {
		v.live++
	}
	if g.ready {
		v.ready++
	}
}

// shapeText says what a group is made of, for messages.
func shapeText(s shape) string {
	if !s.multi {
		return "its group is a single pod"
	}
	return "its group is a leader and " + plural(s.workers, "worker")
}
