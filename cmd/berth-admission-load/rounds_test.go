package main

import (
	"slices"
	"testing"
	"time"
)

// Over as many rounds as paths, each path holds each place once, and
// every round runs every path.
func TestRoundOrderRotates(t *testing.T) {
	const n = 4
	held := make([][]int, n) // held[path] = the places it held
	for round := 0; round < n; round++ {
		order := roundOrder(round, n)
		if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Fatalf("round %d runs %v, want every path once", round, order)
		}
		for place, path := range order {
			held[path] = append(held[path], place)
		}
	}
	for path, places := range held {
		if got := slices.Sorted(slices.Values(places)); !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Errorf("path %d held places %v over %d rounds, want each once", path, places, n)
		}
	}
}

func TestResultMergePoolsRounds(t *testing.T) {
	ms := time.Millisecond
	a := &result{latencies: []time.Duration{1 * ms, 4 * ms}, sent: 3, errors: 1, firstError: "first",
		elapsed: time.Second, calls: webhookCalls{sum: 0.002, count: 2},
		cpu: cpuTimes{names: []string{"x"}, secs: []float64{0.5}}}
	b := &result{latencies: []time.Duration{2 * ms, 3 * ms}, sent: 2, errors: 1, firstError: "second",
		elapsed: 2 * time.Second, calls: webhookCalls{sum: 0.001, count: 2},
		cpu: cpuTimes{names: []string{"x"}, secs: []float64{0.25}}}
	got := (*result)(nil).merge(a).merge(b)
	if want := []time.Duration{1 * ms, 2 * ms, 3 * ms, 4 * ms}; !slices.Equal(got.latencies, want) {
		t.Errorf("latencies %v, want %v (sorted, pooled)", got.latencies, want)
	}
	if got.sent != 5 || got.errors != 2 || got.firstError != "first" || got.elapsed != 3*time.Second {
		t.Errorf("sent %d errors %d first %q elapsed %s, want 5, 2, \"first\", 3s", got.sent, got.errors, got.firstError, got.elapsed)
	}
	if got.calls != (webhookCalls{sum: 0.003, count: 4}) || got.cpu.secs[0] != 0.75 {
		t.Errorf("calls %+v cpu %v, want {0.003 4} and 0.75", got.calls, got.cpu.secs)
	}
	if len(a.latencies) != 2 || a.latencies[1] != 4*ms {
		t.Errorf("merge changed its receiver: %v", a.latencies)
	}
}
