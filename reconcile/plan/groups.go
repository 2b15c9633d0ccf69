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

// group is what rule 1 knows about one ordinal.
type group struct {
	ordinal int32
	// pods holds the live expected pods by identity (indices into
	// view.pods); members the live pods deleted with the group: expected
	// ones and the extra workers kept for the roll, sorted.
	pods    map[ident]int
	members []int
	// candidates are live pods of this ordinal whose identity does not fit
	// the spec's shape; rule 1 keeps or deletes them.
	candidates []int
	// missing are expected identities without a live pod, sorted.
	missing []ident
	// live: at least one expected pod is not terminating. ready: every
	// expected pod is live and Ready. outdated: a live pod is at another
	// revision. readySince: when the last of them became Ready.
	live, ready, outdated bool
	readySince            time.Time
	recreateCount         int32
}

// view is the observed state of the component after rule 1.
type view struct {
	spec Spec
	pods []Pod
	// groups by ordinal, for every ordinal that has a pod; ordinals sorted.
	groups   map[int32]*group
	ordinals []int32
	// extras are live pods rule 1 deletes.
	extras []int
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

// expected lists the identities of group g's pods under spec, sorted.
func expected(spec Spec, g int32) []ident {
	if !spec.MultiNode {
		return []ident{{g, "", 0}}
	}
	ids := []ident{{g, RoleLeader, 0}}
	for w := int32(1); w <= spec.Workers; w++ {
		ids = append(ids, ident{g, RoleWorker, w})
	}
	return ids
}

// fits reports whether id is an expected identity under spec.
func fits(spec Spec, id ident) bool {
	if !spec.MultiNode {
		return id.role == "" && id.worker == 0
	}
	return (id.role == RoleLeader && id.worker == 0) ||
		(id.role == RoleWorker && id.worker >= 1 && id.worker <= spec.Workers)
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
	v := &view{spec: spec, pods: sortPods(pods), groups: map[int32]*group{}, occupied: map[slot]bool{}}
	for i, p := range v.pods {
		id := podIdent(p)
		var g *group
		if p.Group >= 0 {
			v.occupied[id.slot()] = true
			g = v.group(p.Group)
		}
		switch {
		case p.Terminating:
		case g == nil || !knownRole(p.Role):
			v.extras = append(v.extras, i)
		case !fits(spec, id):
			g.candidates = append(g.candidates, i)
		case hasKey(g.pods, id) && (podReady(v.pods[g.pods[id]]) || !podReady(p)):
			v.extras = append(v.extras, i) // a duplicate: a Ready one, else the first by name, stays
		case hasKey(g.pods, id):
			v.extras = append(v.extras, g.pods[id])
			g.pods[id] = i
		default:
			g.pods[id] = i
		}
	}
	for _, o := range v.ordinals {
		v.derive(v.groups[o])
	}
	slices.Sort(v.extras)
	return v
}

func hasKey[K comparable, V any](m map[K]V, k K) bool { _, ok := m[k]; return ok }

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

// derive computes a group's state from its pods, and decides which of its
// misfits are kept for the roll (rule 1).
func (v *view) derive(g *group) {
	g.live = len(g.pods) > 0
	g.ready = g.live
	for _, id := range expected(v.spec, g.ordinal) {
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
	for _, i := range append(slices.Clone(g.members), g.candidates...) {
		g.outdated = g.outdated || v.pods[i].Revision != v.spec.Revision
		g.recreateCount = max(g.recreateCount, v.pods[i].RecreateCount)
	}
	for _, i := range g.candidates {
		if g.live && g.outdated && v.pods[i].Role == RoleWorker && v.pods[i].Worker > v.spec.Workers {
			g.members = append(g.members, i) // an old group keeps its shape until it is rolled
		} else {
			v.extras = append(v.extras, i)
		}
	}
	slices.Sort(g.members)
	if g.live {
		v.live++
	}
	if g.ready {
		v.ready++
	}
}
