package promtext

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one scrape: its metric families by name. A histogram's
// _bucket, _sum and _count lines are one family under the histogram's own
// name.
type Families map[string]*dto.MetricFamily

// Labels are the label=value pairs a series must carry, each exactly;
// labels not named are not looked at. A value "" matches a series without
// the label. Nil matches every series.
type Labels map[string]string

// Histogram is the observations of a histogram's series, summed: how
// many there were and their total.
type Histogram struct{ Count, Sum float64 }

// Series is one series of a counter, gauge or untyped family: its labels
// and its value.
type Series struct {
	Labels map[string]string
	Value  float64
}

// Parse reads one exposition in the Prometheus text format. Malformed
// text is an error (expfmt.ParseError: the line and what is wrong with
// it) and no families.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return fams, nil
}

// Scrape GETs url with c, asking for the text format, and parses the
// answer. An answer other than 200 OK is an error with its status and the
// start of its body.
func Scrape(ctx context.Context, c *http.Client, url string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	fams, err := Parse(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return fams, nil
}

// Histogram sums the count and the sum of the series of histogram name
// that match. A family that is absent has no series: zero. A family of
// another type is an error.
func (f Families) Histogram(name string, match Labels) (Histogram, error) {
	var h Histogram
	ms, err := f.metrics(name, match, dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM)
	for _, m := range ms {
		hist := m.GetHistogram()
		count := float64(hist.GetSampleCount())
		if hist.SampleCountFloat != nil {
			count = hist.GetSampleCountFloat()
		}
		h.Count += count
		h.Sum += hist.GetSampleSum()
	}
	return h, err
}

// Series is the series of counter, gauge or untyped family name that
// match, in the order of the exposition. A family that is absent has no
// series; a family of another type is an error.
func (f Families) Series(name string, match Labels) ([]Series, error) {
	ms, err := f.metrics(name, match, dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED)
	var out []Series
	for _, m := range ms {
		var v float64
		switch {
		case m.Counter != nil:
			v = m.GetCounter().GetValue()
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		default:
			v = m.GetUntyped().GetValue()
		}
		out = append(out, Series{Labels: labelsOf(m), Value: v})
	}
	return out, err
}

// Value is the sum of Series(name, match): the value of a family with
// one series and no labels (match nil), or a labelled family summed over
// the series that match.
func (f Families) Value(name string, match Labels) (float64, error) {
	ss, err := f.Series(name, match)
	var v float64
	for _, s := range ss {
		v += s.Value
	}
	return v, err
}

// metrics is the series of family name that match, when the family is of
// one of types; none when it is absent.
func (f Families) metrics(name string, match Labels, types ...dto.MetricType) ([]*dto.Metric, error) {
	mf, ok := f[name]
	if !ok {
		return nil, nil
	}
	if !slices.Contains(types, mf.GetType()) {
		want := make([]string, len(types))
		for i, t := range types {
			want[i] = typeName(t)
		}
		return nil, fmt.Errorf("metric %s is a %s, not a %s", name, typeName(mf.GetType()), strings.Join(want, " or "))
	}
	var out []*dto.Metric
	for _, m := range mf.GetMetric() {
		if matches(labelsOf(m), match) {
			out = append(out, m)
		}
	}
	return out, nil
}

// typeName is t as a TYPE line spells it: "counter", "gauge_histogram".
func typeName(t dto.MetricType) string { return strings.ToLower(t.String()) }

// labelsOf is m's labels by name.
func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// matches tells whether labels carry every pair of match ("" for a label
// they do not have).
func matches(labels map[string]string, match Labels) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}
