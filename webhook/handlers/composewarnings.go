package handlers

import (
	"slices"

	"github.com/berthdev/berth/merge"
)

// composeWarnings are what composing the service's pods tolerated and the
// user should hear of (merge.ComposedRole.Warnings: a label or annotation
// a KServe-shaped runtime refers to that the service lacks, rendered empty
// as KServe renders it), each once, prefixed with the component as
// composition errors are. The validating handler returns them.
func composeWarnings(roles []merge.ComposedRole) []string {
	var out []string
	for _, r := range roles {
		for _, w := range r.Warnings {
			if line := r.Topology.Component + ": " + w; !slices.Contains(out, line) {
				out = append(out, line)
			}
		}
	}
	return out
}
