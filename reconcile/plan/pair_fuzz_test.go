package plan

import (
	"testing"

	"github.com/berthdev/berth/api/v1beta1"
)

// FuzzPairRatio starts the pair simulation from a world the fuzzer
// decodes (a ratio at or above its least maxSkew, engine replicas,
// maxUnavailable, groups of both roles at pairings A and B, Ready or on
// their way, the current pairing) and runs it until it settles. No
// observation may put a pairing further outside the ratio than the
// world started (its groups on their way counted as they may land), no
// delete of a Ready group may leave more than maxUnavailable desired
// groups unavailable, and the run must settle. Half the worlds have
// routers too (one or two per pairing, some already there), checked as in
// TestPairSimRouters.
func FuzzPairRatio(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 4, 1})
	f.Add([]byte{1, 0, 1, 3, 0, 2, 5, 1, 0, 1, 1, 0, 3, 2})
	f.Add([]byte("prefill and decode, in pairs, with a ratio held through the roll"))
	f.Add([]byte{1, 1, 0, 3, 1, 2, 2, 0, 0, 1, 1, 1, 3, 2, 1, 0, 1, 1, 2, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &bytesource{data}
		p, d := int32(1+src.n(4)), int32(1+src.n(4))
		skew := v1beta1.MinMaxSkew(p, d) + int32(src.n(2))
		s := newPairSim(t, int64(src.n(256)), ratio(p, d, skew), int32(src.n(6)), pick(src, "A", "B"))
		s.maxUnav = int32(1 + src.n(2))
		s.readyMax = 1 + src.n(4)
		for _, c := range []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder} {
			for g := range int32(src.n(7)) {
				s.add(c, g, pick(src, "A", "B"), pick(src, 0, 0, 1, 2))
			}
		}
		if src.n(2) == 1 { // routers per pairing (rules 12 and 13)
			s.routers = int32(1 + src.n(2))
			n := int32(src.n(4))
			for g := range n {
				s.add(v1beta1.ComponentRouter, g, pick(src, "A", "B"), pick(src, 0, 0, 1, 2))
			}
			// A world the planner can reach: a pairing with groups of both
			// roles has a router (one of another pairing is never created).
			for _, q := range []string{"A", "B"} {
				if s.has(v1beta1.ComponentEngine, q) && s.has(v1beta1.ComponentDecoder, q) && !s.has(v1beta1.ComponentRouter, q) {
					s.add(v1beta1.ComponentRouter, n, q, 0)
					n++
				}
			}
		}
		s.limit = max(s.limit, s.worstStart())
		s.run(600)
	})
}

// worstStart is the largest skew any pairing of the starting world can
// reach as its groups on their way turn Ready, in any order.
func (s *pairSim) worstStart() int64 {
	var worst int64
	for _, q := range []string{"A", "B"} {
		var pr, pp, dr, dp int32
		for _, x := range s.pods[v1beta1.ComponentEngine] {
			if x.Pairing == q {
				pr, pp = pr+b2i(x.Ready), pp+1
			}
		}
		for _, x := range s.pods[v1beta1.ComponentDecoder] {
			if x.Pairing == q {
				dr, dp = dr+b2i(x.Ready), dp+1
			}
		}
		for _, np := range []int32{pr, pp} {
			for _, nd := range []int32{dr, dp} {
				worst = max(worst, s.ratio.Skew(np, nd))
			}
		}
	}
	return worst
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// has reports whether component c has a pod of pairing q.
func (s *pairSim) has(c, q string) bool {
	for _, p := range s.pods[c] {
		if p.Pairing == q {
			return true
		}
	}
	return false
}
