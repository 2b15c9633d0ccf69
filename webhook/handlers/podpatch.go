package handlers

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/webhook/patch"
)

// patchFrom is the JSON patch from the request's raw pod to mutated;
// roundTrip is the request's pod decoded and encoded before it was
// composed (see package patch).
func patchFrom(raw, roundTrip []byte, mutated *corev1.Pod) ([]byte, error) {
	mut, err := json.Marshal(mutated)
	if err != nil {
		return nil, fmt.Errorf("encode mutated pod: %w", err)
	}
	return patch.CreateFromJSON(raw, roundTrip, mut)
}
