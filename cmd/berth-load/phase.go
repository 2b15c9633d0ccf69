package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

type result struct {
	latencies  []time.Duration
	sent       int
	errors     int
	firstError string
	elapsed    time.Duration
}

func (r *result) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(q * float64(len(r.latencies)-1))
	return r.latencies[i].Round(time.Microsecond)
}

func (r *result) throughput() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

// phase sends rate requests per second for duration, open loop: latency is
// measured from each request's scheduled time, so a slow server cannot hide
// its queueing (coordinated omission). At most workers requests are in
// flight; when all are busy, requests wait and that wait counts.
func phase(client *http.Client, url string, body []byte, rate int, duration time.Duration, workers int) (*result, error) {
	total := int(float64(rate) * duration.Seconds())
	interval := time.Second / time.Duration(rate)
	type sample struct {
		lat time.Duration
		err string
	}
	samples := make(chan sample, total)
	jobs := make(chan time.Time, total)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for scheduled := range jobs {
				err := send(client, url, body)
				samples <- sample{lat: time.Since(scheduled), err: err}
			}
		}()
	}
	start := time.Now()
	for i := 0; i < total; i++ {
		at := start.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		jobs <- at
	}
	close(jobs)
	wg.Wait()
	close(samples)
	r := &result{sent: total, elapsed: time.Since(start)}
	for s := range samples {
		if s.err != "" {
			r.errors++
			if r.firstError == "" {
				r.firstError = s.err
			}
			continue
		}
		r.latencies = append(r.latencies, s.lat)
	}
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	return r, nil
}

// send posts one review and checks it was admitted; "" means success.
func send(client *http.Client, url string, body []byte) string {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &review); err != nil || review.Response == nil {
		return fmt.Sprintf("bad response: %.200s", b)
	}
	if !review.Response.Allowed {
		return "denied: " + review.Response.Result.Message
	}
	return ""
}
