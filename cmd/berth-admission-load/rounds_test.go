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

// A process whose CPU time could not be read in one round is unknown for
// the whole path, never a figure short by that round (or off by the -1
// that once stood for it).
func TestPerCreateUnreadableCPUIsUnknown(t *testing.T) {
	ms := time.Millisecond
	round := func(apiserver float64) *result {
		return &result{Result: &loadrun.Result{Latencies: []time.Duration{ms}, Sent: 100},
			cpu: cpuTimes{names: []string{"kube-apiserver", "etcd"}, secs: []float64{apiserver, 0.1}}}
	}
	start, end := cpuTimes{names: []string{"kube-apiserver", "etcd"}, secs: []float64{cpuSeconds(-1), 1}}, cpuTimes{names: []string{"kube-apiserver", "etcd"}, secs: []float64{2, 1.1}}
	unreadable := round(0.5)
	unreadable.cpu = end.minus(start)
	got := perCreate((*result)(nil).merge(round(0.5)).merge(unreadable))
	if want := " kube-apiserver unknown etcd 1ms"; got != want {
		t.Errorf("perCreate = %q, want %q", got, want)
	}
	if got, want := perCreate(round(0.5)), " kube-apiserver 5ms etcd 1ms"; got != want {
		t.Errorf("perCreate = %q, want %q", got, want)
	}
}
