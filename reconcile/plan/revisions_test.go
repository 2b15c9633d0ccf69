package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Partitions hold (rule 3): groups below the partition come back at their
// own revision when it is recorded.

func recorded(revs map[string]Shape) func(*Spec) { return func(s *Spec) { s.Recorded = revs } }
func stable(rev string) func(*Spec)              { return func(s *Spec) { s.StableRevision = rev } }

// atRev stamps the revision of created pods.
func atRev(rev string, ids ...PodID) []PodID {
	out := slices.Clone(ids)
	for i := range out {
		out[i].Revision = rev
	}
	return out
}

var oneOld = map[string]Shape{"old": {}}

func size3(p *Pod) { p.GroupSize = 3 }

func TestRule3ProtectedGroupsKeepTheirRevision(t *testing.T) {
	p2 := partition(intstr.FromInt32(2))
	mnOld := map[string]Shape{"old": {MultiNode: true, Workers: 2}}
	runRuleCases(t, []ruleCase{
		{name: "a protected single-pod group with no pod left comes back at the stable revision",
			spec: mkSpec(3, p2, recorded(oneOld), stable("old")), pods: []Pod{single(1, "old"), single(2, "new")},
			want: actions{Create: atRev("old", cr(0, "", 0))}},
		{name: "above the partition a new group is at the current revision",
			spec: mkSpec(3, p2, recorded(oneOld), stable("old")), pods: []Pod{single(0, "old"), single(1, "old")},
			want: actions{Create: []PodID{cr(2, "", 0)}}},
		{name: "without a stable revision a protected group comes back at the current revision",
			spec: mkSpec(3, p2, recorded(oneOld)), pods: []Pod{single(1, "old"), single(2, "new")},
			want: actions{Create: []PodID{cr(0, "", 0)}}},
		{name: "a stable revision that is not recorded: the current revision",
			spec: mkSpec(3, p2, stable("old")), pods: []Pod{single(1, "old"), single(2, "new")},
			want: actions{Create: []PodID{cr(0, "", 0)}}},
		{name: "a protected multi-node group missing a worker is completed at its own revision",
			spec: mkSpec(2, multi(2), partition(intstr.FromInt32(1)), recorded(mnOld)),
			pods: cat(mnGroup(0, 2, "old")[:2], mnGroup(1, 2, "new")),
			want: actions{Create: atRev("old", cr(0, RoleWorker, 2))}},
		{name: "its own revision, not the stable one",
			spec: mkSpec(2, multi(2), partition(intstr.FromInt32(1)), recorded(map[string]Shape{"old": {MultiNode: true, Workers: 2}, "mid": {MultiNode: true, Workers: 2}}), stable("old")),
			pods: cat(mnGroup(0, 2, "mid")[1:], mnGroup(1, 2, "new")),
			want: actions{Create: atRev("mid", cr(0, RoleLeader, 0))}},
		{name: "a protected group of the stable revision is created in that revision's shape",
			spec: mkSpec(2, multi(3), partition(intstr.FromInt32(1)), recorded(mnOld), stable("old")),
			pods: mnGroup(1, 3, "new"),
			want: actions{Create: atRev("old", cr(0, RoleLeader, 0), cr(0, RoleWorker, 1), cr(0, RoleWorker, 2))}},
		{name: "a protected group missing a pod whose revision is not recorded is replaced whole",
			spec: mkSpec(2, multi(2), partition(intstr.FromInt32(1))),
			pods: cat(mnGroup(0, 2, "old")[:2], mnGroup(1, 2, "new")),
			want: actions{Delete: dels(mnGroup(0, 2, "old")[:2], ReasonReplacingGroup)}},
		{name: "a protected group with pods of two revisions is replaced whole",
			spec: mkSpec(2, multi(2), partition(intstr.FromInt32(1)), recorded(mnOld)),
			pods: cat([]Pod{leader(0, "old", size3), worker(0, 1, "mid", size3)}, mnGroup(1, 2, "new")),
			want: actions{Delete: []PodRef{del(leader(0, "old"), ReasonReplacingGroup), del(worker(0, 1, "mid"), ReasonReplacingGroup)}}},
		{name: "an outdated group at the partition missing a pod is not completed: it rolls",
			spec: mkSpec(2, multi(2), partition(intstr.FromInt32(1)), recorded(mnOld)),
			pods: cat(mnGroup(0, 2, "old"), mnGroup(1, 2, "old")[:2]),
			want: actions{Delete: dels(mnGroup(1, 2, "old")[:2], ReasonRollingGroup)}},
		{name: "a failed pod of a protected group is deleted first (RoleRecreate)",
			spec: mkSpec(2, multi(1), partition(intstr.FromInt32(1)), recorded(map[string]Shape{"old": {MultiNode: true, Workers: 1}})),
			pods: cat([]Pod{leader(0, "old"), worker(0, 1, "old", failedAt(t0))}, mnGroup(1, 1, "new")),
			want: actions{Delete: []PodRef{del(worker(0, 1, "old"), ReasonRecreatingPod)}}},
	})
}

func TestRule3EventsNameTheMissingRevision(t *testing.T) {
	spec := mkSpec(3, partition(intstr.FromInt32(2)), stable("old"))
	st := Next(spec, []Pod{single(1, "old"), single(2, "new")}, nil, t0)
	require.Equal(t, []PodID{cr(0, "", 0)}, st.Create)
	assert.Contains(t, st.Events, Event{Type: EventWarning, Reason: ReasonRevisionMissing,
		Message: `engine: group 0 is below the partition at revision "old", whose pod templates are no longer recorded (revision history limit, or the ControllerRevision was deleted); it comes back at the current revision "new"`})

	spec = mkSpec(2, multi(1), partition(intstr.FromInt32(1)))
	st = Next(spec, cat(mnGroup(0, 1, "old")[:1], mnGroup(1, 1, "new")), nil, t0)
	assert.True(t, slices.ContainsFunc(st.Events, func(e Event) bool {
		return e.Reason == ReasonRevisionMissing && strings.Contains(e.Message, `group 0 is below the partition at revision "old"`)
	}), "events: %+v", st.Events)

	spec = mkSpec(3, partition(intstr.FromInt32(2)), stable("old"), recorded(oneOld))
	st = Next(spec, []Pod{single(1, "old"), single(2, "new")}, nil, t0)
	assert.Equal(t, []Event{{Type: EventNormal, Reason: ReasonCreatingGroup, Message: `engine: creating group 0 (1 pod at revision "old")`}}, st.Events)
}

// holdSim is the simulation of a canary under faults: every tick a pod may
// be deleted from outside or fail, and after every step the invariants of
// rule 3 are checked against the test's own account of each protected
// group's revision.
type holdSim struct {
	*sim
	// own is the revision each group below the partition ran at the start.
	own map[int32]string
}

// checkHold: no create below the partition is at another revision than its
// group's, when that revision is recorded; otherwise it is at the current
// revision and the step says why; no live group below the partition mixes
// revisions, and none is rolled.
func (h *holdSim) checkHold(st Step) {
	h.t.Helper()
	p := h.partition()
	for _, c := range st.Create {
		if c.Group >= p {
			require.Empty(h.t, c.Revision, "tick %d: group %d is above the partition: current revision", h.tick, c.Group)
			continue
		}
		own := h.own[c.Group]
		if _, ok := h.spec.Recorded[own]; ok {
			require.Equal(h.t, own, c.Revision, "tick %d: protected group %d must come back at %q: %+v", h.tick, c.Group, own, c)
			continue
		}
		require.Empty(h.t, c.Revision, "tick %d: group %d: unrecorded revision %q falls back to the current one", h.tick, c.Group, own)
		require.True(h.t, slices.ContainsFunc(st.Events, func(e Event) bool {
			return e.Reason == ReasonRevisionMissing && strings.Contains(e.Message, fmt.Sprintf("group %d ", c.Group))
		}), "tick %d: group %d came back at the current revision without saying why: %+v", h.tick, c.Group, st.Events)
		h.own[c.Group] = h.spec.Revision
	}
	for _, d := range st.Delete {
		require.NotEqual(h.t, ReasonRollingGroup, d.Reason, "tick %d: rolled a group", h.tick)
	}
	revs := map[int32]string{}
	for _, pod := range h.live() {
		if pod.Group >= p {
			continue
		}
		if r, ok := revs[pod.Group]; ok {
			require.Equal(h.t, r, pod.Revision, "tick %d: group %d mixes revisions:%s", h.tick, pod.Group, h.dump())
		}
		revs[pod.Group] = pod.Revision
		require.Equal(h.t, h.own[pod.Group], pod.Revision, "tick %d: group %d changed revision:%s", h.tick, pod.Group, h.dump())
	}
}

// hurt deletes or fails one random live pod from outside.
func (h *holdSim) hurt() {
	live := h.live()
	if len(live) == 0 {
		return
	}
	p := live[h.rng.Intn(len(live))]
	if h.rng.Intn(2) == 0 {
		p.Terminating, p.deletedAt = true, h.tick
	} else {
		h.fail(p, corev1.PodFailed)
	}
	h.sim.hurt[p.Group] = true
}

func TestSimPartitionHolds(t *testing.T) {
	mn := func(w int32) Shape { return Shape{MultiNode: true, Workers: w} }
	cases := []struct {
		name     string
		spec     Spec
		recorded map[string]Shape // the old revision's record; nil: gone
		newSpec  func(*Spec)
	}{
		{"single pods, partition 2 of 4", mkSpec(4, partition(intstr.FromInt32(2))), oneOld, nil},
		{"multi-node, partition 2 of 3", mkSpec(3, multi(2), partition(intstr.FromInt32(2))), map[string]Shape{"old": mn(2)}, nil},
		{"multi-node, the new revision adds a worker", mkSpec(3, multi(1), partition(intstr.FromInt32(2))), map[string]Shape{"old": mn(1)},
			func(s *Spec) { s.Workers = 2 }},
		{"ServingGroupRecreate, partition 50%", mkSpec(4, multi(1), partition(intstr.FromString("50%")), policy("ServingGroupRecreate")),
			map[string]Shape{"old": mn(1)}, nil},
		{"the old record is gone: the current revision, said", mkSpec(3, partition(intstr.FromInt32(2))), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &holdSim{sim: startSim(t, tc.spec), own: map[int32]string{}}
			for g := range h.partition() {
				h.own[g] = "old"
			}
			h.spec.Revision, h.spec.StableRevision, h.spec.Recorded = "new", "old", tc.recorded
			if tc.newSpec != nil {
				tc.newSpec(&h.spec)
			}
			h.run(100) // the canary: groups at and above the partition roll
			for tick := range 300 {
				if tick%7 == 0 {
					h.hurt()
				}
				h.checkHold(h.step())
			}
			h.runFor(30)
			h.run(100)
			for g := range h.partition() {
				want := "old"
				if tc.recorded == nil {
					want = h.own[g]
				}
				assert.Equal(t, want, h.revisions()[g], "group %d at the end", g)
			}
		})
	}
}
