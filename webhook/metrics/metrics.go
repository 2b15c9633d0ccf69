// Package metrics holds the webhook's Prometheus metrics on a registry of its
// own, so tests can build as many servers as they like.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/berthdev/berth/selection"
)

// Metrics implements admission.Observer and exposes cache sizes.
type Metrics struct {
	Registry   *prometheus.Registry
	admissions *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	panics     *prometheus.CounterVec
	cache      *prometheus.GaugeVec
	certLoads  prometheus.Counter
	decisions  *prometheus.CounterVec
	denials    *prometheus.CounterVec
	unavail    *prometheus.CounterVec
	violations *prometheus.CounterVec
}

// New registers the webhook metrics and the Go/process collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_admission_requests_total",
			Help: "Admission requests by handler, operation and result (allowed, patched, denied, malformed).",
		}, []string{"handler", "operation", "result"}),
		// Buckets follow the apiserver's admission webhook histogram at the
		// low end, finer below 5 ms where a healthy handler lives.
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "berth_admission_duration_seconds",
			Help:    "Time to decide an admission request, body decoding included.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1, 2.5},
		}, []string{"handler"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_admission_panics_total",
			Help: "Handler panics recovered and answered with a denial.",
		}, []string{"handler"}),
		cache: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "berth_cache_objects",
			Help: "Objects held in the webhook's caches, by kind.",
		}, []string{"kind"}),
		certLoads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "berth_certificate_reloads_total",
			Help: "Serving certificate loads (the first load included).",
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_selection_decisions_total",
			Help: "Decisions the webhook made, by component, runtime, AcceleratorClass (\"\" for none), how the class was chosen and the strategy in force.",
		}, []string{"component", "runtime", "class", "chosen_by", "strategy"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_selection_denials_total",
			Help: "InferenceServices denied because nothing could be resolved, by selection's denial code.",
		}, []string{"code"}),
		unavail: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_selection_unavailable_class_total",
			Help: "Decisions that chose an AcceleratorClass whose Ready nodes had no room for a group at the time (the service waits for capacity).",
		}, []string{"class"}),
		violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_policy_violations_total",
			Help: "ServingPolicy violations found at admission (dry runs included), by policy, rule and the action taken (Deny, Warn, Audit; a violation of a policy with several actions counts once per action).",
		}, []string{"policy", "rule", "action"}),
	}
	m.Registry.MustRegister(m.admissions, m.latency, m.panics, m.cache, m.certLoads, m.decisions, m.denials, m.unavail, m.violations,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe records one admission.
func (m *Metrics) Observe(handler, operation, result string, elapsed time.Duration) {
	m.admissions.WithLabelValues(handler, operation, result).Inc()
	m.latency.WithLabelValues(handler).Observe(elapsed.Seconds())
}

// Panicked records a recovered handler panic.
func (m *Metrics) Panicked(handler string) { m.panics.WithLabelValues(handler).Inc() }

// SetCacheSize records how many objects of a kind are cached.
func (m *Metrics) SetCacheSize(kind string, n int) { m.cache.WithLabelValues(kind).Set(float64(n)) }

// CertificateLoaded counts a serving certificate (re)load.
func (m *Metrics) CertificateLoaded() { m.certLoads.Inc() }

// Decided counts one decision (handlers.DecisionObserver).
func (m *Metrics) Decided(component string, d selection.DecisionMetrics) {
	m.decisions.WithLabelValues(component, d.Runtime, d.Class, d.ChosenBy, d.Strategy).Inc()
	if d.Unavailable {
		m.unavail.WithLabelValues(d.Class).Inc()
	}
}

// Denied counts one denial by selection's code ("unknown" when it has none).
func (m *Metrics) Denied(code string) {
	if code == "" {
		code = "unknown"
	}
	m.denials.WithLabelValues(code).Inc()
}

// Violated counts one policy violation (handlers.ViolationObserver).
func (m *Metrics) Violated(policy, rule, action string) {
	m.violations.WithLabelValues(policy, rule, action).Inc()
}
