package servinggroups

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// ratioTopology applies spec.prefillDecodeRatio to the topology: the
// decoder's replicas follow the engine's (v1beta1.PrefillDecodeRatio's
// DecodeFor), within the decoder's [minReplicas, maxReplicas]. So the
// scale subresource, which writes spec.engine.replicas, scales both. The
// router's replicas, unless spec.router.replicas sets them, are one per
// ratio unit (routerUnits), within the router's bounds (plan rule 12).
func ratioTopology(isvc *v1beta1.InferenceService, topo []merge.ComponentTopology) {
	r := isvc.Spec.PrefillDecodeRatio
	e, d := componentIndex(topo, v1beta1.ComponentEngine), componentIndex(topo, v1beta1.ComponentDecoder)
	if r == nil || e < 0 || d < 0 {
		return
	}
	topo[d].Replicas = within(r.DecodeFor(topo[e].Replicas), topo[d])
	if ri := componentIndex(topo, v1beta1.ComponentRouter); ri >= 0 && (isvc.Spec.Router == nil || isvc.Spec.Router.Replicas == nil) {
		topo[ri].Replicas = within(routerUnits(r, topo[e].Replicas), topo[ri])
	}
}

// routerUnits is one router per ratio unit: the engine's groups divided
// by the ratio's prefill side, rounded up (a 1:2 service of 2 engine
// groups has 2 units, a 2:1 service of 4 has 2).
func routerUnits(r *v1beta1.PrefillDecodeRatio, engine int32) int32 {
	if r.Prefill <= 0 || engine <= 0 {
		return 0
	}
	return (engine + r.Prefill - 1) / r.Prefill
}

// within clamps n to t's [minReplicas, maxReplicas] (0: unbounded).
func within(n int32, t merge.ComponentTopology) int32 {
	n = max(n, t.MinReplicas)
	if t.MaxReplicas > 0 {
		n = min(n, t.MaxReplicas)
	}
	return n
}

func componentIndex(topo []merge.ComponentTopology, component string) int {
	return slices.IndexFunc(topo, func(t merge.ComponentTopology) bool { return t.Component == component })
}

// componentRevisions computes every component's revision.
func componentRevisions(isvc *v1beta1.InferenceService, dec *decision, topo []merge.ComponentTopology) (map[string]string, error) {
	revs := map[string]string{}
	for _, t := range topo {
		rev, err := merge.Revision(dec.input(isvc, t.Component))
		if err != nil {
			return nil, &composeError{component: t.Component, err: err}
		}
		revs[t.Component] = rev
	}
	return revs, nil
}

// pairingOf is the pairing of a prefill/decode service's revisions; ""
// without a decoder.
func pairingOf(revs map[string]string) string {
	e, d := revs[v1beta1.ComponentEngine], revs[v1beta1.ComponentDecoder]
	if e == "" || d == "" {
		return ""
	}
	return merge.Pairing(e, d)
}

// pairFor is the planner's Pair for component t (plan rules 10 to 13):
// nil without a decoder. The engine is planned first, against the
// decoder's pods as they are; the decoder against the engine's step
// (earlier); both keep the last group of a pairing whose routers may be
// retired (rule 13). The router is planned last, per pairing: it keeps the routers
// of every pairing the engine's and the decoder's pods both have live
// groups of, and retires those whose last group the earlier steps hold.
func (c *Controller) pairFor(isvc *v1beta1.InferenceService, topo []merge.ComponentTopology, t merge.ComponentTopology,
	revs map[string]string, pods []*corev1.Pod, earlier map[string]plan.Step) *plan.Pair {
	pairing := pairingOf(revs)
	if pairing == "" {
		return nil
	}
	if t.Component == v1beta1.ComponentRouter {
		retire := map[string]bool{}
		for _, st := range earlier {
			maps.Copy(retire, st.RouterFirst)
		}
		return plan.RouterPair(pairing, c.roleRanges(isvc, topo, revs, pods, v1beta1.ComponentEngine),
			c.roleRanges(isvc, topo, revs, pods, v1beta1.ComponentDecoder), retire)
	}
	routers := observe(pods, v1beta1.ComponentRouter)
	p := &plan.Pair{Pairing: pairing, Prefill: t.Component == v1beta1.ComponentEngine, Ratio: isvc.Spec.PrefillDecodeRatio,
		Routed: plan.RoutedPairs(pairing, routers), Served: plan.Served(pairing, routers)}
	if p.Prefill {
		p.Other = c.roleRanges(isvc, topo, revs, pods, v1beta1.ComponentDecoder)
	} else {
		p.Other = earlier[v1beta1.ComponentEngine].Pairs
	}
	return p
}

// roleRanges are the Ranges of the engine's or the decoder's observed
// pods per pairing, before any step.
func (c *Controller) roleRanges(isvc *v1beta1.InferenceService, topo []merge.ComponentTopology, revs map[string]string,
	pods []*corev1.Pod, component string) map[string]plan.Range {
	i := componentIndex(topo, component)
	if i < 0 {
		return nil
	}
	return plan.PairRanges(planSpec(isvc, topo[i], revs[component], c.opts), observe(pods, component))
}

// setPairings writes status.pairings (the live and Ready groups of each
// role per pairing, the current one first) and, with a ratio, the
// RatioWithinBounds condition naming the first pairing outside it.
func setPairings(st *v1beta1.InferenceServiceStatus, isvc *v1beta1.InferenceService, results []componentResult) {
	revs := map[string]string{}
	ranges := map[string]map[string]plan.Range{}
	for _, r := range results {
		revs[r.topo.Component] = r.revision
		ranges[r.topo.Component] = r.step.Pairs
	}
	current := pairingOf(revs)
	st.Pairings = nil
	if current == "" {
		meta.RemoveStatusCondition(&st.Conditions, v1beta1.ConditionRatioWithinBounds)
		return
	}
	names := []string{current}
	for _, c := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder} {
		for q := range ranges[c] {
			if !slices.Contains(names, q) {
				names = append(names, q)
			}
		}
	}
	slices.Sort(names[1:])
	for _, q := range names {
		e, d := ranges[v1beta1.ComponentEngine][q], ranges[v1beta1.ComponentDecoder][q]
		st.Pairings = append(st.Pairings, v1beta1.PairingStatus{Pairing: q, Current: q == current,
			Prefill: e.Live, Decode: d.Live, ReadyPrefill: e.Ready, ReadyDecode: d.Ready})
	}
	setRatioCondition(st, isvc)
}

// setRatioCondition: RatioWithinBounds True while the Ready groups of
// every pairing are within the ratio's bounds, else False naming them.
func setRatioCondition(st *v1beta1.InferenceServiceStatus, isvc *v1beta1.InferenceService) {
	r := isvc.Spec.PrefillDecodeRatio
	if r == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1beta1.ConditionRatioWithinBounds)
		return
	}
	c := metav1.Condition{Type: v1beta1.ConditionRatioWithinBounds, Status: metav1.ConditionTrue,
		Reason: v1beta1.ReasonRatioWithinBounds, ObservedGeneration: isvc.Generation}
	var out, in []string
	for _, p := range st.Pairings {
		text := fmt.Sprintf("pairing %s: %d prefill and %d decode groups Ready (skew %d)", p.Pairing, p.ReadyPrefill, p.ReadyDecode, r.Skew(p.ReadyPrefill, p.ReadyDecode))
		if r.Within(p.ReadyPrefill, p.ReadyDecode) {
			in = append(in, text)
		} else {
			out = append(out, text)
		}
	}
	bounds := fmt.Sprintf("ratio %d:%d allows a skew of at most %d", r.Prefill, r.Decode, r.Tolerance())
	if len(out) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1beta1.ReasonRatioOutOfBounds
		c.Message = strings.Join(out, "; ") + "; the " + bounds
	} else {
		c.Message = strings.Join(in, "; ") + "; the " + bounds
	}
	meta.SetStatusCondition(&st.Conditions, c)
}
