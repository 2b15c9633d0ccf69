package servinggroups

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics of the reconciler. Group counts are kept per service and summed
// when scraped, so a service that goes away stops counting at once.
type Metrics struct {
	Registry *prometheus.Registry

	duration prometheus.Histogram
	errors   prometheus.Counter
	writes   *prometheus.CounterVec
	synced   prometheus.Gauge
	// conflicts counts runtimes whose PriorityConflict condition is True.
	conflicts prometheus.Gauge
	// nudges counts services patched with ome.io/model-metadata-revision
	// and/or ome.io/runtime-revision (one per patch).
	nudges prometheus.Counter

	mu       sync.Mutex
	groups   map[string]map[string]int // service key → state → groups
	rollouts map[string]bool           // service key → rolling now

	groupsDesc, rolloutsDesc *prometheus.Desc
}

// NewMetrics registers the reconciler's metrics on reg (a new registry
// when nil).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		Registry: reg,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "berth_reconciler_reconcile_duration_seconds", Help: "Time to reconcile one InferenceService.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "berth_reconciler_reconcile_errors_total", Help: "Reconciles that failed and were retried with backoff.",
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_reconciler_api_writes_total", Help: "Writes sent to the API server, by verb and resource.",
		}, []string{"verb", "resource"}),
		synced: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "berth_reconciler_caches_synced", Help: "1 once the informer caches have synced.",
		}),
		conflicts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "berth_runtime_priority_conflicts", Help: "Runtimes tied in priority with another of their scope (created concurrently past the webhook's check).",
		}),
		nudges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "berth_model_metadata_nudges_total", Help: "Unpinned InferenceServices patched with ome.io/model-metadata-revision or ome.io/runtime-revision so the webhook resolves them.",
		}),
		groups:   map[string]map[string]int{},
		rollouts: map[string]bool{},
		groupsDesc: prometheus.NewDesc("berth_reconciler_groups", "Serving groups of all InferenceServices by state (ready, notready, outdated).",
			[]string{"state"}, nil),
		rolloutsDesc: prometheus.NewDesc("berth_reconciler_rollouts_in_progress", "InferenceServices rolling groups to a new revision now.", nil, nil),
	}
	reg.MustRegister(m.duration, m.errors, m.writes, m.synced, m.conflicts, m.nudges, m)
	return m
}

func (m *Metrics) observeSync(d time.Duration, err error) {
	m.duration.Observe(d.Seconds())
	if err != nil {
		m.errors.Inc()
	}
}

// write counts one API write.
func (m *Metrics) write(verb, resource string) { m.writes.WithLabelValues(verb, resource).Inc() }

// CountWrite counts one API write of another controller on
// berth_reconciler_api_writes_total (the manager wires it).
func (m *Metrics) CountWrite(verb, resource string) { m.write(verb, resource) }

// Writes returns the writes sent so far by "verb resource" (tests and the
// load tool).
func (m *Metrics) Writes() map[string]float64 {
	out := map[string]float64{}
	ch := make(chan prometheus.Metric, 64)
	go func() { m.writes.Collect(ch); close(ch) }()
	for metric := range ch {
		var pb dto.Metric
		if err := metric.Write(&pb); err == nil {
			key := ""
			for i, l := range pb.GetLabel() {
				if i > 0 {
					key += " "
				}
				key += l.GetValue()
			}
			out[key] = pb.GetCounter().GetValue()
		}
	}
	return out
}

// setService records a service's groups by state and whether it rolls.
func (m *Metrics) setService(key string, states map[string]int, rolling bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groups[key] = states
	m.rollouts[key] = rolling
}

func (m *Metrics) forgetService(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.groups, key)
	delete(m.rollouts, key)
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.groupsDesc
	ch <- m.rolloutsDesc
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	sums := map[string]int{"ready": 0, "notready": 0, "outdated": 0}
	for _, s := range m.groups {
		for k, v := range s {
			sums[k] += v
		}
	}
	rolling := 0
	for _, r := range m.rollouts {
		if r {
			rolling++
		}
	}
	m.mu.Unlock()
	for state, n := range sums {
		ch <- prometheus.MustNewConstMetric(m.groupsDesc, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(m.rolloutsDesc, prometheus.GaugeValue, float64(rolling))
}
