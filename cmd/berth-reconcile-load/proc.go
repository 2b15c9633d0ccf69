package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/procstat"
)

// Series of the reconciler's /metrics the report uses.
const (
	metricWrites = "berth_reconciler_api_writes_total"
	metricSyncs  = "berth_reconciler_reconcile_duration_seconds_count"
	metricErrors = "berth_reconciler_reconcile_errors_total"
)

// procSample is a process's CPU seconds (user+system) and memory.
type procSample struct {
	cpu            float64
	rssKiB, hwmKiB int64 // VmRSS, VmHWM (peak RSS)
}

// readProc reads /proc/<pid>/stat and /proc/<pid>/status (procstat).
func readProc(pid int) (procSample, error) {
	cpu, err := procstat.CPU(pid)
	if err != nil {
		return procSample{}, err
	}
	m, err := procstat.Memory(pid)
	secs := float64(cpu) / float64(time.Second) // ticks/100 to the bit, where Seconds can be an ulp off
	return procSample{cpu: secs, rssKiB: m.RSS / 1024, hwmKiB: m.Peak / 1024}, err
}

// recMetrics scrapes the reconciler's /metrics (its ProbeURL): every
// series, keyed as exposed (name{labels}).
func (l *load) recMetrics() (map[string]float64, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(l.rec.ProbeURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s/metrics: %s: %s", l.rec.ProbeURL, resp.Status, b)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text format: every series, keyed as
// exposed (name{labels}).
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// webhookCalls is the apiserver's count and total seconds of its calls to
// berth's pod webhook (apiserver_admission_webhook_admission_duration_seconds
// for pods.mutate.ome.io): the whole round trip a pod create waits for.
func (l *load) webhookCalls(ctx context.Context) (count, seconds float64, err error) {
	raw, err := l.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, err
	}
	m, err := parseMetrics(bytes.NewReader(raw))
	for series, v := range m {
		if !strings.Contains(series, `name="pods.mutate.ome.io"`) {
			continue
		}
		switch {
		case strings.HasPrefix(series, "apiserver_admission_webhook_admission_duration_seconds_count{"):
			count += v
		case strings.HasPrefix(series, "apiserver_admission_webhook_admission_duration_seconds_sum{"):
			seconds += v
		}
	}
	return count, seconds, err
}

// recWrites is the reconciler's write counters by "verb resource".
func (l *load) recWrites() (map[string]float64, error) {
	m, err := l.recMetrics()
	return writesOf(m), err
}

// writesOf picks berth_reconciler_api_writes_total{resource="pods",verb="create"}
// and the like out of a scrape, keyed "create pods".
func writesOf(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for series, v := range m {
		labels, ok := strings.CutPrefix(series, metricWrites+"{")
		if !ok {
			continue
		}
		var verb, resource string
		for _, kv := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
			k, val, _ := strings.Cut(kv, "=")
			val = strings.Trim(val, `"`)
			switch k {
			case "verb":
				verb = val
			case "resource":
				resource = val
			}
		}
		out[verb+" "+resource] += v
	}
	return out
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

// loadAvg is the first three fields of /proc/loadavg, or "unknown".
func loadAvg() string {
	l, err := procstat.LoadAvg()
	if err != nil {
		return "unknown"
	}
	return l.String()
}

func clusterServiceCIDR() string { return cluster.ServiceCIDR }
