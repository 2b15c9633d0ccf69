package testengine

import (
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are one server's Prometheus metrics, on a registry of its own.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	running  atomic.Int64
	waiting  atomic.Int64
	adapters atomic.Int64
	kv       *prometheus.CounterVec
	upstream *prometheus.CounterVec
}

func newMetrics(mode Mode) *metrics {
	m := &metrics{registry: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_test_engine_requests_total",
		Help: "HTTP requests the test engine answered, by endpoint and status code.",
	}, []string{"endpoint", "code"})
	m.registry.MustRegister(m.requests)
	gauge := func(name, help string, v *atomic.Int64) {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(v.Load()) }))
	}
	if mode == ModeRouter {
		m.upstream = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_test_engine_router_upstream_requests_total",
			Help: "Requests the router sent to workers, by role and result (the worker's status code, or error).",
		}, []string{"role", "result"})
		m.registry.MustRegister(m.upstream)
		gauge("berth_test_engine_running_requests", "Requests being proxied now.", &m.running)
		return m
	}
	gauge("berth_test_engine_running_requests", "Generation requests being answered now.", &m.running)
	gauge("berth_test_engine_queue_depth", "Generation requests waiting for a slot (--max-running-requests / --max-num-seqs).", &m.waiting)
	gauge("berth_test_engine_lora_adapters_loaded", "LoRA adapters loaded.", &m.adapters)
	// The engines' own names for the same gauges, so autoscalers and
	// dashboards written for them read the stand-in too.
	if mode == ModeVLLM {
		gauge("vllm:num_requests_running", "Requests running (as vLLM names it).", &m.running)
		gauge("vllm:num_requests_waiting", "Requests waiting (as vLLM names it).", &m.waiting)
	} else {
		gauge("sglang:num_running_reqs", "Requests running (as SGLang names it).", &m.running)
		gauge("sglang:num_queue_reqs", "Requests queued (as SGLang names it).", &m.waiting)
	}
	m.kv = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_test_engine_kv_transfers_total",
		Help: "Prefill/decode KV hand-overs: rooms stored and served by a prefill, fetched by a decode.",
	}, []string{"direction"})
	m.registry.MustRegister(m.kv)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// statusWriter records the status code; it passes Flush through so SSE
// streams are not buffered.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// instrument counts a handler's answers and stamps the stand-in header.
func (m *metrics) instrument(endpoint string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderStandIn, "stand-in")
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		m.requests.WithLabelValues(endpoint, strconv.Itoa(sw.code)).Inc()
	}
}
