package plan

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

// The pair simulation runs the engine's and the decoder's planner as the
// reconciler does (engine first, its Step.Pairs the decoder's Other) over a
// fake world of single-pod groups. A created pod becomes Ready after 1 to
// readyMax ticks (random, so Ready arrives in any order); a deleted pod is
// terminating for one tick, then gone. Every delete and every pod turning
// Ready is one observation, as a watch would see them: the step's deletes
// first, in a random order, then the pods turning Ready, in a random
// order (a pod that turns Ready while its delete is in flight is a race
// no planner can close, and is not modelled); after each the invariants
// are checked:
//
//   - ratio: the Ready groups of every pairing are within the ratio's
//     bounds, or (when the run starts outside them) no further out than
//     the worst the run started with;
//   - availability: a delete of a Ready group never leaves more than
//     maxUnavailable desired groups of its component unavailable;
//   - routers (with routers > 0, planned by Next with RouterPair after both
//     roles, rule 12): every router carries one pairing, so its selectors
//     (ome.io/pairing={{.Pairing}}) match the pods of that pairing only,
//     and every pairing with a live prefill and a live decode group (so
//     every pairing with a Ready pair) has a live router, unless it is not
//     current and the current pairing is Served or its router was retired
//     (rule 13; a retired router is not brought back);
//   - router first (rule 13): while the current pairing was Served, or
//     kept a live group of the role, when the step was planned, no delete
//     takes the last live group of that role of another pairing that
//     still has a router pod and had a live group of the other role.

type pairPod struct {
	Pod
	readyAt int // tick it turns Ready
	goneAt  int // tick a terminating pod disappears; 0 while live
}

type pairSim struct {
	t        *testing.T
	rng      *rand.Rand
	ratio    v1beta1.PrefillDecodeRatio
	maxUnav  int32
	pairing  string // current pairing (and revision)
	engine   int32  // engine replicas; the decoder's follow the ratio
	readyMax int
	pods     map[string][]*pairPod // by component
	memory   map[string]Backoff
	tick     int
	uid      int
	limit    int64 // the ratio invariant's bound
	// crashAfter: the reconciler dies after the engine's step of this tick
	// (the decoder's is lost) and restarts with no memory.
	crashAfter int
	steps      int
	unavail    map[string]int32 // most unavailable after a delete
	// routers is the router's replicas; 0: no router is planned.
	routers int32
	// servedBoth counts observations at which two pairings had a Ready
	// pair and a live router each.
	servedBoth int
	// holdAtPlan and liveAtPlan (planned), by component: when this tick's
	// steps were planned rule 13 held the last group of a pairing with a
	// router and a live group of the other role; retired counts routers
	// deleted by rule 13.
	holdAtPlan   map[string]bool
	liveAtPlan   map[string]map[string]bool
	retired      int
	retiredPairs map[string]bool // pairings whose router rule 13 retired
}

func newPairSim(t *testing.T, seed int64, ratio v1beta1.PrefillDecodeRatio, engine int32, pairing string) *pairSim {
	s := &pairSim{t: t, rng: rand.New(rand.NewSource(seed)), ratio: ratio, maxUnav: 1, pairing: pairing, engine: engine,
		readyMax: 3, pods: map[string][]*pairPod{}, memory: map[string]Backoff{}, crashAfter: -1, unavail: map[string]int32{},
		retiredPairs: map[string]bool{}}
	s.limit = ratio.Tolerance()
	return s
}

// seed adds n Ready groups of component c at pairing q.
func (s *pairSim) seed(c string, n int32, q string) {
	for g := range n {
		s.add(c, g, q, 0)
	}
}

func (s *pairSim) add(c string, g int32, q string, readyAt int) {
	s.uid++
	rev := q
	if c == v1beta1.ComponentRouter {
		rev = "router" // the pairing is outside the router's revision
	}
	p := &pairPod{Pod: Pod{Name: fmt.Sprintf("%s-%d", c[:1], g), UID: fmt.Sprintf("u%d", s.uid), Group: g,
		Revision: rev, Pairing: q, Phase: "Running", Ready: readyAt <= s.tick}, readyAt: readyAt}
	s.pods[c] = append(s.pods[c], p)
}

func (s *pairSim) spec(c string) Spec {
	replicas := s.engine
	switch c {
	case v1beta1.ComponentDecoder:
		replicas = s.ratio.DecodeFor(s.engine)
	case v1beta1.ComponentRouter:
		return Spec{Component: c, Replicas: s.routers, Revision: "router", MaxUnavailable: intstr.FromInt32(s.maxUnav)}
	}
	return Spec{Component: c, Replicas: replicas, Revision: s.pairing, MaxUnavailable: intstr.FromInt32(s.maxUnav),
		Pair: &Pair{Pairing: s.pairing, Prefill: c == v1beta1.ComponentEngine, Ratio: &s.ratio}}
}

// observed is what a watch shows of component c. A router is Ready only
// while its pairing has a Ready prefill and a Ready decode, as the
// routers' readiness probes answer (/readiness).
func (s *pairSim) observed(c string) []Pod {
	var out []Pod
	pre, dec := s.readyBy(v1beta1.ComponentEngine), s.readyBy(v1beta1.ComponentDecoder)
	for _, p := range s.pods[c] {
		o := p.Pod
		if c == v1beta1.ComponentRouter {
			o.Ready = o.Ready && pre[o.Pairing] > 0 && dec[o.Pairing] > 0
		}
		out = append(out, o)
	}
	return out
}

// readyBy counts the Ready groups of component c per pairing.
func (s *pairSim) readyBy(c string) map[string]int32 {
	out := map[string]int32{}
	for _, p := range s.pods[c] {
		if p.Ready && !p.Terminating {
			out[p.Pairing]++
		}
	}
	return out
}

// check asserts the ratio invariant after one observation.
func (s *pairSim) check(what string) {
	s.t.Helper()
	pre, dec := s.readyBy(v1beta1.ComponentEngine), s.readyBy(v1beta1.ComponentDecoder)
	for _, q := range []string{"A", "B", "C"} {
		if sk := s.ratio.Skew(pre[q], dec[q]); sk > s.limit {
			s.t.Fatalf("tick %d, after %s: pairing %s has %d prefill and %d decode Ready: skew %d > %d (ratio %d:%d)",
				s.tick, what, q, pre[q], dec[q], sk, s.limit, s.ratio.Prefill, s.ratio.Decode)
		}
	}
	if s.routers > 0 {
		s.checkRouters(what, pre, dec)
	}
}

// checkRouters asserts the router invariants of rule 12.
func (s *pairSim) checkRouters(what string, pre, dec map[string]int32) {
	s.t.Helper()
	routed := map[string]bool{}
	for _, r := range s.pods[v1beta1.ComponentRouter] {
		if r.Pairing == "" {
			s.t.Fatalf("tick %d, after %s: router %s has no pairing: its selectors would match every pairing", s.tick, what, r.Name)
		}
		if !r.Terminating {
			routed[r.Pairing] = true
		}
	}
	live := map[string]map[string]bool{}
	for _, c := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder} {
		live[c] = map[string]bool{}
		for _, p := range s.pods[c] {
			if !p.Terminating {
				live[c][p.Pairing] = true
			}
		}
	}
	served := Served(s.pairing, s.observed(v1beta1.ComponentRouter))
	for q := range live[v1beta1.ComponentEngine] {
		if live[v1beta1.ComponentDecoder][q] && !routed[q] && (q == s.pairing || !served && !s.retiredPairs[q]) {
			s.t.Fatalf("tick %d, after %s: pairing %s has live prefill and decode groups (%d and %d Ready) but no router: %v",
				s.tick, what, q, pre[q], dec[q], s.describe(v1beta1.ComponentRouter))
		}
	}
	serving := 0
	for q, n := range pre {
		if n > 0 && dec[q] > 0 {
			serving++
		}
	}
	if serving > 1 {
		s.servedBoth++
	}
}

// planned records, for checkRouterFirst, when rule 13 held for this
// tick's steps: per role, whether the current pairing was Served or kept a
// live group of the role the step does not delete, and which pairings had
// a live group of each role.
func (s *pairSim) planned(steps map[string]Step, served bool) {
	s.holdAtPlan, s.liveAtPlan = map[string]bool{}, map[string]map[string]bool{}
	for _, c := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder} {
		s.liveAtPlan[c] = map[string]bool{}
		st, planned := steps[c] // a crash loses the decoder's step
		kept := false           // a live group of the current pairing the step keeps
		for _, p := range s.pods[c] {
			if p.Terminating {
				continue
			}
			s.liveAtPlan[c][p.Pairing] = true
			deleted := slices.ContainsFunc(st.Delete, func(d PodRef) bool { return d.UID == p.UID })
			kept = kept || p.Pairing == s.pairing && !deleted
		}
		s.holdAtPlan[c] = planned && (kept || served)
	}
}

// checkRouterFirst asserts rule 13 after the delete of p, a pod of
// component c.
func (s *pairSim) checkRouterFirst(c string, p *pairPod) {
	s.t.Helper()
	q := p.Pairing
	other := v1beta1.ComponentDecoder
	if c == v1beta1.ComponentDecoder {
		other = v1beta1.ComponentEngine
	}
	if c == v1beta1.ComponentRouter || !s.holdAtPlan[c] || q == s.pairing || !s.liveAtPlan[other][q] {
		return
	}
	for _, o := range s.pods[c] {
		if o.Pairing == q && !o.Terminating {
			return
		}
	}
	for _, r := range s.pods[v1beta1.ComponentRouter] {
		if r.Pairing == q {
			s.t.Fatalf("tick %d: %s %s, the last of pairing %s, deleted while router %s of that pairing is still there (terminating: %v) and pairing %s is served or has a live %s",
				s.tick, c, p.Name, q, r.Name, r.Terminating, s.pairing, c)
		}
	}
}

// step runs one tick: both planners, their writes and the world's moves,
// observation by observation in a random order.
func (s *pairSim) step() {
	s.t.Helper()
	s.steps++
	es := s.spec(v1beta1.ComponentEngine)
	es.Pair.Other = PairRanges(s.spec(v1beta1.ComponentDecoder), s.observed(v1beta1.ComponentDecoder))
	if s.routers > 0 { // as the reconciler does: the router pods as observed before the steps
		es.Pair.Routed = RoutedPairs(s.pairing, s.observed(v1beta1.ComponentRouter))
		es.Pair.Served = Served(s.pairing, s.observed(v1beta1.ComponentRouter))
	}
	estep := Next(es, s.observed(v1beta1.ComponentEngine), s.memory[v1beta1.ComponentEngine], t0)
	s.memory[v1beta1.ComponentEngine] = estep.Backoff
	steps := map[string]Step{v1beta1.ComponentEngine: estep}
	if s.tick == s.crashAfter {
		s.memory = map[string]Backoff{} // the decoder's step is lost with the process
	} else {
		ds := s.spec(v1beta1.ComponentDecoder)
		ds.Pair.Other = estep.Pairs
		ds.Pair.Routed, ds.Pair.Served = es.Pair.Routed, es.Pair.Served
		dstep := Next(ds, s.observed(v1beta1.ComponentDecoder), s.memory[v1beta1.ComponentDecoder], t0)
		s.memory[v1beta1.ComponentDecoder] = dstep.Backoff
		steps[v1beta1.ComponentDecoder] = dstep
		if s.routers > 0 {
			rs := s.spec(v1beta1.ComponentRouter)
			// As the reconciler does: the pods as observed before the steps.
			retire := maps.Clone(estep.RouterFirst)
			if retire == nil {
				retire = map[string]bool{}
			}
			maps.Copy(retire, dstep.RouterFirst)
			rs.Pair = RouterPair(s.pairing, PairRanges(es, s.observed(v1beta1.ComponentEngine)), PairRanges(ds, s.observed(v1beta1.ComponentDecoder)), retire)
			rstep := Next(rs, s.observed(v1beta1.ComponentRouter), s.memory[v1beta1.ComponentRouter], t0)
			s.memory[v1beta1.ComponentRouter] = rstep.Backoff
			steps[v1beta1.ComponentRouter] = rstep
		}
	}
	s.planned(steps, es.Pair.Served)
	var moves []func()
	for c, st := range steps {
		for _, d := range st.Delete {
			// Availability is the planner's to keep for the pods it saw
			// Ready; one that turns Ready before its delete lands is the
			// world's race.
			seen := slices.ContainsFunc(s.pods[c], func(p *pairPod) bool { return p.UID == d.UID && p.Ready })
			moves = append(moves, func() { s.delete(c, d, seen) })
		}
	}
	deletes := len(moves)
	for c, st := range steps {
		for _, cr := range st.Create {
			if c == v1beta1.ComponentRouter && cr.Pairing != s.pairing {
				s.t.Fatalf("tick %d: router %d created at pairing %q, not the current %q", s.tick, cr.Group, cr.Pairing, s.pairing)
			}
			s.add(c, cr.Group, s.pairing, s.tick+1+s.rng.Intn(s.readyMax))
		}
	}
	s.tick++
	for c := range s.pods {
		for _, p := range s.pods[c] {
			if !p.Ready && !p.Terminating && p.readyAt <= s.tick {
				moves = append(moves, func() { p.Ready = true; s.check("pod " + p.Name + " Ready") })
			}
		}
		s.pods[c] = slices.DeleteFunc(s.pods[c], func(p *pairPod) bool { return p.Terminating && p.goneAt <= s.tick })
	}
	s.rng.Shuffle(deletes, func(i, j int) { moves[i], moves[j] = moves[j], moves[i] })
	s.rng.Shuffle(len(moves)-deletes, func(i, j int) { moves[deletes+i], moves[deletes+j] = moves[deletes+j], moves[deletes+i] })
	for _, m := range moves {
		m()
	}
}

// delete marks a pod terminating and checks both invariants.
func (s *pairSim) delete(c string, d PodRef, seenReady bool) {
	s.t.Helper()
	i := slices.IndexFunc(s.pods[c], func(p *pairPod) bool { return p.UID == d.UID })
	if i < 0 || s.pods[c][i].Terminating {
		s.t.Fatalf("tick %d: %s deletes %s, which is not live", s.tick, c, d.Name)
	}
	p := s.pods[c][i]
	wasReady := p.Ready && seenReady
	p.Terminating, p.Ready, p.goneAt = true, false, s.tick+1
	if d.Reason == ReasonRouterRetired {
		s.retired++
		s.retiredPairs[p.Pairing] = true
	}
	s.check("deleting " + c + " " + d.Name)
	s.checkRouterFirst(c, p)
	if !wasReady || c == v1beta1.ComponentRouter {
		return // a router's pairing left (rule 12); maxUnavailable is the groups'
	}
	desired := s.spec(c).Replicas
	var ready int32
	for _, n := range s.readyBy(c) {
		ready += n
	}
	un := max(0, desired-ready)
	s.unavail[c] = max(s.unavail[c], un)
	if un > s.maxUnav {
		s.t.Fatalf("tick %d: deleting Ready %s %s leaves %d of %d desired groups unavailable (maxUnavailable %d)",
			s.tick, c, d.Name, un, desired, s.maxUnav)
	}
}

// settled: every group of both components is Ready at the current
// pairing, at the counts the ratio asks for, nothing terminating.
func (s *pairSim) settled() bool {
	cs := []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder}
	if s.routers > 0 {
		cs = append(cs, v1beta1.ComponentRouter)
	}
	for _, c := range cs {
		want := s.spec(c).Replicas
		if int32(len(s.pods[c])) != want {
			return false
		}
		for _, p := range s.pods[c] {
			if !p.Ready || p.Terminating || p.Pairing != s.pairing {
				return false
			}
		}
	}
	return true
}

// run steps until settled, at most n ticks.
func (s *pairSim) run(n int) {
	s.t.Helper()
	for range n {
		if s.settled() {
			return
		}
		s.step()
	}
	s.t.Fatalf("not settled after %d ticks: engine %v, decoder %v, router %v", n, s.describe(v1beta1.ComponentEngine),
		s.describe(v1beta1.ComponentDecoder), s.describe(v1beta1.ComponentRouter))
}

func (s *pairSim) describe(c string) []string {
	var out []string
	for _, p := range s.pods[c] {
		out = append(out, fmt.Sprintf("%s/%s ready=%v term=%v", p.Name, p.Pairing, p.Ready, p.Terminating))
	}
	return out
}

func (s *pairSim) ordinals(c string) []int32 {
	var out []int32
	for _, p := range s.pods[c] {
		out = append(out, p.Group)
	}
	slices.Sort(out)
	return out
}

func ratio(p, d, skew int32) v1beta1.PrefillDecodeRatio {
	return v1beta1.PrefillDecodeRatio{Prefill: p, Decode: d, MaxSkew: &skew}
}

// TestPairSimRollout: a 1:2 service (2 prefill, 4 decode groups) rolled
// to a new pairing, over many seeds (Ready arrives in any order).
func TestPairSimRollout(t *testing.T) {
	for seed := range int64(50) {
		s := newPairSim(t, seed, ratio(1, 2, 1), 2, "B")
		s.seed(v1beta1.ComponentEngine, 2, "A")
		s.seed(v1beta1.ComponentDecoder, 4, "A")
		s.run(200)
		if got := s.ordinals(v1beta1.ComponentDecoder); !slices.Equal(got, []int32{0, 1, 2, 3}) {
			t.Fatalf("seed %d: decoder ordinals %v", seed, got)
		}
		if s.unavail[v1beta1.ComponentEngine] < 1 || s.unavail[v1beta1.ComponentDecoder] < 1 {
			t.Fatalf("seed %d: the roll never took a group down: %v", seed, s.unavail) // the check ran
		}
	}
}

// TestPairSimRestartHalfway: the reconciler dies after the engine's step
// of a tick in the middle of the roll and starts again with no memory.
func TestPairSimRestartHalfway(t *testing.T) {
	for seed := range int64(50) {
		s := newPairSim(t, seed, ratio(1, 2, 1), 2, "B")
		s.seed(v1beta1.ComponentEngine, 2, "A")
		s.seed(v1beta1.ComponentDecoder, 4, "A")
		s.crashAfter = 2 + int(seed%6)
		s.run(200)
	}
}

// TestPairSimScaleDuringRollout: engine 2 → 4 in the middle of a roll,
// then back to 2: the decoder follows (4 → 8 → 4) and scaling down
// removes the highest ordinals of both.
func TestPairSimScaleDuringRollout(t *testing.T) {
	for seed := range int64(50) {
		s := newPairSim(t, seed, ratio(1, 2, 1), 2, "B")
		s.seed(v1beta1.ComponentEngine, 2, "A")
		s.seed(v1beta1.ComponentDecoder, 4, "A")
		for range 3 + int(seed%5) {
			s.step()
		}
		s.engine = 4
		s.run(300)
		if got := s.ordinals(v1beta1.ComponentDecoder); !slices.Equal(got, []int32{0, 1, 2, 3, 4, 5, 6, 7}) {
			t.Fatalf("seed %d: decoder ordinals after scaling to 4 engines: %v", seed, got)
		}
		s.engine = 2
		s.run(300)
		if e, d := s.ordinals(v1beta1.ComponentEngine), s.ordinals(v1beta1.ComponentDecoder); !slices.Equal(e, []int32{0, 1}) || !slices.Equal(d, []int32{0, 1, 2, 3}) {
			t.Fatalf("seed %d: after scaling down: engine %v, decoder %v", seed, e, d)
		}
	}
}

// TestPairSimRatios rolls and scales other ratios at their least maxSkew.
func TestPairSimRatios(t *testing.T) {
	for _, r := range [][2]int32{{1, 1}, {2, 1}, {1, 3}, {3, 1}, {2, 3}, {3, 2}, {1, 4}} {
		skew := v1beta1.MinMaxSkew(r[0], r[1])
		for seed := range int64(10) {
			s := newPairSim(t, seed, ratio(r[0], r[1], skew), r[0]*2, "B")
			s.seed(v1beta1.ComponentEngine, r[0]*2, "A")
			s.seed(v1beta1.ComponentDecoder, r[1]*2, "A")
			s.run(400)
			s.engine = r[0]*2 + 1
			s.run(400)
			s.pairing = "C"
			s.run(400)
		}
	}
}

// TestPairSimRouters: the rollouts and scaling above with routers planned
// by Next with RouterPair (rules 12 and 13), one and two per pairing: after every
// observation no router selects two pairings and every pairing with a
// Ready pair has a router (or its router retired); both pairings serve at
// once during a roll; a router is retired before its pairing's last
// group, which waits for it; at rest only the current pairing's routers
// are left.
func TestPairSimRouters(t *testing.T) {
	for _, routers := range []int32{1, 2} {
		both, retired := 0, 0
		for seed := range int64(30) {
			s := newPairSim(t, seed, ratio(1, 2, 1), 2, "B")
			s.routers = routers
			s.maxUnav = 1 + int32(seed%2)
			s.seed(v1beta1.ComponentEngine, 2, "A")
			s.seed(v1beta1.ComponentDecoder, 4, "A")
			s.seed(v1beta1.ComponentRouter, routers, "A")
			s.crashAfter = -1
			if seed%3 == 0 {
				s.crashAfter = 2 + int(seed%6)
			}
			s.run(200)
			s.engine = 3
			s.run(300)
			s.pairing = "C"
			s.run(300)
			both += s.servedBoth
			retired += s.retired
			for _, r := range s.pods[v1beta1.ComponentRouter] {
				if r.Pairing != "C" {
					t.Fatalf("seed %d: router %s of pairing %s left at rest", seed, r.Name, r.Pairing)
				}
			}
		}
		if both == 0 {
			t.Fatalf("%d router(s): no observation had two pairings serving at once", routers)
		}
		if retired == 0 {
			t.Fatalf("%d router(s): no router was retired before its pairing's last group (rule 13)", routers)
		}
	}
}
