package loadrun

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// Over as many rounds as paths, each path holds each place once, and
// every round runs every path.
func TestRoundOrderRotates(t *testing.T) {
	const n = 4
	held := make([][]int, n) // held[path] = the places it held
	for round := 0; round < n; round++ {
		order := RoundOrder(round, n)
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

func TestMergePoolsRounds(t *testing.T) {
	ms := time.Millisecond
	a := &Result{Latencies: []time.Duration{1 * ms, 4 * ms}, Sent: 3, Errors: 1, FirstError: "first", Elapsed: time.Second}
	b := &Result{Latencies: []time.Duration{2 * ms, 3 * ms}, Sent: 2, Errors: 1, FirstError: "second", Elapsed: 2 * time.Second}
	got := (*Result)(nil).Merge(a).Merge(b)
	want := &Result{Latencies: []time.Duration{1 * ms, 2 * ms, 3 * ms, 4 * ms}, Sent: 5, Errors: 2, FirstError: "first", Elapsed: 3 * time.Second}
	if !slices.Equal(got.Latencies, want.Latencies) || got.Sent != want.Sent || got.Errors != want.Errors ||
		got.FirstError != want.FirstError || got.Elapsed != want.Elapsed {
		t.Errorf("merged %+v, want %+v", got, want)
	}
	if !slices.Equal(a.Latencies, []time.Duration{1 * ms, 4 * ms}) || !slices.Equal(b.Latencies, []time.Duration{2 * ms, 3 * ms}) {
		t.Errorf("merge changed its inputs: %v, %v", a.Latencies, b.Latencies)
	}
	if q := got.Quantile(1); q != 4*ms {
		t.Errorf("max %s, want 4ms", q)
	}
	if q := got.Quantile(0.5); q != 2*ms {
		t.Errorf("median %s, want 2ms (the lower of the middle two)", q)
	}
}

// Every request is sent once, failures are counted and not timed, and a
// request's latency runs from its scheduled time: with one worker held up
// by a slow first request, the ones scheduled meanwhile wait, and that
// wait is in their latency.
func TestOpenLoopCountsQueueing(t *testing.T) {
	var calls atomic.Int32
	seen := make([]atomic.Bool, 20)
	r := OpenLoop(100, 200*time.Millisecond, 1, func(i int) error {
		calls.Add(1)
		seen[i].Store(true)
		if i == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		if i == 19 {
			return errors.New("refused")
		}
		return nil
	})
	if r.Sent != 20 || calls.Load() != 20 {
		t.Fatalf("sent %d, called %d, want 20 and 20", r.Sent, calls.Load())
	}
	for i := range seen {
		if !seen[i].Load() {
			t.Errorf("request %d never sent", i)
		}
	}
	if r.Errors != 1 || r.FirstError != "refused" || len(r.Latencies) != 19 {
		t.Errorf("errors %d (%q), %d latencies; want 1 (\"refused\"), 19", r.Errors, r.FirstError, len(r.Latencies))
	}
	// Request 1, due 10 ms in, waited for request 0 until about 100 ms:
	// its latency is about 90 ms, not the time its own call took.
	if sorted := slices.IsSorted(r.Latencies); !sorted {
		t.Errorf("latencies not sorted: %v", r.Latencies)
	}
	if second := r.Latencies[len(r.Latencies)-2]; second < 80*time.Millisecond {
		t.Errorf("second-largest latency %s: the wait behind the slow request is not counted", second)
	}
}

func TestClosedLoopCountsEveryCall(t *testing.T) {
	var calls atomic.Int32
	r := ClosedLoop(50*time.Millisecond, 3, func() error {
		if calls.Add(1)%5 == 0 {
			return errors.New("busy")
		}
		time.Sleep(time.Millisecond)
		return nil
	})
	if int(calls.Load()) != r.Sent || r.Sent != len(r.Latencies)+r.Errors {
		t.Errorf("called %d, sent %d, %d latencies + %d errors", calls.Load(), r.Sent, len(r.Latencies), r.Errors)
	}
	if r.Errors == 0 || r.FirstError != "busy" {
		t.Errorf("errors %d (%q), want some \"busy\"", r.Errors, r.FirstError)
	}
	if r.Throughput() <= 0 {
		t.Errorf("throughput %f", r.Throughput())
	}
}

// A rate, duration or worker count below one sends nothing (and does not
// divide by zero).
func TestOpenLoopWithNothingToSend(t *testing.T) {
	for _, c := range []struct {
		rate, workers int
		d             time.Duration
	}{{0, 1, time.Second}, {-5, 1, time.Second}, {10, 0, time.Second}, {10, 1, 0}} {
		r := OpenLoop(c.rate, c.d, c.workers, func(int) error {
			t.Errorf("rate %d, %s, %d workers: sent", c.rate, c.d, c.workers)
			return nil
		})
		if r.Sent != 0 || len(r.Latencies) != 0 || r.Throughput() != 0 || r.Quantile(0.99) != 0 {
			t.Errorf("rate %d, %s, %d workers: %+v, want nothing", c.rate, c.d, c.workers, r)
		}
	}
}

// Interleaved splits one stream by request index: path k gets requests
// k, k+n, …; each path's result holds its own latencies and errors only.
func TestInterleavedSplitsTheStream(t *testing.T) {
	const slow = 50 * time.Millisecond
	var calls atomic.Int32
	rs := Interleaved(200, 200*time.Millisecond, 64, 3, func(i int) error {
		calls.Add(1)
		switch i % 3 {
		case 1:
			time.Sleep(slow)
		case 2:
			return errors.New("refused")
		}
		return nil
	})
	if len(rs) != 3 || calls.Load() != 40 {
		t.Fatalf("%d results, %d calls; want 3 and 40", len(rs), calls.Load())
	}
	for k, want := range []struct{ sent, ok, errs int }{{14, 14, 0}, {13, 13, 0}, {13, 0, 13}} {
		r := rs[k]
		if r.Sent != want.sent || len(r.Latencies) != want.ok || r.Errors != want.errs {
			t.Errorf("path %d: sent %d, %d latencies, %d errors; want %d, %d, %d", k, r.Sent, len(r.Latencies), r.Errors, want.sent, want.ok, want.errs)
		}
		if r.Elapsed <= 0 {
			t.Errorf("path %d: elapsed %s", k, r.Elapsed)
		}
	}
	if min := rs[1].Latencies[0]; min < slow {
		t.Errorf("the slow path's fastest request took %s, under its %s sleep: latencies went to the wrong path", min, slow)
	}
	if rs[2].FirstError != "refused" || rs[0].FirstError != "" {
		t.Errorf("first errors %q, %q; want \"\" and \"refused\"", rs[0].FirstError, rs[2].FirstError)
	}
	if !slices.IsSorted(rs[0].Latencies) || !slices.IsSorted(rs[1].Latencies) {
		t.Error("latencies not sorted")
	}
}

// With no path there is no result; with nothing to send, every path's
// result is empty.
func TestInterleavedWithNothingToSend(t *testing.T) {
	if rs := Interleaved(100, time.Second, 1, 0, func(int) error { return nil }); rs != nil {
		t.Errorf("no path: %v, want nil", rs)
	}
	rs := Interleaved(0, time.Second, 1, 2, func(int) error {
		t.Error("sent")
		return nil
	})
	if len(rs) != 2 || rs[0].Sent != 0 || rs[1].Sent != 0 {
		t.Errorf("rate 0: %+v, want two empty results", rs)
	}
}
