package servinggroups

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

func TestRatioTopology(t *testing.T) {
	one := int32(1)
	r12 := &v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 2, MaxSkew: &one}
	cases := []struct {
		name         string
		ratio        *v1beta1.PrefillDecodeRatio
		engine, dMin int32
		dMax, want   int32
	}{
		{"1:2 of 2", r12, 2, 1, 0, 4},
		{"1:2 of 4", r12, 4, 1, 0, 8},
		{"capped by maxReplicas", r12, 4, 1, 6, 6},
		{"raised to minReplicas", r12, 0, 1, 0, 1},
		{"no ratio: as the topology says", nil, 4, 1, 0, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isvc := &v1beta1.InferenceService{Spec: v1beta1.InferenceServiceSpec{PrefillDecodeRatio: c.ratio}}
			topo := []merge.ComponentTopology{
				{Component: v1beta1.ComponentEngine, Replicas: c.engine},
				{Component: v1beta1.ComponentDecoder, Replicas: 3, MinReplicas: c.dMin, MaxReplicas: c.dMax},
				{Component: v1beta1.ComponentRouter, Replicas: 1},
			}
			ratioTopology(isvc, topo)
			assert.Equal(t, c.want, topo[1].Replicas)
			assert.Equal(t, c.engine, topo[0].Replicas, "the engine is the user's")
			if c.ratio == nil {
				assert.EqualValues(t, 1, topo[2].Replicas, "the router is left alone")
			}
		})
	}
}

func TestSetPairings(t *testing.T) {
	one := int32(1)
	isvc := &v1beta1.InferenceService{Spec: v1beta1.InferenceServiceSpec{
		PrefillDecodeRatio: &v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 2, MaxSkew: &one}}}
	isvc.Generation = 3
	current := merge.Pairing("e2", "d2")
	results := []componentResult{
		{topo: merge.ComponentTopology{Component: v1beta1.ComponentEngine}, revision: "e2",
			step: plan.Step{Pairs: map[string]plan.Range{"old": {Live: 1, Ready: 1}, current: {Live: 1, Ready: 1}}}},
		{topo: merge.ComponentTopology{Component: v1beta1.ComponentDecoder}, revision: "d2",
			step: plan.Step{Pairs: map[string]plan.Range{"old": {Live: 3, Ready: 3}, current: {Live: 2, Ready: 1}}}},
		{topo: merge.ComponentTopology{Component: v1beta1.ComponentRouter}, revision: "r"},
	}
	var st v1beta1.InferenceServiceStatus
	setPairings(&st, isvc, results)
	require.Len(t, st.Pairings, 2)
	assert.Equal(t, v1beta1.PairingStatus{Pairing: current, Current: true, Prefill: 1, Decode: 2, ReadyPrefill: 1, ReadyDecode: 1}, st.Pairings[0])
	assert.Equal(t, v1beta1.PairingStatus{Pairing: "old", Prefill: 1, Decode: 3, ReadyPrefill: 1, ReadyDecode: 3}, st.Pairings[1])
	c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionRatioWithinBounds)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status, c.Message) // 1:1 and 1:3 are one decode away from 1:2
	assert.EqualValues(t, 3, c.ObservedGeneration)

	results[1].step.Pairs["old"] = plan.Range{Live: 4, Ready: 4}
	setPairings(&st, isvc, results)
	c = meta.FindStatusCondition(st.Conditions, v1beta1.ConditionRatioWithinBounds)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, v1beta1.ReasonRatioOutOfBounds, c.Reason)
	assert.True(t, strings.HasPrefix(c.Message, `pairing old: 1 prefill and 4 decode groups Ready (skew 2); the ratio 1:2 allows a skew of at most 1`), c.Message)

	isvc.Spec.PrefillDecodeRatio = nil
	setPairings(&st, isvc, results)
	assert.Nil(t, meta.FindStatusCondition(st.Conditions, v1beta1.ConditionRatioWithinBounds), "no ratio, no condition")
	assert.Len(t, st.Pairings, 2, "pairings are listed without a ratio too")

	setPairings(&st, isvc, results[:1])
	assert.Empty(t, st.Pairings, "no decoder, no pairings")
}

// TestRouterPair: the router of a prefill/decode service is planned per
// pairing (plan rule 12), knowing the pairings the engine's and the
// decoder's pods both have live groups of; without a decoder it is planned
// as before.
func TestRouterPair(t *testing.T) {
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	topo := []merge.ComponentTopology{
		{Component: v1beta1.ComponentEngine, Replicas: 1},
		{Component: v1beta1.ComponentDecoder, Replicas: 1},
		{Component: v1beta1.ComponentRouter, Replicas: 1},
	}
	revs := map[string]string{v1beta1.ComponentEngine: "e2", v1beta1.ComponentDecoder: "d2", v1beta1.ComponentRouter: "r"}
	pod := func(component string, group int, pairing string, deleted bool) *corev1.Pod {
		p := merge.GroupPod(isvc, topo[componentIndex(topo, component)], group, "", 0, merge.GroupPodOptions{Pairing: pairing})
		if deleted {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	pods := []*corev1.Pod{
		pod(v1beta1.ComponentEngine, 0, "old", false), pod(v1beta1.ComponentDecoder, 0, "old", false),
		pod(v1beta1.ComponentEngine, 1, "older", false), pod(v1beta1.ComponentDecoder, 1, "older", true),
		pod(v1beta1.ComponentDecoder, 2, "newer", false), pod(v1beta1.ComponentRouter, 0, "old", false),
	}
	c := &Controller{}
	got := c.pairFor(isvc, topo, topo[2], revs, pods, nil)
	require.NotNil(t, got)
	assert.True(t, got.Router)
	assert.Equal(t, merge.Pairing("e2", "d2"), got.Pairing)
	assert.Equal(t, map[string]bool{"old": true}, got.Live, "pairings with a live prefill and a live decode (a terminating group is not live)")
	assert.Empty(t, got.Retire)

	// Rule 13: the engine and the decoder know the pairings with a router
	// ("old") and whether a router of the current pairing is Ready; the
	// router retires the pairings whose last group the earlier steps hold.
	current := pod(v1beta1.ComponentRouter, 1, merge.Pairing("e2", "d2"), false)
	current.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	current.Status.Phase = corev1.PodRunning
	withCurrent := append(slices.Clone(pods), current)
	eng := c.pairFor(isvc, topo, topo[0], revs, withCurrent, nil)
	assert.Equal(t, map[string]bool{"old": true}, eng.Routed)
	assert.True(t, eng.Served)
	assert.False(t, c.pairFor(isvc, topo, topo[0], revs, pods, nil).Served, "the current pairing has no Ready router")
	earlier := map[string]plan.Step{v1beta1.ComponentEngine: {RouterFirst: map[string]bool{"old": true}}, v1beta1.ComponentDecoder: {}}
	assert.Equal(t, map[string]bool{"old": true}, c.pairFor(isvc, topo, topo[2], revs, withCurrent, earlier).Retire)

	assert.Nil(t, c.pairFor(isvc, []merge.ComponentTopology{topo[0], topo[2]}, topo[2], map[string]string{v1beta1.ComponentEngine: "e2"}, pods, nil))
}

// TestRatioRouters: with a ratio the router runs one replica per ratio
// unit (engine groups / prefill, rounded up) within its bounds, unless
// spec.router.replicas says otherwise.
func TestRatioRouters(t *testing.T) {
	one, two := int32(1), int32(2)
	cases := []struct {
		name            string
		prefill, decode int32
		engine          int32
		rMin, rMax      int32
		routerReplicas  *int32
		want            int32
	}{
		{"1:2 of 2", 1, 2, 2, 1, 0, nil, 2},
		{"1:2 of 4", 1, 2, 4, 1, 0, nil, 4},
		{"2:1 of 4", 2, 1, 4, 1, 0, nil, 2},
		{"2:3 of 3", 2, 3, 3, 1, 0, nil, 2},
		{"capped by maxReplicas", 1, 2, 4, 1, 3, nil, 3},
		{"raised to minReplicas", 1, 2, 0, 1, 0, nil, 1},
		{"spec.router.replicas wins", 1, 2, 4, 1, 0, &two, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isvc := &v1beta1.InferenceService{Spec: v1beta1.InferenceServiceSpec{
				PrefillDecodeRatio: &v1beta1.PrefillDecodeRatio{Prefill: c.prefill, Decode: c.decode, MaxSkew: &one}}}
			if c.routerReplicas != nil {
				isvc.Spec.Router = &v1beta1.RouterSpec{}
				isvc.Spec.Router.Replicas = c.routerReplicas
			}
			topo := []merge.ComponentTopology{
				{Component: v1beta1.ComponentEngine, Replicas: c.engine},
				{Component: v1beta1.ComponentDecoder, Replicas: 1, MinReplicas: 1},
				{Component: v1beta1.ComponentRouter, Replicas: 1, MinReplicas: c.rMin, MaxReplicas: c.rMax},
			}
			ratioTopology(isvc, topo)
			assert.Equal(t, c.want, topo[2].Replicas)
		})
	}
}
