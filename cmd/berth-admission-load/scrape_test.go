package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/promtext"
)

// webhookMetrics is a piece of berth-webhook's /metrics (buckets cut
// short): the pod handler's histogram next to another handler's, and a
// counter that carries handler="mutate-pods" too.
const webhookMetrics = `# HELP berth_admission_duration_seconds Time to decide an admission request, body decoding included.
# TYPE berth_admission_duration_seconds histogram
berth_admission_duration_seconds_bucket{handler="mutate-pods",le="0.0005"} 70
berth_admission_duration_seconds_bucket{handler="mutate-pods",le="+Inf"} 80
berth_admission_duration_seconds_sum{handler="mutate-pods"} 0.02888
berth_admission_duration_seconds_count{handler="mutate-pods"} 80
berth_admission_duration_seconds_bucket{handler="validate-profiles",le="+Inf"} 1
berth_admission_duration_seconds_sum{handler="validate-profiles"} 0.001
berth_admission_duration_seconds_count{handler="validate-profiles"} 1
# HELP berth_admission_requests_total Admission requests by handler, operation and result (allowed, patched, denied, malformed).
# TYPE berth_admission_requests_total counter
berth_admission_requests_total{handler="mutate-pods",operation="CREATE",result="patched"} 80
`

// callsOf is the pod handler's histogram alone, zero for a metric with
// no series yet, and unread for a failed scrape or a metric that is no
// histogram, which no difference with another scrape turns into a number.
func TestCallsOf(t *testing.T) {
	f, err := promtext.Parse(strings.NewReader(webhookMetrics))
	if err != nil {
		t.Fatal(err)
	}
	pods := promtext.Labels{"handler": "mutate-pods"}
	read := func(name string) func() (promtext.Histogram, error) {
		return func() (promtext.Histogram, error) { return f.Histogram(name, pods) }
	}
	failed := func() (promtext.Histogram, error) { return promtext.Histogram{}, errors.New("connection refused") }
	for _, tc := range []struct {
		what string
		read func() (promtext.Histogram, error)
		want webhookCalls
	}{
		{"the pod handler", read("berth_admission_duration_seconds"), webhookCalls{sum: 0.02888, count: 80}},
		{"a failed scrape", failed, unread},
		{"a counter", read("berth_admission_requests_total"), unread},
		{"an absent metric", read("apiserver_admission_webhook_admission_duration_seconds"), webhookCalls{}},
	} {
		got := callsOf(tc.read())
		if !sameCalls(got, tc.want) {
			t.Errorf("%s: callsOf = %+v, want %+v", tc.what, got, tc.want)
		}
		after := webhookCalls{sum: 1, count: 100}
		if d := after.minus(got); got.known() != d.known() {
			t.Errorf("%s: a later scrape minus it is %+v", tc.what, d)
		}
		if p := after.plus(got); got.known() != p.known() {
			t.Errorf("%s: pooled with another round it is %+v", tc.what, p)
		}
	}
}

// sameCalls compares by value, unread equal to unread.
func sameCalls(a, b webhookCalls) bool {
	if !a.known() || !b.known() {
		return a.known() == b.known()
	}
	return a == b
}
