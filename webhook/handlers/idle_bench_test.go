package handlers

import (
	"context"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/berthdev/berth/webhook/admission"
)

// BenchmarkPodAdmissionReviewIdle is BenchmarkPodAdmissionReview (and its
// no-op twin) as a webhook at 100 admissions a second meets them: each call
// comes after the process slept (10 ms, the gap between two calls at
// 100/s), or spun for as long without sleeping (time passes, the CPU
// never idles), or after other work evicted its data from the CPU caches
// (a 64 MiB walk, more than this machine's caches, standing in for the API
// server and etcd), or after both sleeping and the walk. call-ns and
// p50-ns are the call's own wall time, mean and median; ns/op includes
// what came before it.
//
//	go test -run '^$' -bench PodAdmissionReviewIdle -benchtime 300x -cpu 1 ./webhook/handlers/
func BenchmarkPodAdmissionReviewIdle(b *testing.B) {
	allow := func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return admission.Allowed()
	}
	webhooks := []struct {
		name    string
		decide  func(*testing.B) admission.Func
		patched bool
	}{
		{"berth", func(b *testing.B) admission.Func { return benchPods(b).Mutate }, true},
		{"noop", func(*testing.B) admission.Func { return allow }, false},
	}
	befores := []struct {
		name               string
		sleep, spin, evict bool
	}{
		{name: "warm"},
		{name: "after-sleep", sleep: true},
		{name: "after-spin", spin: true},
		{name: "after-evict", evict: true},
		{name: "after-both", sleep: true, evict: true},
	}
	for _, wh := range webhooks {
		for _, before := range befores {
			b.Run(wh.name+"/"+before.name, func(b *testing.B) {
				serve := reviewServer(b, wh.decide(b), wh.patched)
				calls := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if before.evict {
						evictCaches()
					}
					switch {
					case before.sleep:
						time.Sleep(gap)
					case before.spin:
						for start := time.Now(); time.Since(start) < gap; {
						}
					}
					start := time.Now()
					serve()
					calls = append(calls, time.Since(start))
				}
				reportCalls(b, calls)
			})
		}
	}
}

// gap is the time between two calls at 100 admissions a second.
const gap = 10 * time.Millisecond

// evictBuffer is larger than the CPU caches of the machines berth is
// measured on, so walking it leaves none of a call's data in them.
var evictBuffer = make([]byte, 64<<20)

// evictCaches writes one byte in every 64-byte cache line of evictBuffer.
func evictCaches() {
	for i := 0; i < len(evictBuffer); i += 64 {
		evictBuffer[i]++
	}
}

// reportCalls reports the mean and the median of calls.
func reportCalls(b *testing.B, calls []time.Duration) {
	if len(calls) == 0 {
		return
	}
	var sum time.Duration
	for _, c := range calls {
		sum += c
	}
	slices.Sort(calls)
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(calls)), "call-ns")
	b.ReportMetric(float64(calls[len(calls)/2].Nanoseconds()), "p50-ns")
}
