package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/procstat"
	"github.com/berthdev/berth/internal/promtext"
	"github.com/berthdev/berth/webhook/server"
)

// Metrics of the reconciler's /metrics the report uses.
const (
	metricWrites = "berth_reconciler_api_writes_total"
	metricSyncs  = "berth_reconciler_reconcile_duration_seconds" // a histogram: reconciles are its count
	metricErrors = "berth_reconciler_reconcile_errors_total"
	metricHeap   = "go_memstats_heap_inuse_bytes"
	metricSys    = "go_memstats_sys_bytes"
)

// procSample is a process's CPU seconds (user+system) and memory.
type procSample struct {
	cpu            float64
	rssKiB, hwmKiB int64 // VmRSS, VmHWM (peak RSS)
}

// readProc reads /proc/<pid>/stat and /proc/<pid>/status (procstat).
func readProc(pid int) (procSample, error) {
	secs, err := procstat.CPUSeconds(pid)
	if err != nil {
		return procSample{}, err
	}
	m, err := procstat.Memory(pid)
	return procSample{cpu: secs, rssKiB: m.RSS / 1024, hwmKiB: m.Peak / 1024}, err
}

// recSample is what the report reads of one scrape of the reconciler's
// /metrics.
type recSample struct {
	writes           map[string]float64 // berth_reconciler_api_writes_total by "verb resource": "create pods"
	syncs, errors    float64            // reconciles (metricSyncs' count) and those that failed
	heapInuse, goSys float64            // bytes of the Go heap in use and from the OS
}

// recMetrics scrapes the reconciler's /metrics (its ProbeURL).
func (l *load) recMetrics(ctx context.Context) (recSample, error) {
	f, err := promtext.Scrape(ctx, &http.Client{Timeout: 5 * time.Second}, l.rec.ProbeURL+"/metrics")
	if err != nil {
		return recSample{}, err
	}
	return sampleOf(f)
}

// sampleOf picks the report's metrics out of a scrape of the reconciler.
func sampleOf(f promtext.Families) (recSample, error) {
	writes, errW := f.Series(metricWrites, nil)
	syncs, errS := f.Histogram(metricSyncs, nil)
	failed, errE := f.Value(metricErrors, nil)
	heap, errH := f.Value(metricHeap, nil)
	sys, errO := f.Value(metricSys, nil)
	s := recSample{writes: map[string]float64{}, syncs: syncs.Count, errors: failed, heapInuse: heap, goSys: sys}
	for _, w := range writes {
		s.writes[w.Labels["verb"]+" "+w.Labels["resource"]] += w.Value
	}
	return s, errors.Join(errW, errS, errE, errH, errO)
}

// webhookCalls is the apiserver's count and total seconds of its calls to
// berth's pod webhook (promtext.APIServerWebhookCalls): the whole round
// trip a pod create waits for.
func (l *load) webhookCalls(ctx context.Context) (count, seconds float64, err error) {
	h, err := promtext.APIServerWebhookCalls(ctx, l.kube.CoreV1().RESTClient(), server.WebhookMutatePods)
	return h.Count, h.Sum, err
}

// diff is a-b per key, the keys of both.
func diff(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		out[k] = v - b[k]
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out[k] = -v
		}
	}
	return out
}

func total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

func clusterServiceCIDR() string { return cluster.ServiceCIDR }
