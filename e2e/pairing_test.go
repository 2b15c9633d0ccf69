package e2e

// Prefill/decode pairings and the prefill:decode ratio on the local plane:
// engine and decoder pods carry the pairing of the pair's revisions, a
// rollout moves both roles to a new pairing in steps that keep every
// pairing's Ready groups within the ratio, and scaling the engine through
// the scale subresource scales the decoder with it.

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/e2eutil"
)

// routerSelectors are the discovery selectors of the shipped
// prefill/decode runtimes' routers: the service's engine (prefill) and
// decoder (decode) pods of the router's own pairing.
var routerSelectors = []string{
	"--prefill-selector", "ome.io/component=engine", "ome.io/inferenceservice={{.Name}}", "ome.io/pairing={{.Pairing}}",
	"--decode-selector", "ome.io/component=decoder", "ome.io/inferenceservice={{.Name}}", "ome.io/pairing={{.Pairing}}",
}

// ratioService is a 1:2 (maxSkew 1) prefill/decode service with engine
// groups, its decoder following the ratio; its router selects as the
// shipped runtimes' do (routerSelectors).
func ratioService(t *testing.T, ns, name string, engine int32) *v1beta1.ClusterServingRuntime {
	t.Helper()
	obj := MakeRuntime(uniqueName("e2e-pdratio")).PD().Obj()
	r := obj.Spec.RouterConfig.Runner
	r.Args = append(r.Args, routerSelectors...)
	rt := createRuntime(t, obj)
	svc := MakeService(ns, name).Runtime(rt.Name).Replicas(engine).Obj()
	one := int32(1)
	svc.Spec.PrefillDecodeRatio = &v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 2, MaxSkew: &one}
	createService(t, svc)
	return rt
}

// pairReady reports a service whose engine and decoder groups are all
// Ready at one pairing, engine groups Ready.
func pairReady(engine int32) func(*v1beta1.InferenceService) bool {
	return func(s *v1beta1.InferenceService) bool {
		e, d := s.Status.Components[v1beta1.ComponentEngine], s.Status.Components[v1beta1.ComponentDecoder]
		return serviceReady(s) && e.ReadyReplicas == engine && e.Replicas == engine && e.UpdatedReplicas == engine &&
			d.ReadyReplicas == 2*engine && d.Replicas == 2*engine && d.UpdatedReplicas == 2*engine &&
			len(s.Status.Pairings) == 1 && s.Status.Pairings[0].ReadyPrefill == engine && s.Status.Pairings[0].ReadyDecode == 2*engine &&
			conditionIs(s, v1beta1.ConditionRatioWithinBounds, metav1.ConditionTrue)
	}
}

// ratioWatch is what the pod watch saw of the pairings.
type ratioWatch struct {
	worstSkew   int64  // the largest skew of any pairing's Ready groups
	worstAt     string // when
	unavailable map[string]int
	pairings    map[string]bool
	// notServing: moments with no pairing that has a Ready prefill and a
	// Ready decode group.
	notServing []string
	// routers: what the router pods' selectors matched (routerMoment).
	routers routerWatch
}

// routerWatch is what the watch saw of the routers (plan rule 12).
type routerWatch struct {
	// states counts the moments checked; servedBoth those at which two
	// pairings each had a Ready pair and a router.
	states, servedBoth int
	// mixed: moments at which a router's selectors matched engine or
	// decoder pods of two pairings, or of a pairing not its own.
	mixed []string
	// unrouted: moments at which a pairing with a live engine pod and a
	// live decoder pod had no live router.
	unrouted []string
	// routerPairings are the pairings the router pods carried.
	routerPairings map[string]bool
}

// replayRatio checks every moment of the watch: per pairing the Ready
// engine and decoder groups (single-pod groups), and per component the
// desired groups that are not Ready.
func replayRatio(t *testing.T, w *podWatch, r v1beta1.PrefillDecodeRatio, desired map[string]int) ratioWatch {
	t.Helper()
	out := ratioWatch{unavailable: map[string]int{}, pairings: map[string]bool{}}
	w.replay(t, func(state map[string]*corev1.Pod, ev podEvent) {
		ready := map[string]map[string]int32{}
		for _, c := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder} {
			ready[c] = map[string]int32{}
			n, _ := groupShape{component: c, groups: desired[c], size: 1}.unavailable(state)
			out.unavailable[c] = max(out.unavailable[c], n)
		}
		for _, p := range state {
			c, q := p.Labels[v1beta1.LabelComponent], p.Labels[v1beta1.LabelPairing]
			if c != v1beta1.ComponentEngine && c != v1beta1.ComponentDecoder {
				continue
			}
			out.pairings[q] = true
			if podServing(p) {
				ready[c][q]++
			}
		}
		serving := false
		for q := range out.pairings {
			pr, dr := ready[v1beta1.ComponentEngine][q], ready[v1beta1.ComponentDecoder][q]
			serving = serving || (pr > 0 && dr > 0)
			if s := r.Skew(pr, dr); s > out.worstSkew {
				out.worstSkew = s
				out.worstAt = fmt.Sprintf("pairing %q: %d prefill, %d decode Ready after %s %s", q, pr, dr, ev.Type, ev.Pod.Name)
			}
		}
		if !serving {
			out.notServing = append(out.notServing, fmt.Sprintf("%s %s", ev.Type, ev.Pod.Name))
		}
		out.routers.moment(state, ev, ready)
	})
	return out
}

// moment checks the routers at one moment of the watch: the pods each
// router pod's selectors (its --prefill-selector and --decode-selector
// items, as rendered into the pod) match carry its own pairing only, and
// every pairing with a live engine pod and a live decoder pod (so every
// pairing that serves) has a live router, unless another pairing's router
// serves (its router then retires before its last group).
func (rw *routerWatch) moment(state map[string]*corev1.Pod, ev podEvent, ready map[string]map[string]int32) {
	if rw.routerPairings == nil {
		rw.routerPairings = map[string]bool{}
	}
	rw.states++
	when := fmt.Sprintf("%s %s", ev.Type, ev.Pod.Name)
	routed := map[string]bool{}
	live := map[string]map[string]bool{v1beta1.ComponentEngine: {}, v1beta1.ComponentDecoder: {}}
	livePods := map[string][]string{}
	for _, p := range state {
		c := p.Labels[v1beta1.LabelComponent]
		if live[c] != nil && p.DeletionTimestamp == nil {
			live[c][p.Labels[v1beta1.LabelPairing]] = true
			livePods[p.Labels[v1beta1.LabelPairing]] = append(livePods[p.Labels[v1beta1.LabelPairing]], p.Name)
		}
		if c != v1beta1.ComponentRouter {
			continue
		}
		own := p.Labels[v1beta1.LabelPairing]
		rw.routerPairings[own] = true
		if p.DeletionTimestamp == nil {
			routed[own] = true
		}
		for _, sel := range e2eutil.RouterSelectors(p) {
			for q := range matchedPairings(state, sel) {
				if q != own {
					rw.mixed = append(rw.mixed, fmt.Sprintf("after %s: router %s (pairing %q) selects %v, which matches pods of pairing %q", when, p.Name, own, sel, q))
				}
			}
		}
	}
	var all []*corev1.Pod
	for _, p := range state {
		all = append(all, p)
	}
	served := e2eutil.ServedPairings(all)
	serving := 0
	for q := range live[v1beta1.ComponentEngine] {
		if !live[v1beta1.ComponentDecoder][q] {
			continue
		}
		// A pairing's router may retire before its last group once another
		// pairing's router serves (plan rule 13).
		if !routed[q] && (len(served) == 0 || served[q]) {
			rw.unrouted = append(rw.unrouted, fmt.Sprintf("after %s: pairing %q has live prefill and decode pods %v and no router", when, q, livePods[q]))
		}
		if ready[v1beta1.ComponentEngine][q] > 0 && ready[v1beta1.ComponentDecoder][q] > 0 && routed[q] {
			serving++
		}
	}
	if serving > 1 {
		rw.servedBoth++
	}
}

// matchedPairings are the ome.io/pairing values of the pods sel matches.
func matchedPairings(state map[string]*corev1.Pod, sel map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, p := range state {
		if labels.SelectorFromSet(sel).Matches(labels.Set(p.Labels)) {
			out[p.Labels[v1beta1.LabelPairing]] = true
		}
	}
	return out
}

// A 1:2 service (2 prefill, 4 decode groups) rolled to a new image: every
// engine and decoder pod carries the pairing; the watch never sees a
// pairing's Ready groups outside the ratio, more than maxUnavailable (1)
// groups of a role down, or a moment without a Ready prefill and decode
// of one pairing; status names the pairings.
func TestPrefillDecodeRatioRollout(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-pdratio")
	rt := ratioService(t, ns, "pd", 2)
	isvc := waitService(t, ns, "pd", "2 prefill and 4 decode groups Ready at one pairing", pairReady(2))
	oldPairing := isvc.Status.Pairings[0].Pairing
	assert.True(t, isvc.Status.Pairings[0].Current)
	// One router per ratio unit: 2 engines / 1 prefill.
	before := waitPods(t, ns, "pd", "2 engines, 4 decoders, 2 routers", podsNamed("pd-engine-0", "pd-engine-1",
		"pd-decoder-0", "pd-decoder-1", "pd-decoder-2", "pd-decoder-3", "pd-router-0", "pd-router-1"))
	for _, p := range before {
		assert.Equal(t, oldPairing, p.Labels[v1beta1.LabelPairing], "pod %s pairing", p.Name)
	}
	router := podByName(before, "pd-router-0")
	require.NotNil(t, router)
	assert.Equal(t, []map[string]string{
		{"ome.io/component": "engine", "ome.io/inferenceservice": "pd", "ome.io/pairing": oldPairing},
		{"ome.io/component": "decoder", "ome.io/inferenceservice": "pd", "ome.io/pairing": oldPairing},
	}, e2eutil.RouterSelectors(router), "the router's selectors, rendered for its pairing")

	w := startPodWatch(t, ns)
	updateRuntime(t, rt.Name, setRuntimeImage(e2eImageV2))
	isvc = waitService(t, ns, "pd", "rolled to a new pairing, all Ready", func(s *v1beta1.InferenceService) bool {
		return pairReady(2)(s) && s.Status.Pairings[0].Pairing != oldPairing
	})
	newPairing := isvc.Status.Pairings[0].Pairing
	// The new pairing's routers took the lowest free ordinals; the old
	// pairing's went with its last pair.
	after := waitPods(t, ns, "pd", "the rolled pods", podsNamed("pd-engine-0", "pd-engine-1",
		"pd-decoder-0", "pd-decoder-1", "pd-decoder-2", "pd-decoder-3", "pd-router-2", "pd-router-3"))
	for _, p := range after {
		assert.Equal(t, newPairing, p.Labels[v1beta1.LabelPairing], "pod %s pairing after the roll", p.Name)
		if p.Labels[v1beta1.LabelComponent] != v1beta1.ComponentRouter {
			assert.Equal(t, e2eImageV2, p.Spec.Containers[0].Image, "pod %s image", p.Name)
		}
	}
	assert.Equal(t, router.Annotations[v1beta1.AnnotationRevision], podByName(after, "pd-router-2").Annotations[v1beta1.AnnotationRevision],
		"the pairing is outside the router's revision")

	r := *getService(t, ns, "pd").Spec.PrefillDecodeRatio
	seen := replayRatio(t, w, r, map[string]int{v1beta1.ComponentEngine: 2, v1beta1.ComponentDecoder: 4})
	assert.LessOrEqual(t, seen.worstSkew, r.Tolerance(), "a pairing's Ready groups outside the ratio: %s", seen.worstAt)
	assert.Equal(t, map[string]bool{oldPairing: true, newPairing: true}, seen.pairings, "pairings the watch saw")
	for _, c := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder} {
		assert.LessOrEqual(t, seen.unavailable[c], 1, "%s: at most maxUnavailable groups down", c)
		assert.GreaterOrEqual(t, seen.unavailable[c], 1, "%s: a roll deletes before it creates; is the watch blind?", c)
	}
	assert.Empty(t, seen.notServing, "moments without a Ready prefill and decode of one pairing")
	rw := seen.routers
	assert.Empty(t, rw.mixed, "a router's selectors matched pods of another pairing")
	assert.Empty(t, rw.unrouted, "a pairing with live prefill and decode groups had no router")
	assert.Equal(t, map[string]bool{oldPairing: true, newPairing: true}, rw.routerPairings, "the routers' pairings")
	assert.Positive(t, rw.servedBoth, "no moment had both pairings serving, each through its own router")
	t.Logf("pairings %s → %s; worst skew %d (%s); most down: %v; routers checked at %d moments, both pairings served at %d",
		oldPairing, newPairing, seen.worstSkew, seen.worstAt, seen.unavailable, rw.states, rw.servedBoth)
}

// `kubectl scale` of the engine 2 → 4 brings the decoder 4 → 8 (the
// ratio) and the router 2 → 4 (one per ratio unit), and back to 2 removes
// the highest ordinals of all three; the ratio holds at every moment.
func TestPrefillDecodeRatioScale(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-pdscale")
	ratioService(t, ns, "pd", 2)
	waitService(t, ns, "pd", "2 prefill and 4 decode groups Ready", pairReady(2))
	names := func(engine int) []string {
		var out []string
		for g := range engine {
			out = append(out, fmt.Sprintf("pd-engine-%d", g))
		}
		for g := range 2 * engine {
			out = append(out, fmt.Sprintf("pd-decoder-%d", g))
		}
		for g := range engine { // one router per ratio unit
			out = append(out, fmt.Sprintf("pd-router-%d", g))
		}
		return out
	}
	pods := waitPods(t, ns, "pd", "2 engines, 4 decoders", podsNamed(names(2)...))
	r := *getService(t, ns, "pd").Spec.PrefillDecodeRatio
	for _, engine := range []int{4, 2} {
		ok := t.Run(fmt.Sprintf("engine to %d", engine), func(t *testing.T) {
			w := startPodWatch(t, ns)
			out, err := kubectl(t, "", "scale", "isvc", "pd", "-n", ns, "--replicas", fmt.Sprint(engine))
			require.NoError(t, err, out)
			waitService(t, ns, "pd", fmt.Sprintf("%d prefill and %d decode groups Ready", engine, 2*engine), pairReady(int32(engine)))
			after := waitPods(t, ns, "pd", "scaled pods", podsNamed(names(engine)...))
			for _, p := range after {
				if old := podByName(pods, p.Name); old != nil {
					assert.Equal(t, old.UID, p.UID, "pod %s is kept", p.Name)
				}
			}
			_, events, err := w.snapshot()
			require.NoError(t, err)
			var gone, want []string
			for _, p := range goneInOrder(events, uidSet(pods)) {
				gone = append(gone, p.Name)
			}
			for _, p := range pods {
				if podByName(after, p.Name) == nil {
					want = append(want, p.Name)
				}
			}
			sort.Strings(want)
			assert.ElementsMatch(t, want, gone, "pods deleted: the highest ordinals of both roles")
			seen := replayRatio(t, w, r, map[string]int{v1beta1.ComponentEngine: min(engine, len(pods)), v1beta1.ComponentDecoder: 0})
			assert.LessOrEqual(t, seen.worstSkew, r.Tolerance(), "the Ready groups outside the ratio: %s", seen.worstAt)
			assert.Empty(t, seen.notServing, "moments without a Ready prefill and decode")
			t.Logf("deleted %s; worst skew %d (%s)", strings.Join(gone, ", "), seen.worstSkew, seen.worstAt)
			pods = after
		})
		if !ok {
			return
		}
	}
}
