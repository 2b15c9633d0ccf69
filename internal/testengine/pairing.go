package testengine

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// LabelPairing is the label berth stamps on the engine (prefill) and
// decoder (decode) pods of a prefill/decode service: the pairing of the
// revisions both run. A discovered worker carries its pod's value, and
// the PD router pairs a prefill only with a decode of the same pairing,
// so during a rollout old prefill never hands its KV cache to a new
// decode. Workers added by flag or API have pairing "" and pair with each
// other.
const LabelPairing = "ome.io/pairing"

// pickPair picks a prefill round robin and a decode of its pairing,
// round robin among those. When the next prefill's pairing has no decode,
// the prefills after it are tried in turn. ok is false when no prefill
// has a decode of its pairing; why says what is missing.
func (s *workerSet) pickPair() (prefill, decode Worker, ok bool, why string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ps, ds := s.sorted[RolePrefill], s.sorted[RoleDecode]
	if len(ps) == 0 {
		return Worker{}, Worker{}, false, RolePrefill
	}
	if len(ds) == 0 {
		return Worker{}, Worker{}, false, RoleDecode
	}
	start := s.next[RolePrefill].Add(1) - 1
	for i := range uint64(len(ps)) {
		p := ps[(start+i)%uint64(len(ps))]
		var same []Worker
		for _, d := range ds {
			if d.Pairing == p.Pairing {
				same = append(same, d)
			}
		}
		if len(same) > 0 {
			n := s.next[RoleDecode].Add(1) - 1
			return p, same[n%uint64(len(same))], true, ""
		}
	}
	return Worker{}, Worker{}, false, "pairing"
}

// noPair explains why no prefill/decode pair was found: a role without
// workers (noWorkers), or workers of both roles but none of one pairing.
func (r *Router) noPair(missing string) error {
	if missing != "pairing" {
		return r.noWorkers(missing)
	}
	var ps, ds []string
	for _, w := range r.workers.all() {
		switch w.Role {
		case RolePrefill:
			ps = append(ps, w.URL+" ("+LabelPairing+"="+w.Pairing+")")
		case RoleDecode:
			ds = append(ds, w.URL+" ("+LabelPairing+"="+w.Pairing+")")
		}
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError",
		Message: fmt.Sprintf("no prefill and decode worker of the same pairing (label %s): prefill %s; decode %s",
			LabelPairing, strings.Join(ps, ", "), strings.Join(ds, ", "))}
}

// pairings are the pairings with at least one prefill and one decode
// worker, sorted: what a PD router can serve.
func (s *workerSet) pairings() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	prefill := map[string]bool{}
	for _, p := range s.sorted[RolePrefill] {
		prefill[p.Pairing] = true
	}
	var out []string
	for _, d := range s.sorted[RoleDecode] {
		if prefill[d.Pairing] && !slices.Contains(out, d.Pairing) {
			out = append(out, d.Pairing)
		}
	}
	slices.Sort(out)
	return out
}
