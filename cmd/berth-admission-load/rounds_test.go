package main

import (
	"slices"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/loadrun"
)

// A path's rounds pool their CPU and webhook calls with their latencies
// (package loadrun tests the latencies and counts).
func TestResultMergePoolsCosts(t *testing.T) {
	ms := time.Millisecond
	a := &result{Result: &loadrun.Result{Latencies: []time.Duration{1 * ms}, Sent: 1},
		calls: webhookCalls{sum: 0.5, count: 2}, cpu: cpuTimes{names: []string{"x"}, secs: []float64{0.5}}}
	b := &result{Result: &loadrun.Result{Latencies: []time.Duration{2 * ms}, Sent: 1},
		calls: webhookCalls{sum: 0.25, count: 2}, cpu: cpuTimes{names: []string{"x"}, secs: []float64{0.25}}}
	got := (*result)(nil).merge(a).merge(b)
	if !slices.Equal(got.Latencies, []time.Duration{1 * ms, 2 * ms}) || got.Sent != 2 {
		t.Errorf("latencies %v, sent %d; want [1ms 2ms], 2", got.Latencies, got.Sent)
	}
	if got.calls != (webhookCalls{sum: 0.75, count: 4}) || !slices.Equal(got.cpu.secs, []float64{0.75}) {
		t.Errorf("calls %+v, cpu %v; want {0.75 4}, [0.75]", got.calls, got.cpu.secs)
	}
}
