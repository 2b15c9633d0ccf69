package sidecar

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the sidecar's Prometheus metrics, on a registry of its own.
type Metrics struct {
	registry       *prometheus.Registry
	registered     prometheus.Gauge
	registrations  prometheus.Counter
	routerErrors   prometheus.Counter
	adaptersLoaded prometheus.Gauge
	adaptersFailed prometheus.Gauge
	adapterOps     *prometheus.CounterVec
}

// NewMetrics registers the sidecar's metrics and the Go and process
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{registry: prometheus.NewRegistry(),
		registered: prometheus.NewGauge(prometheus.GaugeOpts{Name: "berth_engine_sidecar_registered",
			Help: "1 while the router lists the worker, else 0."}),
		registrations: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_engine_sidecar_registrations_total",
			Help: "Registrations sent to the router (the first, and each after the router lost the worker)."}),
		routerErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_engine_sidecar_router_errors_total",
			Help: "Heartbeats on which the router could not be asked or refused the registration."}),
		adaptersLoaded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "berth_engine_sidecar_lora_adapters_loaded",
			Help: "LoRA adapters the engine served at the last check."}),
		adaptersFailed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "berth_engine_sidecar_lora_adapters_failed",
			Help: "Wanted LoRA adapters whose last load failed."}),
		adapterOps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_engine_sidecar_lora_operations_total",
			Help: "LoRA operations sent to the engine, by result: load, load_failed, unload."}, []string{"op"}),
	}
	m.registry.MustRegister(m.registered, m.registrations, m.routerErrors, m.adaptersLoaded, m.adaptersFailed, m.adapterOps,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
