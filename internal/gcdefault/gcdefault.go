// Package gcdefault gives a berth binary a garbage collector target of its
// own, measured for its heap, while leaving Go's own knobs to the operator.
//
// Rule: a binary's default GOGC applies only when its environment sets no
// GOGC; a GOGC in the environment applies as to any Go program. GOMEMLIMIT
// is never set here: the shipped Deployments set it from the container's
// memory limit, so a high GOGC cannot take a process past its limit (the
// runtime collects harder as the heap nears it).
package gcdefault

import "runtime/debug"

// Set makes percent the GOGC of this process unless getenv("GOGC") is set,
// and reports whether it did.
func Set(percent int, getenv func(string) string) bool {
	if getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}
