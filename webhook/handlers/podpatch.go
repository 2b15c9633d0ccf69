package handlers

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/internal/jsoncodec"
	"github.com/berthdev/berth/webhook/patch"
)

// podEncoding holds the two encodings a pod's patch is built from: the
// round trip (the request's pod decoded, encoded before it is composed)
// and the composed pod. Both are read only until patchFrom returns (the
// patch copies what it needs), so their buffers are pooled: a captured pod
// encodes to about 1.5 KB and 6 KB, two allocations per admission saved.
type podEncoding struct {
	roundTrip, mutated jsoncodec.Encoder
}

// maxPooledEncoding: buffers grown beyond it (an unusually large pod) are
// not kept.
const maxPooledEncoding = 256 << 10

var podEncodings = sync.Pool{New: func() any { return new(podEncoding) }}

func newPodEncoding() *podEncoding { return podEncodings.Get().(*podEncoding) }

// release returns e to the pool; no byte slice it returned may be used
// after.
func (e *podEncoding) release() {
	if e.roundTrip.Cap() > maxPooledEncoding || e.mutated.Cap() > maxPooledEncoding {
		return
	}
	e.roundTrip.Reset()
	e.mutated.Reset()
	podEncodings.Put(e)
}

// patchFrom is the JSON patch from the request's raw pod to mutated;
// roundTrip is the request's pod decoded and encoded before it was
// composed (see package patch), by enc.roundTrip.
func patchFrom(raw, roundTrip []byte, mutated *corev1.Pod, enc *podEncoding) ([]byte, error) {
	mut, err := enc.mutated.Encode(mutated)
	if err != nil {
		return nil, fmt.Errorf("encode mutated pod: %w", err)
	}
	return patch.CreateFromJSON(raw, roundTrip, mut)
}
