package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

// paired sets a pod's pairing (and revision, as the pairing follows it in
// these tables).
func paired(q string) func(*Pod) { return func(p *Pod) { p.Pairing, p.Revision = q, q } }

// pairSpec is a single-pod engine (prefill) or decoder spec at pairing
// "new" with the other role's Ranges.
func pairSpec(prefill bool, replicas int32, r *v1beta1.PrefillDecodeRatio, other map[string]Range) Spec {
	c := v1beta1.ComponentDecoder
	if prefill {
		c = v1beta1.ComponentEngine
	}
	return Spec{Component: c, Replicas: replicas, Revision: "new",
		Pair: &Pair{Pairing: "new", Prefill: prefill, Ratio: r, Other: other}}
}

// readyRange is n Ready live groups.
func readyRange(n int32) Range { return Range{Live: n, Ready: n, Low: n, High: n} }

// TestRule11Table: which deletes and creates the ratio lets through, for
// a 1:2 ratio with maxSkew 1 (the larger role, decode, may be one group
// away from twice the prefill).
func TestRule11Table(t *testing.T) {
	r12 := ratio(1, 2, 1)
	cases := []struct {
		name    string
		spec    Spec
		pods    []Pod
		creates []int32 // groups created
		deletes []int32 // groups deleted
		held    bool    // a RatioHold event
	}{{
		name: "roll: the prefill waits (1 prefill for 4 decode is outside)",
		spec: pairSpec(true, 2, &r12, map[string]Range{"old": readyRange(4)}),
		pods: singles(2, "", paired("old")), held: true,
	}, {
		name: "roll: a decode goes first (2 prefill, 3 decode)",
		spec: pairSpec(false, 4, &r12, map[string]Range{"old": readyRange(2)}),
		pods: singles(4, "", paired("old")), deletes: []int32{3},
	}, {
		name: "roll: only one decode while the prefill may land too (2..2 prefill, 2..4 decode would reach 2:2)",
		spec: func() Spec {
			s := pairSpec(false, 4, &r12, map[string]Range{"old": readyRange(2)})
			s.MaxUnavailable = intstr.FromInt32(2)
			return s
		}(),
		pods: singles(4, "", paired("old")), deletes: []int32{3}, held: true,
	}, {
		name: "roll: the new pairing's first prefill waits for its decode to be Ready",
		spec: pairSpec(true, 2, &r12, map[string]Range{"old": readyRange(3), "new": {Live: 1, High: 1}}),
		pods: []Pod{single(0, "", paired("old"))}, held: true,
	}, {
		name: "roll: ... and is created once it is",
		spec: pairSpec(true, 2, &r12, map[string]Range{"old": readyRange(3), "new": readyRange(1)}),
		pods: []Pod{single(0, "", paired("old"))}, creates: []int32{1},
	}, {
		name: "scale up 2 to 4: the prefill waits for a decode",
		spec: pairSpec(true, 4, &r12, map[string]Range{"new": readyRange(4)}),
		pods: singles(2, "", paired("new")), held: true,
	}, {
		name: "scale up 4 to 8 decode: one decode at a time",
		spec: pairSpec(false, 8, &r12, map[string]Range{"new": readyRange(2)}),
		pods: singles(4, "", paired("new")), creates: []int32{4}, held: true,
	}, {
		name: "scale down 8 to 4 decode: the highest ordinal first",
		spec: pairSpec(false, 4, &r12, map[string]Range{"new": readyRange(4)}),
		pods: singles(8, "", paired("new")), deletes: []int32{7}, held: true,
	}, {
		name: "scale down 4 to 2 prefill after 7 decode: the highest ordinal",
		spec: pairSpec(true, 2, &r12, map[string]Range{"new": readyRange(7)}),
		pods: singles(4, "", paired("new")), deletes: []int32{3}, held: true,
	}, {
		name: "outside bounds already: a step that brings it closer is taken",
		spec: pairSpec(true, 2, &r12, map[string]Range{"new": readyRange(4)}),
		pods: nil, creates: []int32{0, 1},
	}, {
		name:    "no ratio: pairing only; another pairing is outdated and rolls",
		spec:    pairSpec(true, 2, nil, nil),
		pods:    []Pod{single(0, "new", func(p *Pod) { p.Pairing = "new" }), single(1, "new", func(p *Pod) { p.Pairing = "old" })},
		deletes: []int32{1},
	}, {
		name:    "not Ready groups of the old pairing go at once, ratio or not",
		spec:    pairSpec(false, 4, &r12, map[string]Range{"old": readyRange(2)}),
		pods:    cat(singles(2, "", paired("old")), []Pod{single(2, "", paired("old"), notReady), single(3, "", paired("old"), notReady)}),
		deletes: []int32{2, 3},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step := Next(c.spec, c.pods, nil, t0)
			var creates, deletes []int32
			for _, p := range step.Create {
				creates = append(creates, p.Group)
			}
			for _, p := range step.Delete {
				deletes = append(deletes, p.Group)
			}
			assert.Equal(t, c.creates, creates, "creates")
			assert.Equal(t, c.deletes, deletes, "deletes")
			held := false
			for _, e := range step.Events {
				held = held || e.Reason == ReasonRatioHold
			}
			assert.Equal(t, c.held, held, "RatioHold event: %v", step.Events)
		})
	}
}

// TestRule10PairRanges: Ranges count live and Ready groups per pairing,
// and a step's Pairs add its creates to High and its deletes to Low.
func TestRule10PairRanges(t *testing.T) {
	pods := cat(singles(2, "", paired("old")), []Pod{single(2, "", paired("new"), notReady)})
	spec := pairSpec(true, 3, nil, nil)
	assert.Equal(t, map[string]Range{"old": readyRange(2), "new": {Live: 1, High: 1}}, PairRanges(spec, pods))
	r12 := ratio(1, 2, 1)
	spec = pairSpec(false, 4, &r12, map[string]Range{"old": readyRange(2)})
	step := Next(spec, singles(4, "", paired("old")), nil, t0)
	assert.Equal(t, map[string]Range{"old": {Live: 4, Ready: 4, Low: 3, High: 4}}, step.Pairs)
	assert.Nil(t, Next(mkSpec(2), singles(2, "new"), nil, t0).Pairs, "no pair, no Pairs")
}
