package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

func TestTrackProgress(t *testing.T) {
	const d = time.Minute
	rolling := Status{Component: "engine", Desired: 3, Replicas: 3, Ready: 2, Updated: 1, Outdated: 2, Available: 1, Progressing: ProgressRollingUpdate}
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	mem := func(since time.Time) Progress {
		return Progress{Revision: "new", Desired: 3, Outdated: 2, Available: 1, Since: since, Known: true}
	}
	with := func(s Status, f func(*Status)) Status { f(&s); return s }
	cases := []struct {
		name        string
		mem         Progress
		status      Status
		revision    string
		now         time.Time
		wantSince   time.Time
		wantStalled bool
		wantRequeue time.Duration
	}{
		{name: "first look starts the clock", status: rolling, revision: "new", now: at(5), wantSince: at(5), wantRequeue: d},
		{name: "no progress within the deadline", mem: mem(at(0)), status: rolling, revision: "new", now: at(20), wantSince: at(0), wantRequeue: 40 * time.Second},
		{name: "no progress for the deadline: stalled", mem: mem(at(0)), status: rolling, revision: "new", now: at(60), wantSince: at(0), wantStalled: true},
		{name: "a group rolled is progress", mem: mem(at(0)), status: with(rolling, func(s *Status) { s.Outdated = 1 }), revision: "new", now: at(90), wantSince: at(90), wantRequeue: d},
		{name: "a group available is progress", mem: mem(at(0)), status: with(rolling, func(s *Status) { s.Available = 2 }), revision: "new", now: at(90), wantSince: at(90), wantRequeue: d},
		{name: "an excess group removed is progress", mem: Progress{Revision: "new", Desired: 3, Excess: 2, Known: true, Since: at(0)},
			status: Status{Desired: 3, Replicas: 4, Progressing: ProgressScaling}, revision: "new", now: at(90), wantSince: at(90), wantRequeue: d},
		{name: "a new revision restarts the clock", mem: mem(at(0)), status: rolling, revision: "newer", now: at(90), wantSince: at(90), wantRequeue: d},
		{name: "new desired groups restart the clock", mem: mem(at(0)), status: with(rolling, func(s *Status) { s.Desired = 4 }), revision: "new", now: at(90), wantSince: at(90), wantRequeue: d},
		{name: "at rest is never stalled", mem: mem(at(0)), status: Status{Desired: 3, Replicas: 3, Ready: 3, Updated: 3, Available: 3}, revision: "new", now: at(90), wantSince: at(90)},
		{name: "a group lost and found again is no progress", mem: mem(at(0)), status: with(rolling, func(s *Status) { s.Available = 1 }), revision: "new", now: at(61), wantSince: at(0), wantStalled: true},
		{name: "a memory seeded as exceeded stays stalled", mem: Progress{Revision: "new", Desired: 3, Outdated: 2, Available: 1, Known: true},
			status: rolling, revision: "new", now: at(1), wantSince: time.Time{}, wantStalled: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, st, requeue := TrackProgress(tc.mem, tc.status, tc.revision, d, tc.now)
			assert.Equal(t, tc.wantSince, got.Since, "since")
			assert.Equal(t, tc.wantStalled, st.Stalled, "stalled")
			assert.Equal(t, tc.wantRequeue, requeue, "requeue")
			assert.Equal(t, d, st.ProgressDeadline)
			assert.True(t, got.Known)
		})
	}
}

func TestTrackProgressDefaultDeadline(t *testing.T) {
	_, st, requeue := TrackProgress(Progress{}, Status{Desired: 1, Progressing: ProgressStarting}, "r", 0, t0)
	assert.Equal(t, DefaultProgressDeadline, st.ProgressDeadline)
	assert.Equal(t, DefaultProgressDeadline, requeue)
}

// progressOracle is the simulation's own account of rule 9, from the
// world: when a group last rolled or went away, or one more group at the
// current revision became Ready outside a failure streak.
type progressOracle struct {
	known                   bool
	target                  string
	desired                 int32
	outdated, avail, excess int32
	last                    time.Time
}

// checkProgress: the step's Stalled agrees with the oracle, and the
// conditions with Stalled: Progressing=False ProgressDeadlineExceeded
// exactly while stalled; Ready=True while stalled only when every desired
// group is Ready.
func (s *sim) checkProgress(st Step, ready map[int32]bool) {
	s.t.Helper()
	outdated, avail, excess := s.progressMarks(st, ready)
	o := &s.oracle
	switch {
	case !o.known, st.Status.Progressing == "", o.target != s.spec.Revision, o.desired != s.spec.Replicas,
		outdated < o.outdated, avail > o.avail, excess < o.excess:
		*o = progressOracle{known: true, target: s.spec.Revision, desired: s.spec.Replicas, outdated: outdated, avail: avail, excess: excess, last: s.now}
	}
	deadline := s.deadline
	if deadline <= 0 {
		deadline = DefaultProgressDeadline
	}
	want := st.Status.Progressing != "" && !s.now.Before(o.last.Add(deadline))
	require.Equal(s.t, want, st.Status.Stalled, "tick %d: stalled (no progress since %s, deadline %s): %+v", s.tick, o.last.Sub(t0), deadline, st.Status)
	for _, c := range Conditions([]Status{st.Status}, true, "") {
		switch c.Type {
		case v1beta1.ConditionProgressing:
			require.Equal(s.t, st.Status.Stalled, c.Status == ConditionFalse && c.Reason == ReasonProgressDeadlineExceeded,
				"tick %d: Progressing %s %s while stalled=%v", s.tick, c.Status, c.Reason, st.Status.Stalled)
		case v1beta1.ConditionReady:
			if st.Status.Stalled && c.Status == ConditionTrue {
				require.Zero(s.t, s.unavailable(ready), "tick %d: Ready=True (%s) while stalled with groups unavailable", s.tick, c.Message)
			}
		}
	}
}

// progressMarks counts, from the world before the step, live groups with
// a pod at another revision, Ready groups all at the current revision
// whose recovery count is 0, and live groups beyond Replicas.
func (s *sim) progressMarks(st Step, ready map[int32]bool) (outdated, avail, excess int32) {
	old, live := map[int32]bool{}, map[int32]bool{}
	for _, p := range s.live() {
		live[p.Group] = true
		if p.Revision != s.spec.Revision {
			old[p.Group] = true
		}
	}
	for g := range ready {
		if !old[g] && st.Backoff[g].Count == 0 {
			avail++
		}
	}
	return int32(len(old)), avail, max(int32(len(live))-s.spec.Replicas, 0)
}

// A roll onto a revision that never gets Ready stops after maxUnavailable
// groups; once the deadline passes without progress the component is
// stalled: Progressing=False and Ready=False, ProgressDeadlineExceeded,
// although the old groups within maxUnavailable still serve. A fixed
// revision rolls on, and the component is at rest, Ready.
func TestSimStuckRollExceedsTheDeadline(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "never Ready", true: "crash-looping"}[crash], func(t *testing.T) {
			s := startSim(t, mkSpec(3))
			s.deadline = 20 * tick
			s.readyAfter["bad"], s.crashRev["bad"] = -1, crash
			s.spec.Revision = "bad"
			s.runFor(15)
			st := s.step()
			assert.False(t, st.Status.Stalled, "within the deadline")
			assert.Equal(t, ProgressRollingUpdate, readyReason(st.Status), "the old groups serve: Ready during the roll")
			s.runFor(10)
			st = s.step()
			assert.True(t, st.Status.Stalled, "no progress for the deadline")
			conds := Conditions([]Status{st.Status}, true, "")
			assert.Equal(t, ConditionFalse, conds[1].Status, "Ready: %s", conds[1].Message)
			assert.Equal(t, ReasonProgressDeadlineExceeded, conds[1].Reason)
			assert.Contains(t, conds[1].Message, "engine: 2/3 groups ready")
			assert.Equal(t, ConditionFalse, conds[2].Status)
			assert.Equal(t, ReasonProgressDeadlineExceeded, conds[2].Reason)
			assert.Contains(t, conds[2].Message, "engine: rolling update, 1/3 groups updated, 2/3 ready (no progress for 20s, progressDeadlineSeconds)")
			assert.Equal(t, ConditionTrue, conds[3].Status, "Degraded")

			s.spec.Revision = "fixed"
			s.run(200)
			st = s.step()
			assert.False(t, st.Status.Stalled)
			assert.Equal(t, ReasonAllGroupsReady, readyReason(st.Status))
		})
	}
}

// A slow roll (each new group takes 15 ticks to get Ready) under a
// 20-tick deadline always makes progress in time: never stalled.
func TestSimSlowRollStaysWithinTheDeadline(t *testing.T) {
	for _, mu := range []int32{1, 2} {
		s := startSim(t, mkSpec(4, maxUnavailable(intstr.FromInt32(mu))))
		s.deadline = 20 * tick
		s.readyAfter["new"] = 15
		s.spec.Revision = "new"
		for i := 0; i < 200 && !s.converged(); i++ {
			st := s.step()
			require.False(t, st.Status.Stalled, "tick %d", s.tick)
		}
		require.True(t, s.converged(), s.dump())
	}
}

// A new service whose pods never get Ready (never scheduled, say) is
// stalled once the deadline passes: Progressing=False, Degraded=True.
func TestSimStartThatNeverCompletesStalls(t *testing.T) {
	s := newSim(t, mkSpec(2))
	s.spec.Revision = "r1"
	s.readyAfter["r1"] = -1
	s.deadline = 10 * tick
	s.runFor(9)
	assert.False(t, s.step().Status.Stalled)
	st := s.step()
	assert.True(t, st.Status.Stalled)
	conds := Conditions([]Status{st.Status}, true, "")
	assert.Equal(t, ReasonGroupsNotReady, conds[1].Reason, "Ready says what is wrong with the groups")
	assert.Equal(t, ReasonProgressDeadlineExceeded, conds[2].Reason)
	assert.Equal(t, Condition{v1beta1.ConditionDegraded, ConditionTrue, ReasonProgressDeadlineExceeded,
		"engine: 0/2 groups ready (no progress for 10s, progressDeadlineSeconds)"}, conds[3])
}
