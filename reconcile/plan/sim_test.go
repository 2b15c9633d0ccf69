package plan

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

// The simulation runs Next against a fake world in the style of the
// StatefulSet controller's tests: every tick Next sees the pods, its step
// is checked and applied, then the world moves on. A created pod becomes
// Ready after readyAfter ticks (per revision; negative: never, a bad
// image); pods of a crashing revision, or of a crashing group, restart
// every tick from their second tick on; a deleted pod is terminating for
// one tick, then gone.

const tick = time.Second

type simPod struct {
	Pod
	born, deletedAt int // ticks; deletedAt -1 while live
}

type sim struct {
	t      *testing.T
	spec   Spec
	now    time.Time
	tick   int
	rng    *rand.Rand
	pods   []*simPod
	uid    int
	memory Backoff
	// behaviour
	readyAfter map[string]int
	crashRev   map[string]bool
	crashPod   func(p Pod) bool // an external fault: this pod crash-loops
	failPhase  bool             // crashing pods end Failed instead of restarting
	// hurt groups were broken from outside; the budget check allows them.
	hurt map[int32]bool
	// records
	rolled     []int32            // groups the roll deleted, in order
	deletedBy  map[int32][]string // reasons of deletes per group
	recoveries map[int32][]int    // ticks of recoveries per group
	stamps     map[int32][]int32  // RecreateCount of created pods per group
	maxUnavail int32              // most desired groups seen unavailable
	events     []Event
	steps      int
	// rule 9: the component's progress memory and deadline (0: the
	// default), and the test's own account of progress.
	progress Progress
	deadline time.Duration
	oracle   progressOracle
}

func newSim(t *testing.T, spec Spec) *sim {
	return &sim{t: t, spec: spec, now: t0, rng: rand.New(rand.NewSource(1)),
		readyAfter: map[string]int{}, crashRev: map[string]bool{}, hurt: map[int32]bool{},
		deletedBy: map[int32][]string{}, recoveries: map[int32][]int{}, stamps: map[int32][]int32{}}
}

// expectedIdents is the test's own account of a group's shape: the size
// its pods were made with (every simulated pod carries it).
func (s *sim) expectedIdents(g int32) []ident {
	for _, p := range s.live() {
		if p.Group == g && p.Role != "" {
			ids := []ident{{g, RoleLeader, 0}}
			for w := int32(1); w < p.GroupSize; w++ {
				ids = append(ids, ident{g, RoleWorker, w})
			}
			return ids
		}
	}
	return []ident{{g, "", 0}}
}

func (s *sim) live() []*simPod {
	var out []*simPod
	for _, p := range s.pods {
		if !p.Terminating {
			out = append(out, p)
		}
	}
	return out
}

// readyGroups: ordinals whose expected pods are all live and Ready,
// ignoring the pods in skip.
func (s *sim) readyGroups(skip map[string]bool) map[int32]bool {
	byID := map[ident]*simPod{}
	var ords []int32
	for _, p := range s.live() {
		if !skip[p.Name] {
			byID[podIdent(p.Pod)] = p
			ords = append(ords, p.Group)
		}
	}
	out := map[int32]bool{}
	for _, g := range ords {
		ok := true
		for _, id := range s.expectedIdents(g) {
			p := byID[id]
			ok = ok && p != nil && p.Ready
		}
		if ok {
			out[g] = true
		}
	}
	return out
}

func (s *sim) unavailable(ready map[int32]bool) int32 {
	return s.spec.Replicas - min(int32(len(ready)), s.spec.Replicas)
}

func (s *sim) maxUnavailable() int32 {
	n, err := MaxUnavailable(s.spec)
	require.NoError(s.t, err)
	return n
}

func (s *sim) partition() int32 {
	n, err := Partition(s.spec)
	require.NoError(s.t, err)
	return n
}

// observe returns the pods as the caller would, in a random order.
func (s *sim) observe() []Pod {
	var out []Pod
	for _, p := range s.pods {
		out = append(out, p.Pod)
	}
	s.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// step runs one tick.
func (s *sim) step() Step {
	s.t.Helper()
	before := s.readyGroups(nil)
	for g := range s.hurt {
		if before[g] {
			delete(s.hurt, g)
		}
	}
	u0 := s.unavailable(before)
	s.maxUnavail = max(s.maxUnavail, u0)
	st := Next(s.spec, s.observe(), s.memory, s.now)
	s.progress, st.Status, _ = TrackProgress(s.progress, st.Status, s.spec.Revision, s.deadline, s.now)
	s.checkStep(st)
	s.checkReady(st, before)
	s.checkProgress(st, before)
	deleted := map[string]bool{}
	for _, d := range st.Delete {
		deleted[d.Name] = true
	}
	after := s.readyGroups(deleted)
	u1 := s.unavailable(after)
	require.LessOrEqual(s.t, u1, max(u0, s.maxUnavailable()+int32(len(s.hurt))),
		"tick %d: the step's deletes leave %d groups unavailable (before %d, maxUnavailable %d): %+v", s.tick, u1, u0, s.maxUnavailable(), st.Delete)
	s.record(st, before)
	s.apply(st)
	s.advance()
	s.memory = st.Backoff
	s.steps++
	return st
}

// checkReady: Ready means serving. The Ready condition the step's status
// gives is True only while at least one group is Ready and no more than
// maxUnavailable of the desired groups are not.
func (s *sim) checkReady(st Step, ready map[int32]bool) {
	s.t.Helper()
	for _, c := range Conditions([]Status{st.Status}, true, "") {
		if c.Type != v1beta1.ConditionReady || c.Status != ConditionTrue || s.spec.Replicas == 0 {
			continue
		}
		require.Positive(s.t, len(ready), "tick %d: Ready=True (%s) with no Ready group", s.tick, c.Message)
		require.LessOrEqual(s.t, s.unavailable(ready), s.maxUnavailable(), "tick %d: Ready=True (%s) with %d groups unavailable", s.tick, c.Message, s.unavailable(ready))
	}
}

// checkStep checks a step against the world: deletes name live pods by
// UID, once; creates land where no pod is; rolls respect the partition.
func (s *sim) checkStep(st Step) {
	s.t.Helper()
	seen := map[string]bool{}
	for _, d := range st.Delete {
		require.False(s.t, seen[d.UID], "tick %d: %s deleted twice", s.tick, d.Name)
		seen[d.UID] = true
		i := slices.IndexFunc(s.pods, func(p *simPod) bool { return p.UID == d.UID })
		require.GreaterOrEqual(s.t, i, 0, "tick %d: delete of unknown pod %s", s.tick, d.Name)
		require.False(s.t, s.pods[i].Terminating, "tick %d: delete of terminating pod %s", s.tick, d.Name)
		require.Equal(s.t, s.pods[i].Name, d.Name)
		if d.Reason == ReasonRollingGroup {
			require.GreaterOrEqual(s.t, d.Group, s.partition(), "tick %d: the roll deleted protected group %d", s.tick, d.Group)
		}
	}
	for _, c := range st.Create {
		name := podName(c.Group, c.Worker)
		require.False(s.t, slices.ContainsFunc(s.pods, func(p *simPod) bool { return p.Name == name }),
			"tick %d: create of %s where a pod exists", s.tick, name)
	}
}

// record notes roll order, deletes, recoveries and stamps.
func (s *sim) record(st Step, ready map[int32]bool) {
	var rolledNow []int32
	for _, d := range st.Delete {
		rs := s.deletedBy[d.Group]
		if len(rs) == 0 || rs[len(rs)-1] != d.Reason+"@"+fmt.Sprint(s.tick) {
			s.deletedBy[d.Group] = append(rs, d.Reason+"@"+fmt.Sprint(s.tick))
			switch d.Reason {
			case ReasonRollingGroup:
				rolledNow = append(rolledNow, d.Group)
			case ReasonRecreatingGroup, ReasonRecreatingPod, ReasonReplacingFailedPod:
				s.recoveries[d.Group] = append(s.recoveries[d.Group], s.tick)
			}
		}
	}
	// Within a step: groups that were not Ready first, then by ordinal down.
	slices.SortFunc(rolledNow, func(a, b int32) int {
		if ready[a] != ready[b] {
			return cmpBool(ready[a], ready[b])
		}
		return int(b - a)
	})
	s.rolled = append(s.rolled, rolledNow...)
	s.events = append(s.events, st.Events...)
	for _, c := range st.Create {
		s.stamps[c.Group] = append(s.stamps[c.Group], c.RecreateCount)
	}
}

func (s *sim) apply(st Step) {
	for _, d := range st.Delete {
		for _, p := range s.pods {
			if p.UID == d.UID {
				p.Terminating, p.deletedAt = true, s.tick
			}
		}
	}
	for _, c := range st.Create {
		s.uid++
		rev, size := s.spec.Revision, s.groupSize()
		if c.Revision != "" { // a recorded revision (rule 3), with its groups' size
			rev, size = c.Revision, recordedSize(s.spec.Recorded[c.Revision])
		}
		s.pods = append(s.pods, &simPod{Pod: Pod{
			Name: podName(c.Group, c.Worker), UID: fmt.Sprintf("uid-%d", s.uid), Group: c.Group, Role: c.Role, Worker: c.Worker,
			Revision: rev, Phase: corev1.PodPending, RecreateCount: c.RecreateCount, GroupSize: size,
		}, born: s.tick, deletedAt: -1})
	}
}

// recordedSize is the group size the env of a recorded revision's pods says.
func recordedSize(r Shape) int32 {
	if r.MultiNode || r.Workers > 0 {
		return r.Workers + 1
	}
	return 0
}

// groupSize is what the reconciler's env says: 1+workers for multi-node
// groups, nothing for single pods.
func (s *sim) groupSize() int32 {
	if s.spec.MultiNode || s.spec.Workers > 0 {
		return s.spec.Workers + 1
	}
	return 0
}

// advance moves the world one tick: deletes complete, pods start, become
// Ready, or crash.
func (s *sim) advance() {
	s.tick++
	s.now = s.now.Add(tick)
	s.pods = slices.DeleteFunc(s.pods, func(p *simPod) bool { return p.Terminating && p.deletedAt < s.tick-1 })
	for _, p := range s.live() {
		age := s.tick - p.born
		after, ok := s.readyAfter[p.Revision]
		if !ok {
			after = 2
		}
		crash := s.crashRev[p.Revision] || (s.crashPod != nil && s.crashPod(p.Pod))
		switch {
		case crash && age >= 2 && s.failPhase:
			s.fail(p, corev1.PodFailed)
		case crash && age >= 2:
			p.Restarts++
			s.fail(p, corev1.PodRunning)
		case after >= 0 && age >= after && !p.Ready:
			p.Phase, p.Ready, p.ReadySince = corev1.PodRunning, true, s.now
		}
	}
	s.checkWorld()
}

func (s *sim) fail(p *simPod, phase corev1.PodPhase) {
	if p.FailingSince.IsZero() || p.Ready {
		p.FailingSince = s.now
	}
	p.Phase, p.Ready, p.ReadySince, p.Reason = phase, false, time.Time{}, "CrashLoopBackOff"
}

// checkWorld: no two live pods share an identity.
func (s *sim) checkWorld() {
	s.t.Helper()
	seen := map[ident]string{}
	for _, p := range s.live() {
		id := podIdent(p.Pod)
		require.NotContains(s.t, seen, id, "tick %d: %s and %s are both live as %+v", s.tick, seen[id], p.Name, id)
		seen[id] = p.Name
	}
}

// converged: Replicas groups, all Ready, at the revision above the
// partition, nothing terminating.
func (s *sim) converged() bool {
	ready := s.readyGroups(nil)
	if int32(len(ready)) != s.spec.Replicas || len(s.live()) != len(s.pods) {
		return false
	}
	for _, p := range s.pods {
		if !ready[p.Group] || (p.Group >= s.partition() && p.Revision != s.spec.Revision) {
			return false
		}
	}
	return true
}

// run steps until converged, at most n ticks; it reports the ticks taken.
func (s *sim) run(n int) int {
	s.t.Helper()
	for i := 0; i < n; i++ {
		if s.converged() {
			return i
		}
		s.step()
	}
	require.True(s.t, s.converged(), "not converged after %d ticks: %s", n, s.dump())
	return n
}

// runFor steps n ticks whatever happens.
func (s *sim) runFor(n int) {
	s.t.Helper()
	for range n {
		s.step()
	}
}

func (s *sim) dump() string {
	out := ""
	for _, p := range s.pods {
		out += fmt.Sprintf("\n  %s g%d %s w%d rev=%s ready=%v term=%v restarts=%d", p.Name, p.Group, p.Role, p.Worker, p.Revision, p.Ready, p.Terminating, p.Restarts)
	}
	return out
}

// groups returns the ordinals with live pods, with their revisions.
func (s *sim) revisions() map[int32]string {
	out := map[int32]string{}
	for _, p := range s.live() {
		out[p.Group] = p.Revision
	}
	return out
}

// start builds a converged component at revision "old".
func startSim(t *testing.T, spec Spec) *sim {
	spec.Revision = "old"
	s := newSim(t, spec)
	s.run(20)
	s.reset()
	return s
}

// reset forgets the records, not the world.
func (s *sim) reset() {
	s.rolled, s.maxUnavail = nil, 0
	s.deletedBy, s.recoveries, s.stamps = map[int32][]string{}, map[int32][]int{}, map[int32][]int32{}
}

func TestSimRollingUpdate(t *testing.T) {
	cases := []struct {
		name       string
		spec       Spec
		wantRolled []int32
		wantUnav   int32
	}{
		{"partition 0", mkSpec(4), []int32{3, 2, 1, 0}, 1},
		{"partition 2: only 2 and 3 change", mkSpec(4, partition(intstr.FromInt32(2))), []int32{3, 2}, 1},
		{"partition 50%", mkSpec(4, partition(intstr.FromString("50%"))), []int32{3, 2}, 1},
		{"maxUnavailable 2", mkSpec(4, maxUnavailable(intstr.FromInt32(2))), []int32{3, 2, 1, 0}, 2},
		{"maxUnavailable 50%", mkSpec(4, maxUnavailable(intstr.FromString("50%"))), []int32{3, 2, 1, 0}, 2},
		{"multi-node groups of a leader and 2 workers", mkSpec(3, multi(2)), []int32{2, 1, 0}, 1},
		{"multi-node, maxUnavailable 2, partition 1", mkSpec(4, multi(2), maxUnavailable(intstr.FromInt32(2)), partition(intstr.FromInt32(1))), []int32{3, 2, 1}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, tc.spec)
			s.spec.Revision = "new"
			s.run(100)
			assert.Equal(t, tc.wantRolled, s.rolled)
			assert.Equal(t, tc.wantUnav, s.maxUnavail, "the roll uses its budget, and no more")
			p := s.partition()
			for g := range p {
				assert.Empty(t, s.deletedBy[g], "group %d below the partition", g)
				assert.Equal(t, "old", s.revisions()[g])
			}
		})
	}
}

func TestSimBadImageStopsTheRoll(t *testing.T) {
	for _, mu := range []int32{1, 2} {
		for _, crash := range []bool{false, true} {
			t.Run(fmt.Sprintf("maxUnavailable %d crash %v", mu, crash), func(t *testing.T) {
				s := startSim(t, mkSpec(4, maxUnavailable(intstr.FromInt32(mu))))
				s.readyAfter["bad"] = -1
				s.crashRev["bad"] = crash
				s.spec.Revision = "bad"
				s.runFor(200)
				assert.Len(t, s.rolled, int(mu), "the roll stops after maxUnavailable groups")
				assert.Equal(t, mu, s.maxUnavail)
				for g := int32(0); g < 4-mu; g++ {
					assert.Equal(t, "old", s.revisions()[g])
				}
				if crash {
					// RoleRecreate recovers the crashing pods with growing delays.
					rec := s.recoveries[3]
					require.GreaterOrEqual(t, len(rec), 4)
					assert.Equal(t, []int{10, 20, 40}, diffs(rec[:4]))
				}
			})
		}
	}
}

// A one-group service whose only engine hangs (not Ready) when a new
// revision arrives, and whose new image never gets Ready either: nothing
// serves during the whole roll, so it is never Ready (checkReady runs at
// every tick), whatever maxUnavailable allows.
func TestSimOneGroupNothingServesIsNotReady(t *testing.T) {
	s := startSim(t, mkSpec(1))
	for _, p := range s.pods {
		p.Ready = false
	}
	s.readyAfter["old"], s.readyAfter["new"] = -1, -1
	s.hurt[0] = true
	s.spec.Revision = "new"
	s.runFor(50)
	assert.Equal(t, []int32{0}, s.rolled, "the only group was rolled")
}

func diffs(ticks []int) []int {
	var out []int
	for i := 1; i < len(ticks); i++ {
		out = append(out, ticks[i]-ticks[i-1])
	}
	return out
}

func TestSimScaling(t *testing.T) {
	t.Run("1 to 3 to 1", func(t *testing.T) {
		s := newSim(t, mkSpec(1))
		s.run(20)
		s.spec.Replicas = 3
		s.run(20)
		assert.Equal(t, map[int32]string{0: "new", 1: "new", 2: "new"}, s.revisions())
		s.spec.Replicas = 1
		s.run(20)
		assert.Equal(t, map[int32]string{0: "new"}, s.revisions())
	})
	t.Run("2 to 1 multi-node", func(t *testing.T) {
		s := newSim(t, mkSpec(2, multi(2)))
		s.run(20)
		s.reset()
		s.spec.Replicas = 1
		s.run(20)
		assert.Equal(t, map[int32]string{0: "new"}, s.revisions())
		assert.Equal(t, map[int32][]string{1: {fmt.Sprintf("%s@%d", ReasonScalingDown, s.tick-2)}}, s.deletedBy)
	})
	t.Run("4 to 2 while rolling", func(t *testing.T) {
		s := startSim(t, mkSpec(4))
		s.spec.Revision, s.spec.Replicas = "new", 2
		s.run(60)
		assert.Equal(t, map[int32]string{0: "new", 1: "new"}, s.revisions())
		assert.LessOrEqual(t, s.maxUnavail, int32(1))
	})
	t.Run("1 to 4 while rolling", func(t *testing.T) {
		s := startSim(t, mkSpec(1))
		s.spec.Revision, s.spec.Replicas = "new", 4
		s.run(60)
		assert.Equal(t, map[int32]string{0: "new", 1: "new", 2: "new", 3: "new"}, s.revisions())
	})
}

// A worker deleted from outside: RoleRecreate and None create the worker
// again; ServingGroupRecreate recreates the whole group (rule 6), counted
// as a recovery.
func TestSimWorkerDeletedExternally(t *testing.T) {
	cases := []struct {
		pol       v1beta1.RecoveryPolicy
		deletedBy map[int32][]string
		stamps    map[int32][]int32
	}{
		{v1beta1.ServingGroupRecreate, map[int32][]string{1: {ReasonRecreatingGroup + "@2"}}, map[int32][]int32{1: {1, 1, 1}}},
		{v1beta1.RoleRecreate, map[int32][]string{}, map[int32][]int32{1: {0}}},
		{v1beta1.RecoveryNone, map[int32][]string{}, map[int32][]int32{1: {0}}},
	}
	for _, tc := range cases {
		t.Run(string(tc.pol), func(t *testing.T) {
			s := newSim(t, mkSpec(3, multi(2), policy(tc.pol)))
			s.run(20)
			s.reset()
			s.tick = 0
			i := slices.IndexFunc(s.pods, func(p *simPod) bool { return p.Group == 1 && p.Worker == 2 })
			s.pods[i].Terminating, s.pods[i].deletedAt = true, s.tick
			s.hurt[1] = true
			s.run(20)
			assert.Equal(t, tc.deletedBy, s.deletedBy, "what is deleted in response")
			assert.Equal(t, tc.stamps, s.stamps, "what is created again, with its recovery count")
		})
	}
}

func TestSimFailingPod(t *testing.T) {
	leaderOf1 := func(p Pod) bool { return p.Group == 1 && p.Role == RoleLeader }
	cases := []struct {
		pol       v1beta1.RecoveryPolicy
		failPhase bool
		perRecov  int // pods deleted per recovery
		recovers  bool
	}{
		{v1beta1.ServingGroupRecreate, false, 3, true},
		{v1beta1.RoleRecreate, false, 1, true},
		{v1beta1.RecoveryNone, false, 0, false},
		{v1beta1.RecoveryNone, true, 1, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s failed=%v", tc.pol, tc.failPhase), func(t *testing.T) {
			s := newSim(t, mkSpec(3, multi(2), policy(tc.pol)))
			s.run(20)
			s.reset()
			s.crashPod, s.failPhase, s.hurt[1] = leaderOf1, tc.failPhase, true
			s.runFor(200)
			if !tc.recovers {
				assert.Empty(t, s.recoveries)
				assert.Empty(t, s.deletedBy)
				return
			}
			rec := s.recoveries[1]
			require.Len(t, rec, 5, "recoveries at ticks %v", rec)
			assert.Equal(t, []int{10, 20, 40, 80}, diffs(rec), "delays of 10s, 20s, 40s, 80s")
			assert.Len(t, s.stamps[1], 5*tc.perRecov, "each recovery recreates what it deleted")
			assert.Equal(t, []int32{1, 2, 3, 4, 5}, slices.Compact(slices.Clone(s.stamps[1])), "stamped with the count")
			assert.Equal(t, []int32{1}, slices.Collect(maps.Keys(s.deletedBy)), "only group 1 is touched")
			assert.Contains(t, s.events, Event{Type: EventWarning, Reason: ReasonBackOff,
				Message: "engine: group 1 failed 4 times in a row; next recreate in 1m20s"})
		})
	}
}

func TestSimControllerRestartKeepsTheCount(t *testing.T) {
	s := newSim(t, mkSpec(2, policy(v1beta1.ServingGroupRecreate)))
	s.run(20)
	s.reset()
	s.crashPod, s.hurt[1] = func(p Pod) bool { return p.Group == 1 }, true
	for len(s.recoveries[1]) < 3 {
		s.step()
		require.Less(t, s.tick, 200)
	}
	// Let the third incarnation crash, then lose the memory.
	for range 5 {
		s.step()
	}
	require.Len(t, s.recoveries[1], 3)
	s.memory = nil
	restart := s.tick
	for len(s.recoveries[1]) < 4 {
		s.step()
		require.Less(t, s.tick, 300)
	}
	assert.Equal(t, restart+40, s.recoveries[1][3], "the 4th recovery waits 40s, counted from the restart")
	s.step() // terminating
	s.step() // gone: created again
	assert.Equal(t, []int32{1, 2, 3, 4}, s.stamps[1], "the recreated pods carry the count on")
}

func TestSimUnhealthyOutdatedGroupGoesFirst(t *testing.T) {
	s := startSim(t, mkSpec(4))
	// Group 1 stops being Ready (a hung engine), outside the planner.
	for _, p := range s.pods {
		if p.Group == 1 {
			p.Ready = false
		}
	}
	s.readyAfter["old"] = -1
	s.hurt[1] = true
	s.spec.Revision = "new"
	st := s.step()
	assert.Equal(t, []PodRef{{Name: "e-1", UID: s.uidOf("e-1", st), Group: 1, Reason: ReasonRollingGroup}}, st.Delete)
	s.run(100)
	assert.Equal(t, []int32{1, 3, 2, 0}, s.rolled)
}

func (s *sim) uidOf(name string, st Step) string {
	for _, d := range st.Delete {
		if d.Name == name {
			return d.UID
		}
	}
	return ""
}

func TestSimShapeChangeRollsGroupByGroup(t *testing.T) {
	cases := []struct {
		name     string
		from, to func(*Spec)
	}{
		{"workers 1 to 2", multi(1), multi(2)},
		{"workers 2 to 1", multi(2), multi(1)},
		{"single pods to leader and worker", func(*Spec) {}, multi(1)},
		{"leader and worker to single pods", multi(1), func(s *Spec) { s.MultiNode, s.Workers = false, 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, mkSpec(3, tc.from))
			tc.to(&s.spec)
			s.spec.Revision = "new"
			s.run(60)
			assert.Equal(t, []int32{2, 1, 0}, s.rolled)
			assert.Equal(t, int32(1), s.maxUnavail)
		})
	}
}
