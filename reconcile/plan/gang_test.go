package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

func gpus(n int64) corev1.ResourceList {
	return corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("4")}
}

// seedRoles are seed 003's example roles: prefill and decode, 4 replicas
// each, one worker per replica (its minTaskMember values are 2), with
// minRoleReplicas as the seed writes them (prefill/decode aliases).
func seedRoles(minRoles map[string]int32) []GangRole {
	return []GangRole{
		{Name: v1beta1.ComponentEngine, Replicas: 4, Workers: 1, MinReplicas: MinRoleReplicas(minRoles, v1beta1.ComponentEngine), LeaderRequests: gpus(8), WorkerRequests: gpus(8)},
		{Name: v1beta1.ComponentDecoder, Replicas: 4, Workers: 1, MinReplicas: MinRoleReplicas(minRoles, v1beta1.ComponentDecoder), LeaderRequests: gpus(4), WorkerRequests: gpus(4)},
	}
}

func TestGangFormulaSeed003(t *testing.T) {
	cases := []struct {
		name     string
		minRoles map[string]int32
		want     Gang
	}{
		{name: "minRoleReplicas {prefill: 2, decode: 2}", minRoles: map[string]int32{"prefill": 2, "decode": 2}, want: Gang{
			MinMember:     8, // 2×(1+1) + 2×(1+1)
			MinTaskMember: map[string]int32{"engine-0": 2, "engine-1": 2, "decoder-0": 2, "decoder-1": 2},
			MinResources:  corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("48"), corev1.ResourceCPU: resource.MustParse("32")},
			SubGroups:     []SubGroup{{Name: "engine", SubGroupSize: 2, MinSubGroups: 2}, {Name: "decoder", SubGroupSize: 2, MinSubGroups: 2}},
		}},
		{name: "minRoleReplicas {prefill: 2, decode: 1}", minRoles: map[string]int32{"prefill": 2, "decode": 1}, want: Gang{
			MinMember:     6,
			MinTaskMember: map[string]int32{"engine-0": 2, "engine-1": 2, "decoder-0": 2},
			MinResources:  corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("40"), corev1.ResourceCPU: resource.MustParse("24")},
			SubGroups:     []SubGroup{{Name: "engine", SubGroupSize: 2, MinSubGroups: 2}, {Name: "decoder", SubGroupSize: 2, MinSubGroups: 1}},
		}},
		{name: "no minRoleReplicas: every replica (replicas × Σ(1 + workers))", want: Gang{
			MinMember:     16,
			MinTaskMember: map[string]int32{"engine-0": 2, "engine-1": 2, "engine-2": 2, "engine-3": 2, "decoder-0": 2, "decoder-1": 2, "decoder-2": 2, "decoder-3": 2},
			MinResources:  corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("96"), corev1.ResourceCPU: resource.MustParse("64")},
			SubGroups:     []SubGroup{{Name: "engine", SubGroupSize: 2, MinSubGroups: 4}, {Name: "decoder", SubGroupSize: 2, MinSubGroups: 4}},
		}},
		{name: "berth's own names", minRoles: map[string]int32{"engine": 1, "decoder": 3}, want: Gang{
			MinMember:     8,
			MinTaskMember: map[string]int32{"engine-0": 2, "decoder-0": 2, "decoder-1": 2, "decoder-2": 2},
			MinResources:  corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("40"), corev1.ResourceCPU: resource.MustParse("32")},
			SubGroups:     []SubGroup{{Name: "engine", SubGroupSize: 2, MinSubGroups: 1}, {Name: "decoder", SubGroupSize: 2, MinSubGroups: 3}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := GangFormula(seedRoles(tc.minRoles))
			assert.True(t, tc.want.Equal(got), "want %+v\ngot  %+v", tc.want, got)
		})
	}
}

func TestGangFormulaMinAboveReplicas(t *testing.T) {
	// An autoscaler scaled the role below minRoleReplicas: the gang needs
	// what exists, min(minRoleReplicas, replicas).
	roles := []GangRole{{Name: "engine", Replicas: 1, MinReplicas: 3, Workers: 3, LeaderRequests: gpus(8), WorkerRequests: gpus(8)}}
	assert.Equal(t, int32(4), GangFormula(roles).MinMember)
	assert.Equal(t, map[string]int32{"engine-0": 4}, GangFormula(roles).MinTaskMember)
}

func TestGangForLowersToWhatExists(t *testing.T) {
	roles := []GangRole{{Name: "engine", Replicas: 1, Workers: 3, LeaderRequests: gpus(8), WorkerRequests: gpus(8)}}
	full := GangFormula(roles)
	// Nothing exists (the whole group is being recreated): the formula.
	empty := map[string]GangLive{"engine": {Leaders: map[int32]int32{}, Workers: map[int32]int32{}}}
	assert.True(t, full.Equal(GangFor(roles, empty)))
	// A worker was deleted (RoleRecreate): 3 pods exist, the gang asks 3.
	three := map[string]GangLive{"engine": {Leaders: map[int32]int32{0: 1}, Workers: map[int32]int32{0: 2}}}
	got := GangFor(roles, three)
	assert.Equal(t, int32(3), got.MinMember)
	assert.Equal(t, map[string]int32{"engine-0": 3}, got.MinTaskMember)
	assert.Equal(t, []SubGroup{{Name: "engine", SubGroupSize: 4, MinSubGroups: 0}}, got.SubGroups)
	assert.True(t, resource.MustParse("24").Equal(got.MinResources["nvidia.com/gpu"]))
}

func TestGangWrites(t *testing.T) {
	g := func(mm int32, tasks map[string]int32) Gang { return Gang{MinMember: mm, MinTaskMember: tasks} }
	cases := []struct {
		name          string
		cur, want     Gang
		before, after *Gang
	}{
		{name: "unchanged", cur: g(4, map[string]int32{"engine-0": 4}), want: g(4, map[string]int32{"engine-0": 4})},
		{name: "lower before", cur: g(8, map[string]int32{"engine-0": 4, "engine-1": 4}), want: g(4, map[string]int32{"engine-0": 4}),
			before: new(g(4, map[string]int32{"engine-0": 4}))},
		{name: "raise after", cur: g(4, map[string]int32{"engine-0": 4}), want: g(8, map[string]int32{"engine-0": 4, "engine-1": 4}),
			after: new(g(8, map[string]int32{"engine-0": 4, "engine-1": 4}))},
		{name: "a task moves: the meet first", cur: g(6, map[string]int32{"engine-0": 4, "engine-1": 2}), want: g(6, map[string]int32{"engine-0": 2, "engine-1": 4}),
			before: new(g(6, map[string]int32{"engine-0": 2, "engine-1": 2})), after: new(g(6, map[string]int32{"engine-0": 2, "engine-1": 4}))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, after := GangWrites(tc.cur, tc.want)
			assertGang(t, "before", tc.before, before)
			assertGang(t, "after", tc.after, after)
		})
	}
}

func assertGang(t *testing.T, what string, want, got *Gang) {
	t.Helper()
	if want == nil || got == nil {
		assert.Equal(t, want == nil, got == nil, "%s: want %+v, got %+v", what, want, got)
		return
	}
	assert.True(t, want.Equal(*got), "%s: want %+v, got %+v", what, want, got)
}

// gangSim runs one sim per role of a prefill/decode gang in lockstep and
// keeps the PodGroup as the reconciler does: before every step the parts
// GangWrites lowers, after it the parts it raises. After every write the
// PodGroup must be satisfiable by the live pods that exist at that
// moment: its minMember and each task at most what is live, unless
// nothing of the gang is live.
type gangSim struct {
	t     *testing.T
	sims  []*sim
	roles []GangRole
	pg    Gang
	made  bool
}

func (g *gangSim) step() {
	g.t.Helper()
	steps := make([]Step, len(g.sims))
	live := map[string]GangLive{}
	for i, s := range g.sims {
		steps[i] = Next(s.spec, s.observe(), s.memory, s.now)
		s.checkStep(steps[i])
		live[g.roles[i].Name] = GangLiveAfter(s.observe(), steps[i])
	}
	want := GangFor(g.roles, live)
	before, after := GangWrites(g.pg, want)
	if !g.made {
		before, after, g.made = &want, nil, true // created before the pods
	}
	if before != nil {
		g.pg = *before
		g.check("before the step")
	}
	for i, s := range g.sims {
		s.record(steps[i], s.readyGroups(nil))
		s.apply(steps[i])
	}
	g.check("after the step's pod writes")
	if after != nil {
		g.pg = *after
		g.check("after the step")
	}
	for i, s := range g.sims {
		s.advance()
		s.memory = steps[i].Backoff
		s.steps++
	}
}

// check: the PodGroup asks no more than the live pods of the world.
func (g *gangSim) check(when string) {
	g.t.Helper()
	var all int32
	tasks := map[string]int32{}
	for i, s := range g.sims {
		for _, p := range s.pods {
			if !p.Terminating && p.Phase != corev1.PodFailed && p.Phase != corev1.PodSucceeded {
				all++
				tasks[TaskName(g.roles[i].Name, p.Group)]++
			}
		}
	}
	if all == 0 {
		return
	}
	require.LessOrEqual(g.t, g.pg.MinMember, all, "tick %d, %s: minMember %d but %d live pods", g.sims[0].tick, when, g.pg.MinMember, all)
	for k, v := range g.pg.MinTaskMember {
		require.LessOrEqual(g.t, v, tasks[k], "tick %d, %s: minTaskMember[%s] %d but %d live pods", g.sims[0].tick, when, k, v, tasks[k])
	}
}

func (g *gangSim) run(n int) {
	g.t.Helper()
	for range n {
		done := true
		for _, s := range g.sims {
			done = done && s.converged()
		}
		if done {
			return
		}
		g.step()
	}
	for _, s := range g.sims {
		require.True(g.t, s.converged(), "not converged: %s", s.dump())
	}
}

func newGangSim(t *testing.T, specs []Spec, minRoles map[string]int32) *gangSim {
	g := &gangSim{t: t}
	for _, sp := range specs {
		g.sims = append(g.sims, newSim(t, sp))
	}
	g.setRoles(minRoles)
	return g
}

func (g *gangSim) setRoles(minRoles map[string]int32) {
	g.roles = nil
	for _, s := range g.sims {
		g.roles = append(g.roles, GangRole{Name: s.spec.Component, Replicas: s.spec.Replicas, Workers: s.spec.Workers,
			MinReplicas: MinRoleReplicas(minRoles, s.spec.Component), LeaderRequests: gpus(8), WorkerRequests: gpus(8)})
	}
}

func pdSpecs(replicas, workers int32) []Spec {
	return []Spec{
		{Component: v1beta1.ComponentEngine, Replicas: replicas, Workers: workers, MultiNode: true, Revision: "r1"},
		{Component: v1beta1.ComponentDecoder, Replicas: replicas, Workers: workers, MultiNode: true, Revision: "r1"},
	}
}

func TestGangSimRolloutScaleRecover(t *testing.T) {
	minRoles := map[string]int32{"prefill": 2, "decode": 1}
	g := newGangSim(t, pdSpecs(4, 1), minRoles)
	g.run(30)
	assert.True(t, GangFormula(g.roles).Equal(g.pg), "at rest the PodGroup is the formula: %+v", g.pg)

	// A rollout of both roles, maxUnavailable 2.
	for _, s := range g.sims {
		s.spec.Revision, s.spec.MaxUnavailable = "r2", intstr.FromInt32(2)
	}
	g.run(60)
	assert.True(t, GangFormula(g.roles).Equal(g.pg))

	// Scale the engine down to 1 and the decoder up to 5: minMember follows.
	g.sims[0].spec.Replicas, g.sims[1].spec.Replicas = 1, 5
	g.setRoles(minRoles)
	g.run(60)
	assert.Equal(t, int32(1*2+1*2), g.pg.MinMember) // min(2, 1) engine groups + 1 decoder group
	assert.True(t, GangFormula(g.roles).Equal(g.pg))

	// ServingGroupRecreate with a crashing decoder group: rebuilt whole.
	d := g.sims[1]
	d.spec.Recovery = v1beta1.ServingGroupRecreate
	d.crashPod = func(p Pod) bool { return p.Group == 0 && p.RecreateCount == 0 }
	for range 10 {
		g.step()
	}
	g.run(120)
	assert.NotEmpty(t, d.recoveries[0], "group 0 was recovered")
	assert.True(t, GangFormula(g.roles).Equal(g.pg))
}

func TestGangSimSingleGroupRoleRecreate(t *testing.T) {
	// A service without decoder: one PodGroup per engine group. A worker
	// fails and ends Failed; RoleRecreate replaces it while the gang
	// asks no more than exists.
	sp := Spec{Component: v1beta1.ComponentEngine, Replicas: 1, Workers: 3, MultiNode: true, Revision: "r1"}
	g := newGangSim(t, []Spec{sp}, nil)
	g.roles[0].Replicas = 1
	g.run(20)
	s := g.sims[0]
	s.failPhase = true
	s.crashPod = func(p Pod) bool { return p.Worker == 2 && p.RecreateCount == 0 && p.Role == RoleWorker }
	for range 3 {
		g.step()
	}
	s.crashPod = nil
	g.run(60)
	assert.Equal(t, int32(4), g.pg.MinMember)
}

func TestChooseGang(t *testing.T) {
	const cos = "scheduler-plugins-scheduler"
	vol := &v1beta1.GangPolicy{Scheduler: v1beta1.GangSchedulerVolcano}
	cases := []struct {
		name       string
		policy     *v1beta1.GangPolicy
		schedulers map[string]string
		want       GangChoice
	}{
		{name: "default scheduler, no policy: off", schedulers: map[string]string{"engine": ""}},
		{name: "pods use volcano", schedulers: map[string]string{"engine": "volcano"}, want: GangChoice{Backend: v1beta1.GangSchedulerVolcano}},
		{name: "pods use coscheduling", schedulers: map[string]string{"engine": cos, "decoder": cos}, want: GangChoice{Backend: v1beta1.GangSchedulerCoscheduling}},
		{name: "policy alone: Volcano, set on pods", policy: &v1beta1.GangPolicy{}, schedulers: map[string]string{"engine": "", "decoder": ""},
			want: GangChoice{Backend: v1beta1.GangSchedulerVolcano, SchedulerName: "volcano"}},
		{name: "policy follows the pods", policy: &v1beta1.GangPolicy{}, schedulers: map[string]string{"engine": cos, "decoder": ""},
			want: GangChoice{Backend: v1beta1.GangSchedulerCoscheduling, SchedulerName: cos}},
		{name: "policy's scheduler against the pods'", policy: vol, schedulers: map[string]string{"engine": cos},
			want: GangChoice{Problem: `engine pods use scheduler-plugins-scheduler: a Volcano gang needs every pod of the gang to use schedulerName "volcano" (spec.gangPolicy); set the same schedulerName on the runtime's or service's engine and decoder, or change spec.gangPolicy.scheduler`}},
		{name: "prefill on volcano, decode on the default scheduler", schedulers: map[string]string{"engine": "volcano", "decoder": ""},
			want: GangChoice{Problem: `decoder pods use the default scheduler, engine pods use volcano: a Volcano gang needs every pod of the gang to use schedulerName "volcano"; set the same schedulerName on the runtime's or service's engine and decoder, or change spec.gangPolicy.scheduler`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ChooseGang(tc.policy, tc.schedulers, cos))
		})
	}
}
