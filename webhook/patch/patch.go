// Package patch builds the JSON patches the mutating handlers return.
//
// A handler decodes the raw object into a typed Go struct, changes it, and
// marshals it again. Diffing the raw request against that re-marshalled
// object would also "remove" every field our k8s.io/api version does not
// know — silent data loss after a cluster upgrade (Kueue lost KubeRay fields
// this way, kueue#2878). Create therefore computes what the decode/encode
// round trip alone changes (removals of unknown fields, but also additions
// such as "resources": {} or "status": {}) and drops exactly those
// operations. Dropping the additions too keeps a second pass over an already
// mutated object an empty patch, which reinvocation needs.
//
// Patches come from gomodules.xyz/jsonpatch/v2, the maintained fork of
// mattbaird/jsonpatch; see the design page for why not the original.
package patch

import (
	"encoding/json"
	"fmt"
	"reflect"

	"gomodules.xyz/jsonpatch/v2"
)

// Create returns the JSON patch that turns original (the raw object of the
// request) into mutated, without removing anything that only the typed round
// trip lost. roundTripped is original decoded into the same Go type as mutated
// and marshalled again, unchanged. An empty result means "no change".
func Create(original []byte, roundTripped, mutated any) ([]byte, error) {
	rt, err := json.Marshal(roundTripped)
	if err != nil {
		return nil, fmt.Errorf("encode round-tripped object: %w", err)
	}
	mut, err := json.Marshal(mutated)
	if err != nil {
		return nil, fmt.Errorf("encode mutated object: %w", err)
	}
	ops, err := jsonpatch.CreatePatch(original, mut)
	if err != nil {
		return nil, fmt.Errorf("diff mutated object: %w", err)
	}
	lost, err := jsonpatch.CreatePatch(original, rt)
	if err != nil {
		return nil, fmt.Errorf("diff round-tripped object: %w", err)
	}
	// Compare whole operations only where a path matches: encoding every
	// value would cost more than the diff itself.
	lostByPath := make(map[string][]jsonpatch.Operation, len(lost))
	for _, op := range lost {
		lostByPath[op.Path] = append(lostByPath[op.Path], op)
	}
	kept := ops[:0]
	for _, op := range ops {
		if !sameAsAny(op, lostByPath[op.Path]) {
			kept = append(kept, op)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	return json.Marshal(kept)
}

// sameAsAny reports whether op is identical, value included, to one of the
// round-trip operations at its path: only those are artefacts to drop.
func sameAsAny(op jsonpatch.Operation, candidates []jsonpatch.Operation) bool {
	for _, c := range candidates {
		if c.Operation == op.Operation && reflect.DeepEqual(c.Value, op.Value) {
			return true
		}
	}
	return false
}
