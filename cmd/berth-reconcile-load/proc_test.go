package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/promtext"
)

// reconcilerMetrics is a piece of berth-reconciler's /metrics as it
// serves it (buckets cut short), and two resource names holding a comma,
// a quote and a brace: neither counts as "create pods".
const reconcilerMetrics = `# HELP berth_reconciler_api_writes_total Writes sent to the API server, by verb and resource.
# TYPE berth_reconciler_api_writes_total counter
berth_reconciler_api_writes_total{resource="controllerrevisions",verb="create"} 5
berth_reconciler_api_writes_total{resource="pods",verb="create"} 10
berth_reconciler_api_writes_total{resource="pods,services",verb="create"} 3
berth_reconciler_api_writes_total{resource="inferenceservices/status",verb="update"} 15
berth_reconciler_api_writes_total{resource="x,verb=\"patch\"}",verb="create"} 1
# HELP berth_reconciler_caches_synced 1 once the informer caches have synced.
# TYPE berth_reconciler_caches_synced gauge
berth_reconciler_caches_synced 1
# HELP berth_reconciler_reconcile_duration_seconds Time to reconcile one InferenceService.
# TYPE berth_reconciler_reconcile_duration_seconds histogram
berth_reconciler_reconcile_duration_seconds_bucket{le="0.0005"} 0
berth_reconciler_reconcile_duration_seconds_bucket{le="+Inf"} 41
berth_reconciler_reconcile_duration_seconds_sum 0.123
berth_reconciler_reconcile_duration_seconds_count 41
# HELP berth_reconciler_reconcile_errors_total Reconciles that failed and were retried with backoff.
# TYPE berth_reconciler_reconcile_errors_total counter
berth_reconciler_reconcile_errors_total 2
# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1.048576e+07
# HELP go_memstats_sys_bytes Number of bytes obtained from system.
# TYPE go_memstats_sys_bytes gauge
go_memstats_sys_bytes 2.7054344e+07
`

// sampleOf keys the writes "verb resource" by the parsed labels and reads
// the reconciles, failures and memory; a scrape before any write or
// reconcile (a fresh reconciler) is zeros, and a metric of another type
// than the report expects is an error.
func TestSampleOf(t *testing.T) {
	for _, tc := range []struct {
		what, text string
		want       recSample
		err        string
	}{
		{"a reconciler that wrote", reconcilerMetrics, recSample{
			writes: map[string]float64{"create controllerrevisions": 5, "create pods": 10, "create pods,services": 3, "update inferenceservices/status": 15, `create x,verb="patch"}`: 1},
			syncs:  41, errors: 2, heapInuse: 10485760, goSys: 27054344,
		}, ""},
		{"a fresh reconciler", "# HELP go_memstats_sys_bytes Number of bytes obtained from system.\n# TYPE go_memstats_sys_bytes gauge\ngo_memstats_sys_bytes 8e+06\n",
			recSample{writes: map[string]float64{}, goSys: 8e6}, ""},
		{"a failure counter exposed as a gauge", "# TYPE berth_reconciler_reconcile_errors_total gauge\nberth_reconciler_reconcile_errors_total 2\n",
			recSample{writes: map[string]float64{}, errors: 2}, ""},
		{"the reconciles a summary", "# TYPE berth_reconciler_reconcile_duration_seconds summary\nberth_reconciler_reconcile_duration_seconds_count 3\n",
			recSample{writes: map[string]float64{}},
			"metric berth_reconciler_reconcile_duration_seconds is a summary, not a histogram or gauge_histogram"},
	} {
		f, err := promtext.Parse(strings.NewReader(tc.text))
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		got, err := sampleOf(f)
		if !reflect.DeepEqual(got, tc.want) || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: sampleOf = %+v, %v; want %+v, %q", tc.what, got, err, tc.want, tc.err)
		}
	}
}
