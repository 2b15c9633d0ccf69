// Package gcdefault gives a berth binary a garbage collector target of its
// own, measured for its heap, while leaving Go's own knobs to the operator.
//
// Rules:
//   - A binary's default GOGC applies only when its environment sets no
//     GOGC; a GOGC in the environment applies as to any Go program.
//   - The shipped Deployments put the container's memory limit, in bytes,
//     in BERTH_MEMORY_LIMIT (resourceFieldRef limits.memory). Unless
//     GOMEMLIMIT is set, 90 % of it becomes the runtime's soft memory
//     limit: Go counts only its own memory against that limit, so the rest
//     is left for the binary's mapped pages and the kernel's share, and a
//     high GOGC cannot take the container to its limit (the runtime
//     collects harder as its memory nears the soft limit).
package gcdefault

import (
	"runtime/debug"
	"strconv"
)

// Set makes percent the GOGC of this process unless getenv("GOGC") is set,
// and reports whether it did.
func Set(percent int, getenv func(string) string) bool {
	if getenv("GOGC") != "" {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}

// LimitEnv names the variable holding the container's memory limit in
// bytes.
const LimitEnv = "BERTH_MEMORY_LIMIT"

// SetMemoryLimit sets the runtime's soft memory limit to 90 % of the bytes
// in LimitEnv, unless GOMEMLIMIT is set or LimitEnv is not a positive
// integer; it returns the limit it set, or 0.
func SetMemoryLimit(getenv func(string) string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit, err := strconv.ParseInt(getenv(LimitEnv), 10, 64)
	if err != nil || limit <= 0 {
		return 0
	}
	soft := limit / 10 * 9
	debug.SetMemoryLimit(soft)
	return soft
}
