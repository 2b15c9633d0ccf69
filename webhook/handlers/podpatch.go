package handlers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/internal/jsoncodec"
	"github.com/berthdev/berth/webhook/patch"
)

// podEncoders pool the buffers of the two encodings a pod's patch is
// built from: the round trip (the request's pod decoded, encoded before it
// is composed) and the composed pod. Both are read only until patchFrom
// returns (the patch copies what it needs): a captured pod encodes to
// about 1.5 KB and 6 KB, two allocations per admission saved. Buffers
// grown beyond 256 KB (an unusually large pod) are not kept.
var podEncoders = jsoncodec.EncoderPool{Max: 256 << 10}

// patchFrom is the JSON patch from the request's raw pod to mutated;
// roundTrip is the request's pod decoded and encoded before it was
// composed (see package patch).
func patchFrom(raw, roundTrip []byte, mutated *corev1.Pod) ([]byte, error) {
	enc := podEncoders.Get()
	defer podEncoders.Put(enc)
	mut, err := enc.Encode(mutated)
	if err != nil {
		return nil, fmt.Errorf("encode mutated pod: %w", err)
	}
	return patch.CreateFromJSON(raw, roundTrip, mut)
}
