package main

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"
)

// saturate sends back to back from workers goroutines for duration
// (closed loop): the throughput is the most the handler serves with that
// many requests in flight; latencies are per request.
func saturate(client *http.Client, url string, body []byte, duration time.Duration, workers int) *result {
	var mu sync.Mutex
	r := &result{}
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lats []time.Duration
			var sent, errs int
			first := ""
			for time.Now().Before(deadline) {
				t := time.Now()
				err := send(client, url, body)
				sent++
				if err != "" {
					errs++
					if first == "" {
						first = err
					}
					continue
				}
				lats = append(lats, time.Since(t))
			}
			mu.Lock()
			r.latencies = append(r.latencies, lats...)
			r.sent += sent
			r.errors += errs
			if r.firstError == "" {
				r.firstError = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	return r
}

// sweepTarget is the p99 a rate must stay under to count as sustained.
const sweepTarget = 10 * time.Millisecond

// sweep reports, for the no-op and the pod handler, the throughput at
// saturation and the highest fixed rate (in steps of step/s, up to the
// saturation throughput) whose p99 stays under sweepTarget with no error.
func sweep(client *http.Client, base string, body []byte, duration time.Duration, workers, step int) error {
	fmt.Printf("%-12s %12s %12s %10s %10s %22s\n", "handler", "saturation", "(workers)", "p50", "p99", "highest rate p99<10ms")
	for _, h := range []struct{ name, path string }{{"no-op", "/noop"}, {"mutate-pods", podPath}} {
		url := base + h.path
		sat := saturate(client, url, body, duration, workers)
		if sat.errors > 0 {
			return fmt.Errorf("%s at saturation: %d errors; first: %s", h.name, sat.errors, sat.firstError)
		}
		best, bestP99 := 0, time.Duration(0)
		for rate := step; rate <= int(sat.throughput())+step; rate += step {
			res, err := phase(client, url, body, rate, duration, workers)
			if err != nil {
				return err
			}
			p99 := res.quantile(0.99)
			fmt.Printf("  %-10s %6d/s: p50 %10s p99 %10s errors %d\n", h.name, rate, res.quantile(0.5), p99, res.errors)
			if res.errors > 0 || p99 >= sweepTarget {
				break
			}
			best, bestP99 = rate, p99
		}
		fmt.Printf("%-12s %10.0f/s %12d %10s %10s %14d/s (p99 %s)\n", h.name, sat.throughput(), workers,
			sat.quantile(0.5), sat.quantile(0.99), best, bestP99)
	}
	return nil
}
