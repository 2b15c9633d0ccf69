package plan

import (
	"testing"
	"time"
)

// benchNext times one planning step over a component of many groups: the
// cost the reconciler pays per component per sync.
func benchNext(b *testing.B, spec Spec, pods []Pod) {
	b.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		Next(spec, pods, nil, now)
	}
}

// 1,000 single-pod groups at rest: nothing to do.
func BenchmarkNextSteady1000(b *testing.B) {
	benchNext(b, mkSpec(1000), singles(1000, "new"))
}

// 1,000 groups just after a revision change: the roll picks the next group.
func BenchmarkNextRolling1000(b *testing.B) {
	benchNext(b, mkSpec(1000), singles(1000, "old"))
}

// 250 leader + 3 worker groups (1,000 pods) at rest.
func BenchmarkNextMultiNode250x4(b *testing.B) {
	var pods []Pod
	for g := range int32(250) {
		pods = append(pods, mnGroup(g, 3, "new")...)
	}
	benchNext(b, mkSpec(250, multi(3)), pods)
}
