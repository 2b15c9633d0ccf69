package v1beta1

// LabelPairing is stamped on the engine and decoder pods of a
// prefill/decode service: a hash of the revisions of both components (the
// pair both compose from). A router pairs a prefill only with a decode of
// the same pairing.
const LabelPairing = "ome.io/pairing"

// ConditionRatioWithinBounds, on a service with spec.prefillDecodeRatio:
// True (reason WithinBounds) while the Ready groups of every pairing are
// within maxSkew of the ratio, else False (reason OutOfBounds) naming the
// pairing and its counts.
const (
	ConditionRatioWithinBounds = "RatioWithinBounds"
	ReasonRatioWithinBounds    = "WithinBounds"
	ReasonRatioOutOfBounds     = "OutOfBounds"
)

// PrefillDecodeRatio is the target ratio of prefill (engine) to decode
// (decoder) serving groups of a prefill/decode service, and how far the
// Ready groups of one pairing may stray from it while groups roll, scale or
// start. The rules (docs/api.md, and package reconcile/plan, rule 10):
//
//   - The decoder's replicas follow the engine's: Decode groups per Prefill
//     engine groups, rounded up (DecodeFor), within the decoder's
//     minReplicas/maxReplicas. The scale subresource scales the engine, so
//     `kubectl scale` and an autoscaler on the service move both.
//   - The skew of P Ready prefill and D Ready decode groups of one pairing
//     is |P·Decode − D·Prefill|; it is within bounds when it is at most
//     MaxSkew·min(Prefill, Decode): the role the ratio has more of is at
//     most MaxSkew groups away from what the other role's count calls for.
type PrefillDecodeRatio struct {
	// Prefill is the prefill (engine) side of the ratio.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Prefill int32 `json:"prefill"`
	// Decode is the decode (decoder) side of the ratio.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Decode int32 `json:"decode"`
	// MaxSkew bounds the skew, in groups of the role the ratio has more of.
	// Default 1. It must be at least MinMaxSkew(prefill, decode), so that
	// groups can roll and scale one at a time and every engine count's
	// decoder count is within bounds.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxSkew *int32 `json:"maxSkew,omitempty"`
}

// Skew is |p·Decode − d·Prefill| for p prefill and d decode groups.
func (r PrefillDecodeRatio) Skew(p, d int32) int64 {
	s := int64(p)*int64(r.Decode) - int64(d)*int64(r.Prefill)
	if s < 0 {
		return -s
	}
	return s
}

// Tolerance is the largest skew within bounds: MaxSkew·min(Prefill, Decode).
func (r PrefillDecodeRatio) Tolerance() int64 {
	s := int64(1)
	if r.MaxSkew != nil {
		s = int64(*r.MaxSkew)
	}
	return s * int64(min(r.Prefill, r.Decode))
}

// Within reports whether p prefill and d decode groups are within bounds.
func (r PrefillDecodeRatio) Within(p, d int32) bool { return r.Skew(p, d) <= r.Tolerance() }

// DecodeFor is the decoder groups the ratio asks for with p engine groups:
// p·Decode/Prefill rounded up; 0 for a ratio that is not valid.
func (r PrefillDecodeRatio) DecodeFor(p int32) int32 {
	if r.Prefill < 1 || r.Decode < 1 || p <= 0 {
		return 0
	}
	n := (int64(p)*int64(r.Decode) + int64(r.Prefill) - 1) / int64(r.Prefill)
	return int32(min(n, 1<<30))
}

// MinMaxSkew is the smallest maxSkew with which (1) one unit of the ratio
// (Prefill and Decode groups) can be taken down, and so built up, one group
// at a time with every count in between within bounds, and (2) every
// engine count's DecodeFor is within bounds. Below it a rollout with
// maxUnavailable 1 could not move, or scaling could not finish. It returns
// 0 for a ratio that is not valid.
func MinMaxSkew(prefill, decode int32) int32 {
	if prefill < 1 || decode < 1 || prefill > 1<<10 || decode > 1<<10 {
		return 0
	}
	for s := int32(1); ; s++ {
		r := PrefillDecodeRatio{Prefill: prefill, Decode: decode, MaxSkew: &s}
		if r.walkable() && r.targetsWithin() {
			return s
		}
	}
}

// walkable: a path from (Prefill, Decode) to (0, 0) removing one group at
// a time stays within bounds (dynamic programming over the counts).
func (r PrefillDecodeRatio) walkable() bool {
	ok := make([][]bool, r.Prefill+1)
	for p := range ok {
		ok[p] = make([]bool, r.Decode+1)
	}
	for p := int32(0); p <= r.Prefill; p++ {
		for d := int32(0); d <= r.Decode; d++ {
			switch {
			case !r.Within(p, d):
			case p == 0 && d == 0:
				ok[p][d] = true
			default:
				ok[p][d] = (p > 0 && ok[p-1][d]) || (d > 0 && ok[p][d-1])
			}
		}
	}
	return ok[r.Prefill][r.Decode]
}

// targetsWithin: DecodeFor(p) is within bounds for every p (it repeats
// with period Prefill).
func (r PrefillDecodeRatio) targetsWithin() bool {
	for p := int32(1); p <= r.Prefill; p++ {
		if !r.Within(p, r.DecodeFor(p)) {
			return false
		}
	}
	return true
}
