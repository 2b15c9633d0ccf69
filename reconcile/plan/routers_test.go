package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

func pairedTo(q string) func(*Pod) { return func(p *Pod) { p.Pairing = q } }

func routerSpec(replicas int32) Spec {
	s := mkSpec(replicas)
	s.Component, s.Revision = v1beta1.ComponentRouter, "r1"
	return s
}

// rp is RouterPair.
func rp(current string, l map[string]bool) *Pair {
	if current == "" {
		return nil
	}
	return &Pair{Pairing: current, Router: true, Live: l}
}

// rpRetire is rp with the pairings whose last group a step holds for
// their routers (rule 13).
func rpRetire(current string, l, retire map[string]bool) *Pair {
	p := rp(current, l)
	p.Retire = retire
	return p
}

func live(qs ...string) map[string]bool {
	out := map[string]bool{}
	for _, q := range qs {
		out[q] = true
	}
	return out
}

// TestNextRouters is rule 12 (Next with RouterPair) step by step.
func TestNextRouters(t *testing.T) {
	type want struct {
		create  []PodID
		deletes []string // name/reason
		ready   int32
	}
	tests := []struct {
		name     string
		replicas int32
		pods     []Pod
		rp       *Pair
		want     want
	}{
		{name: "without a pairing it is Next", replicas: 1, rp: rp("", nil),
			want: want{create: []PodID{{Group: 0}}}},
		{name: "a new service's router carries the current pairing", replicas: 1, rp: rp("B", nil),
			want: want{create: []PodID{{Group: 0, Pairing: "B"}}}},
		{name: "at rest nothing happens", replicas: 2, rp: rp("B", live("B")),
			pods: []Pod{single(0, "r1", pairedTo("B")), single(1, "r1", pairedTo("B"))}, want: want{ready: 2}},
		{name: "a rollout starts: the old pairing keeps its router, the new one gets its own at a free ordinal", replicas: 1,
			rp:   rp("B", live("A", "B")),
			pods: []Pod{single(0, "r1", pairedTo("A"))},
			want: want{create: []PodID{{Group: 1, Pairing: "B"}}, ready: 1}},
		{name: "a new pairing with no group yet still gets its router", replicas: 1,
			rp:   rp("B", live("A")),
			pods: []Pod{single(0, "r1", pairedTo("A"))},
			want: want{create: []PodID{{Group: 1, Pairing: "B"}}, ready: 1}},
		{name: "both pairings serve: both routers stay", replicas: 1,
			rp:   rp("B", live("A", "B")),
			pods: []Pod{single(0, "r1", pairedTo("A")), single(1, "r1", pairedTo("B"), notReady)},
			want: want{ready: 1}},
		{name: "the old pairing has no prefill or no decode group left: its routers go", replicas: 1,
			rp:   rp("B", live("B")),
			pods: []Pod{single(0, "r1", pairedTo("A")), single(1, "r1", pairedTo("B")), single(2, "r1", pairedTo("A"), notReady)},
			want: want{deletes: []string{"e-0/PairingGone", "e-2/PairingGone"}, ready: 1}},
		{name: "a step holds the old pairing's last group and the new one is served: its router goes first", replicas: 1,
			rp:   rpRetire("B", live("A", "B"), live("A")),
			pods: []Pod{single(0, "r1", pairedTo("A")), single(1, "r1", pairedTo("B"))},
			want: want{deletes: []string{"e-0/RouterRetired"}, ready: 1}},
		{name: "a step holds the old pairing's last group but the new one is not served: its router stays", replicas: 1,
			rp:   rpRetire("B", live("A", "B"), live("A")),
			pods: []Pod{single(0, "r1", pairedTo("A")), single(1, "r1", pairedTo("B"), notReady)},
			want: want{ready: 1}},
		{name: "a terminating router of the current pairing does not serve it", replicas: 1,
			rp:   rpRetire("B", live("A", "B"), live("A")),
			pods: []Pod{single(0, "r1", pairedTo("A")), single(1, "r1", pairedTo("B"), terminating)},
			want: want{ready: 1}},
		{name: "a terminating router of another pairing holds its ordinal", replicas: 2,
			rp:   rp("B", live("B")),
			pods: []Pod{single(0, "r1", pairedTo("A"), terminating), single(2, "r1", pairedTo("B"))},
			want: want{create: []PodID{{Group: 1, Pairing: "B"}}, ready: 1}},
		{name: "routers made before pairings roll to the current one", replicas: 1,
			rp:   rp("B", live("B")),
			pods: []Pod{single(0, "r1")},
			want: want{deletes: []string{"e-0/RollingGroup"}, ready: 1}},
		{name: "a new router revision rolls the current pairing's routers only", replicas: 1,
			rp:   rp("B", live("A", "B")),
			pods: []Pod{single(0, "r0", pairedTo("A")), single(1, "r0", pairedTo("B"))},
			want: want{deletes: []string{"e-1/RollingGroup"}, ready: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := routerSpec(tc.replicas)
			spec.Pair = tc.rp
			step := Next(spec, tc.pods, nil, t0)
			for i := range step.Create {
				step.Create[i].Revision = ""
			}
			assert.Equal(t, tc.want.create, step.Create)
			var dels []string
			for _, d := range step.Delete {
				dels = append(dels, d.Name+"/"+d.Reason)
			}
			assert.Equal(t, tc.want.deletes, dels)
			if tc.rp != nil {
				assert.Equal(t, tc.want.ready, step.Status.Ready)
				assert.Nil(t, step.Pairs)
			}
		})
	}
}

// TestNextRoutersDeterministic: the order of the pods does not matter
// (rule 7).
func TestNextRoutersDeterministic(t *testing.T) {
	pods := []Pod{single(2, "r1", pairedTo("A")), single(0, "r1", pairedTo("C")), single(1, "r1", pairedTo("B"), notReady)}
	spec := routerSpec(2)
	spec.Pair = rp("B", live("B"))
	a := Next(spec, pods, nil, t0)
	b := Next(spec, []Pod{pods[1], pods[2], pods[0]}, nil, t0)
	require.Equal(t, a, b)
	assert.Len(t, a.Delete, 2)
	assert.Equal(t, []PodID{{Group: 3, Pairing: "B", Revision: ""}}, clearRev(a.Create))
}

func clearRev(ids []PodID) []PodID {
	for i := range ids {
		ids[i].Revision = ""
	}
	return ids
}

func TestLivePairs(t *testing.T) {
	got := LivePairs(map[string]Range{"A": {Live: 1}, "B": {Live: 1}, "C": {}, "D": {Live: 2}},
		map[string]Range{"A": {Live: 3}, "B": {Live: 0}, "C": {Live: 2}})
	assert.Equal(t, live("A"), got, "a pairing with no live prefill or no live decode group has nothing to route")
}

// TestRoutedPairs: the pairings other than the current one with a router
// pod, terminating or not (rule 13); Served: a router of the current
// pairing is Ready and not terminating.
func TestRoutedPairs(t *testing.T) {
	routers := []Pod{single(0, "r", pairedTo("B"), notReady), single(1, "r", pairedTo("A"), terminating),
		single(2, "r", pairedTo("C"), notReady), single(3, "r")}
	assert.Equal(t, live("A", "C"), RoutedPairs("B", routers), "a router without a pairing is not this rule's")
	assert.Nil(t, RoutedPairs("", routers), "no pairing, no rule")
	assert.False(t, Served("B", routers), "B's router is not Ready")
	assert.True(t, Served("B", append(routers, single(4, "r", pairedTo("B")))))
	assert.False(t, Served("B", []Pod{single(0, "r", pairedTo("B"), terminating)}), "a terminating router does not serve")
	assert.False(t, Served("", []Pod{single(0, "r")}))
}

// TestRouterFirst: the engine (or the decoder) keeps the last live group of
// a retiring pairing until its routers are gone, says so, and names the
// pairing in Step.RouterFirst; other groups of that pairing roll as usual
// (rule 13).
func TestRouterFirst(t *testing.T) {
	spec := func(routed map[string]bool, served bool) Spec {
		s := mkSpec(2)
		s.Revision = "B"
		s.MaxUnavailable = intstr.FromInt32(2)
		s.Pair = &Pair{Pairing: "B", Prefill: true, Routed: routed, Served: served,
			Other: map[string]Range{"A": {Live: 1}, "B": {Live: 1}}} // both pairings have a decode
		return s
	}
	rolled := func(st Step) []string {
		var out []string
		for _, d := range st.Delete {
			out = append(out, d.Name+"/"+d.Reason)
		}
		return out
	}
	twoOld := []Pod{single(0, "A", pairedTo("A")), single(1, "A", pairedTo("A"))}

	st := Next(spec(nil, true), twoOld, nil, t0)
	assert.Equal(t, []string{"e-0/RollingGroup", "e-1/RollingGroup"}, rolled(st), "pairing A has no router: both roll")
	assert.Nil(t, st.RouterFirst)

	st = Next(spec(live("A"), true), twoOld, nil, t0)
	assert.Equal(t, []string{"e-1/RollingGroup"}, rolled(st), "the last group of pairing A waits for its router")
	assert.Equal(t, live("A"), st.RouterFirst)
	require.NotEmpty(t, st.Events)
	assert.Contains(t, st.Events[len(st.Events)-1].Message, `deleting group 0 waits: it is the last of pairing "A"`)
	assert.Equal(t, ReasonRouterFirst, st.Events[len(st.Events)-1].Reason)

	st = Next(spec(live("C"), true), twoOld, nil, t0)
	assert.Len(t, st.Delete, 2, "another pairing's router holds nothing of A")
	assert.Nil(t, st.RouterFirst)

	st = Next(spec(live("A"), false), twoOld, nil, t0)
	assert.Len(t, st.Delete, 2, "B is not served and has no group of this role: nothing to wait for")
	assert.Nil(t, st.RouterFirst)

	noDecode := spec(live("A"), true)
	noDecode.Pair.Other = map[string]Range{"B": {Live: 1}}
	st = Next(noDecode, twoOld, nil, t0)
	assert.Len(t, st.Delete, 2, "pairing A has no decode: its router serves nothing and goes by rule 12, nothing waits for it")

	oneEach := []Pod{single(0, "A", pairedTo("A")), single(1, "B", pairedTo("B"), notReady)}
	st = Next(spec(live("A"), false), oneEach, nil, t0)
	assert.Empty(t, st.Delete, "B is not served yet but has a group of this role: A's last waits for B's router")
	assert.Equal(t, live("A"), st.RouterFirst)
}
