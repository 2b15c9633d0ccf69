package main

import "runtime/debug"

// defaultGOGC is berth-reconciler's GOGC when its environment sets none.
// Its heap is mostly long-lived informer caches, which the default goal
// (GOGC=100) lets RSS double: at 10,000 pods the peak RSS was 208–221 MiB
// with the default and 166 MiB with 50, for the same CPU until idle
// (docs/performance.md, "The idle reconciler's memory").
const defaultGOGC = 50

// setGCDefault sets defaultGOGC unless GOGC is set in the environment
// (getenv), which then applies as to any Go program.
func setGCDefault(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
	}
}
