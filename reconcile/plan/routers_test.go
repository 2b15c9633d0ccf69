package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/api/v1beta1"
)

func pairedTo(q string) func(*Pod) { return func(p *Pod) { p.Pairing = q } }

func routerSpec(replicas int32) Spec {
	s := mkSpec(replicas)
	s.Component, s.Revision = v1beta1.ComponentRouter, "r1"
	return s
}

// rp is RouterPair.
func rp(current string, l map[string]bool) *Pair { return RouterPair(current, l) }

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
