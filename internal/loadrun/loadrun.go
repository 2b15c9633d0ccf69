// Package loadrun is the driving half shared by berth's load tools
// (berth-load, berth-admission-load): an open-loop sender at a fixed rate,
// the results of its phases, pooled over rounds, the order of the paths in
// each round, and the stalls of the machine they run on.
//
// Rules:
//   - Open loop: a request's latency runs from its scheduled time, not from
//     when a worker got to it, so a slow server cannot hide its queueing
//     (coordinated omission).
//   - Paths compared in one run are measured in rounds, each starting one
//     path later than the one before (RoundOrder), and pooled (Merge): a
//     machine that gets busier or quieter during a run weighs on every path
//     alike, and no path always runs first or last. Finer still, the paths
//     can share one stream, taking turns request by request (Interleaved):
//     then even a stall of a few milliseconds falls on every path alike.
//   - A tail is reported with its machine's floor: the stalls a spinning
//     thread sees there (MeasureStalls), which no request can avoid.
package loadrun

import (
	"slices"
	"sync"
	"time"
)

// Result is what one or more phases measured: the latencies of the
// requests that succeeded, in increasing order, and the count of those
// that failed.
type Result struct {
	Latencies  []time.Duration // sorted
	Sent       int
	Errors     int
	FirstError string
	Elapsed    time.Duration // time spent sending, summed over pooled phases
}

// Quantile is the latency at q (0.5 the median, 1 the maximum); 0 when
// nothing succeeded.
func (r *Result) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[int(q*float64(len(r.Latencies)-1))]
}

// Throughput is successful requests per second of sending.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Latencies)) / r.Elapsed.Seconds()
}

// Merge is r and o pooled; r may be nil. Neither is changed.
func (r *Result) Merge(o *Result) *Result {
	out := &Result{}
	if r != nil {
		out.add(r)
	}
	out.add(o)
	slices.Sort(out.Latencies)
	return out
}

// add pools o into r, leaving r's latencies unsorted.
func (r *Result) add(o *Result) {
	r.Latencies = append(r.Latencies, o.Latencies...)
	r.Sent += o.Sent
	r.Errors += o.Errors
	r.Elapsed += o.Elapsed
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
}

// OpenLoop calls send rate times a second for d, request i at start + i/rate,
// from at most workers goroutines; when all are busy, requests wait and the
// wait counts. It returns when every request has ended; with a rate, a
// duration or workers below one it sends nothing.
func OpenLoop(rate int, d time.Duration, workers int, send func(i int) error) *Result {
	return Interleaved(rate, d, workers, 1, send)[0]
}

// Interleaved is OpenLoop's stream shared by n paths: request i belongs to
// path i mod n, and the result of each path holds its own requests. The
// paths take turns within one stream, so a stall of the machine falls on
// all of them alike, and each is sent rate/n times a second. With n below
// one it sends nothing and returns no result.
func Interleaved(rate int, d time.Duration, workers, n int, send func(i int) error) []*Result {
	if n < 1 {
		return nil
	}
	out := make([]*Result, n)
	for k := range out {
		out[k] = &Result{}
	}
	if rate < 1 || d <= 0 || workers < 1 {
		return out
	}
	lat, errs, elapsed := stream(rate, int(float64(rate)*d.Seconds()), workers, send)
	for i := range lat {
		r := out[i%n]
		r.Sent++
		r.record(lat[i], errs[i])
	}
	for _, r := range out {
		r.Elapsed = elapsed
		slices.Sort(r.Latencies)
	}
	return out
}

// stream sends total requests at rate a second from workers goroutines
// and returns each one's latency from its scheduled time, its error, and
// the time from the first schedule until the last ended.
func stream(rate, total, workers int, send func(i int) error) ([]time.Duration, []error, time.Duration) {
	interval := time.Second / time.Duration(rate)
	scheduled := make([]time.Time, total)
	lat := make([]time.Duration, total)
	errs := make([]error, total)
	jobs := make(chan int, total)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				errs[i] = send(i)
				lat[i] = time.Since(scheduled[i])
			}
		}()
	}
	start := time.Now()
	for i := 0; i < total; i++ {
		scheduled[i] = start.Add(time.Duration(i) * interval)
		if wait := time.Until(scheduled[i]); wait > 0 {
			time.Sleep(wait)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return lat, errs, time.Since(start)
}

// ClosedLoop calls send back to back from workers goroutines for d: the
// throughput is the most the server answers with that many requests in
// flight; each latency is one call's.
func ClosedLoop(d time.Duration, workers int, send func() error) *Result {
	var mu sync.Mutex
	r := &Result{}
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := &Result{}
			for time.Now().Before(deadline) {
				t := time.Now()
				err := send()
				own.Sent++
				own.record(time.Since(t), err)
			}
			mu.Lock()
			r.add(own)
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.Elapsed = time.Since(start)
	slices.Sort(r.Latencies)
	return r
}

// record counts one request: its latency if it succeeded, else its error.
func (r *Result) record(lat time.Duration, err error) {
	if err == nil {
		r.Latencies = append(r.Latencies, lat)
		return
	}
	r.Errors++
	if r.FirstError == "" {
		r.FirstError = err.Error()
	}
}

// RoundOrder is the order of n paths in a round: round r starts with path
// r mod n, so over n rounds each path holds each place once.
func RoundOrder(round, n int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = (round + k) % n
	}
	return order
}
