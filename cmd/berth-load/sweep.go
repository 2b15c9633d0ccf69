package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/berthdev/berth/internal/loadrun"
)

// sweepTarget is the p99 a rate must stay under to count as sustained.
const sweepTarget = 10 * time.Millisecond

// sweep reports, for the no-op and the pod handler, the throughput at
// saturation and the highest fixed rate (in steps of step/s, up to the
// saturation throughput) whose p99 stays under sweepTarget with no error.
func sweep(client *http.Client, base string, body []byte, duration time.Duration, workers, step int) error {
	fmt.Printf("%-12s %12s %12s %10s %10s %22s\n", "handler", "saturation", "(workers)", "p50", "p99", "highest rate p99<10ms")
	for _, h := range []struct{ name, path string }{{"no-op", "/noop"}, {"mutate-pods", podPath}} {
		url := base + h.path
		sat := loadrun.ClosedLoop(duration, workers, func() error { return send(client, url, body) })
		if sat.Errors > 0 {
			return fmt.Errorf("%s at saturation: %d errors; first: %s", h.name, sat.Errors, sat.FirstError)
		}
		best, bestP99 := 0, time.Duration(0)
		for rate := step; rate <= int(sat.Throughput())+step; rate += step {
			res := phase(client, url, body, rate, duration, workers)
			p99 := res.Quantile(0.99)
			fmt.Printf("  %-10s %6d/s: p50 %10s p99 %10s errors %d\n", h.name, rate, us(res.Quantile(0.5)), us(p99), res.Errors)
			if res.Errors > 0 || p99 >= sweepTarget {
				break
			}
			best, bestP99 = rate, p99
		}
		fmt.Printf("%-12s %10.0f/s %12d %10s %10s %14d/s (p99 %s)\n", h.name, sat.Throughput(), workers,
			us(sat.Quantile(0.5)), us(sat.Quantile(0.99)), best, us(bestP99))
	}
	return nil
}
