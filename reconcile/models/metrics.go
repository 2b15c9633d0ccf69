package models

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics of the model metadata controller.
type Metrics struct {
	// discoveries counts model metadata resolutions by result: Declared,
	// Discovered, or the failure's reason.
	discoveries       *prometheus.CounterVec
	discoveryDuration prometheus.Histogram
}

// NewMetrics registers the controller's metrics on reg (a new registry
// when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		discoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "berth_model_discoveries_total", Help: "Model metadata resolutions by result: Declared, Discovered, or the failure's reason (Unauthorized, NotFound, ConfigMissing, HeaderMalformed, TooLarge, Unavailable, CredentialsMissing, InvalidStorageURI, NoStorage, Unsupported, InspectFailed).",
		}, []string{"result"}),
		discoveryDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "berth_model_discovery_duration_seconds", Help: "Time to read one model's metadata from its files (hf://, s3://).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
	}
	reg.MustRegister(m.discoveries, m.discoveryDuration)
	return m
}

// discovery counts one model metadata resolution by result.
func (m *Metrics) discovery(result string) { m.discoveries.WithLabelValues(result).Inc() }

func (m *Metrics) observeDiscovery(d time.Duration) { m.discoveryDuration.Observe(d.Seconds()) }

// Discoveries returns the model metadata resolutions so far by result
// (tests).
func (m *Metrics) Discoveries() map[string]float64 {
	out := map[string]float64{}
	ch := make(chan prometheus.Metric, 64)
	go func() { m.discoveries.Collect(ch); close(ch) }()
	for metric := range ch {
		var pb dto.Metric
		if err := metric.Write(&pb); err == nil && len(pb.GetLabel()) == 1 {
			out[pb.GetLabel()[0].GetValue()] = pb.GetCounter().GetValue()
		}
	}
	return out
}
