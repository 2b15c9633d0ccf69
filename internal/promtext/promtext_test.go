package promtext

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// apiserver is a piece of the API server's /metrics as it serves it
// (buckets cut short): the admission webhook histogram for three
// webhooks, a fourth series whose other label ends in "name", and a label
// value that holds a comma, an escaped quote and a brace; a histogram
// without labels and a counter.
const apiserver = `# HELP apiserver_admission_webhook_admission_duration_seconds [STABLE] Admission webhook latency identified by name and broken out for each operation and API resource and type (validate or admit).
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="pods.mutate.ome.io",operation="CREATE",rejected="false",type="admit",le="0.005"} 70
apiserver_admission_webhook_admission_duration_seconds_bucket{name="pods.mutate.ome.io",operation="CREATE",rejected="false",type="admit",le="+Inf"} 80
apiserver_admission_webhook_admission_duration_seconds_sum{name="pods.mutate.ome.io",operation="CREATE",rejected="false",type="admit"} 0.13768
apiserver_admission_webhook_admission_duration_seconds_count{name="pods.mutate.ome.io",operation="CREATE",rejected="false",type="admit"} 80
apiserver_admission_webhook_admission_duration_seconds_bucket{name="pods.mutate.ome.io",operation="CREATE",rejected="true",type="admit",le="+Inf"} 2
apiserver_admission_webhook_admission_duration_seconds_sum{name="pods.mutate.ome.io",operation="CREATE",rejected="true",type="admit"} 0.01
apiserver_admission_webhook_admission_duration_seconds_count{name="pods.mutate.ome.io",operation="CREATE",rejected="true",type="admit"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name="noop.admission-load.berth.dev",operation="CREATE",rejected="false",type="admit",le="+Inf"} 80
apiserver_admission_webhook_admission_duration_seconds_sum{name="noop.admission-load.berth.dev",operation="CREATE",rejected="false",type="admit"} 0.09824
apiserver_admission_webhook_admission_duration_seconds_count{name="noop.admission-load.berth.dev",operation="CREATE",rejected="false",type="admit"} 80
apiserver_admission_webhook_admission_duration_seconds_bucket{name="inferenceservices.validate.ome.io",operation="UPDATE",rejected="false",type="validating",le="+Inf"} 3
apiserver_admission_webhook_admission_duration_seconds_sum{name="inferenceservices.validate.ome.io",operation="UPDATE",rejected="false",type="validating"} 0.006
apiserver_admission_webhook_admission_duration_seconds_count{name="inferenceservices.validate.ome.io",operation="UPDATE",rejected="false",type="validating"} 3
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other",operation="CREATE",rejected="false",type="admit",webhook_name="pods.mutate.ome.io",le="+Inf"} 5
apiserver_admission_webhook_admission_duration_seconds_sum{name="other",operation="CREATE",rejected="false",type="admit",webhook_name="pods.mutate.ome.io"} 0.5
apiserver_admission_webhook_admission_duration_seconds_count{name="other",operation="CREATE",rejected="false",type="admit",webhook_name="pods.mutate.ome.io"} 5
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a,b=\"c\"} 1",operation="CREATE",rejected="false",type="admit",le="+Inf"} 7
apiserver_admission_webhook_admission_duration_seconds_sum{name="a,b=\"c\"} 1",operation="CREATE",rejected="false",type="admit"} 0.7
apiserver_admission_webhook_admission_duration_seconds_count{name="a,b=\"c\"} 1",operation="CREATE",rejected="false",type="admit"} 7
# HELP apiserver_cel_evaluation_duration_seconds [BETA] CEL evaluation time in seconds.
# TYPE apiserver_cel_evaluation_duration_seconds histogram
apiserver_cel_evaluation_duration_seconds_bucket{le="10"} 114
apiserver_cel_evaluation_duration_seconds_bucket{le="+Inf"} 114
apiserver_cel_evaluation_duration_seconds_sum 0.066143065
apiserver_cel_evaluation_duration_seconds_count 114
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 320
`

// webhook is a piece of berth-webhook's counters and gauges and of its Go
// collector's metrics, as it serves them: a cache kind holding a comma, a
// quote and a brace, a label with the value "", a summary, and two lines
// of another exporter's style: an untyped series with a timestamp and a
// histogram's _count exposed without its TYPE line.
const webhook = `# HELP berth_admission_requests_total Admission requests by handler, operation and result (allowed, patched, denied, malformed).
# TYPE berth_admission_requests_total counter
berth_admission_requests_total{handler="mutate-pods",operation="CREATE",result="patched"} 25
berth_admission_requests_total{handler="validate-acceleratorclasses",operation="CREATE",result="denied"} 1
berth_admission_requests_total{operation="CREATE",result="allowed",handler="validate-inferenceservices"} 2
# HELP berth_cache_objects Objects held in the webhook's caches, by kind.
# TYPE berth_cache_objects gauge
berth_cache_objects{kind="models"} 1
berth_cache_objects{kind="nodes"} 4
berth_cache_objects{kind="x,kind=\"nodes\"}"} 3
# HELP berth_certificate_reloads_total Serving certificate loads (the first load included).
# TYPE berth_certificate_reloads_total counter
berth_certificate_reloads_total 1
# HELP berth_selection_decisions_total Decisions the webhook made, by component, runtime, AcceleratorClass ("" for none), how the class was chosen and the strategy in force.
# TYPE berth_selection_decisions_total counter
berth_selection_decisions_total{chosen_by="none",class="",component="engine",runtime="ClusterServingRuntime/load-cpu-rt",strategy=""} 2
berth_selection_decisions_total{chosen_by="policy",class="h100",component="engine",runtime="ClusterServingRuntime/load-cpu-rt",strategy="cost"} 5
# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0"} 0.000110159
go_gc_duration_seconds{quantile="1"} 0.004852365
go_gc_duration_seconds_sum 0.03199194
go_gc_duration_seconds_count 51
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 5.0962432e+07
old_style_requests{path="/a b"} 9 1712345678000
untyped_histogram_count 6
`

func parse(t *testing.T, text string) Families {
	t.Helper()
	f, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

// Histogram sums the series whose labels carry the pairs exactly, and
// nothing else: not webhook_name="…", not a value that holds the text of
// another.
func TestHistogram(t *testing.T) {
	f := parse(t, apiserver+webhook)
	const webhooks = "apiserver_admission_webhook_admission_duration_seconds"
	for _, tc := range []struct {
		what, name string
		match      Labels
		want       Histogram
	}{
		{"one webhook, both of its series", webhooks, Labels{"name": "pods.mutate.ome.io"}, Histogram{Count: 82, Sum: 0.14768}},
		{"one webhook, one series", webhooks, Labels{"name": "pods.mutate.ome.io", "rejected": "false"}, Histogram{Count: 80, Sum: 0.13768}},
		{"another webhook", webhooks, Labels{"name": "noop.admission-load.berth.dev"}, Histogram{Count: 80, Sum: 0.09824}},
		{"a value with a comma, a quote and a brace", webhooks, Labels{"name": `a,b="c"} 1`}, Histogram{Count: 7, Sum: 0.7}},
		{"the text of a value is not a value", webhooks, Labels{"name": `a,b=`}, Histogram{}},
		{"webhook_name is a label of its own", webhooks, Labels{"webhook_name": "pods.mutate.ome.io"}, Histogram{Count: 5, Sum: 0.5}},
		{`"" matches the series without the label`, webhooks, Labels{"name": "pods.mutate.ome.io", "webhook_name": ""}, Histogram{Count: 82, Sum: 0.14768}},
		{`"" does not match a series with the label`, webhooks, Labels{"name": "other", "webhook_name": ""}, Histogram{}},
		{"a webhook that was never called", webhooks, Labels{"name": "none.ome.io"}, Histogram{}},
		{"no labels", "apiserver_cel_evaluation_duration_seconds", nil, Histogram{Count: 114, Sum: 0.066143065}},
		{"an absent family", "berth_admission_duration_seconds", Labels{"handler": "mutate-pods"}, Histogram{}},
		{"a histogram without its TYPE line is not one", "untyped_histogram", nil, Histogram{}},
	} {
		got, err := f.Histogram(tc.name, tc.match)
		if err != nil || got != tc.want {
			t.Errorf("%s: Histogram(%s, %v) = %+v, %v; want %+v", tc.what, tc.name, tc.match, got, err, tc.want)
		}
	}
}

// Series and Value read counters, gauges and untyped series by their
// parsed labels; the value is the value, not a timestamp after it.
func TestSeriesAndValue(t *testing.T) {
	f := parse(t, webhook)
	const requests, decisions = "berth_admission_requests_total", "berth_selection_decisions_total"
	patched := map[string]string{"handler": "mutate-pods", "operation": "CREATE", "result": "patched"}
	for _, tc := range []struct {
		what, name string
		match      Labels
		want       []Series
	}{
		{"every series, labels in any order", requests, nil, []Series{
			{patched, 25},
			{map[string]string{"handler": "validate-acceleratorclasses", "operation": "CREATE", "result": "denied"}, 1},
			{map[string]string{"handler": "validate-inferenceservices", "operation": "CREATE", "result": "allowed"}, 2},
		}},
		{"by two labels", requests, Labels{"handler": "mutate-pods", "operation": "CREATE"}, []Series{{patched, 25}}},
		{"no series match", requests, Labels{"handler": "mutate-pods", "operation": "UPDATE"}, nil},
		{"a gauge by label", "berth_cache_objects", Labels{"kind": "nodes"}, []Series{{map[string]string{"kind": "nodes"}, 4}}},
		{"a value with a comma, a quote and a brace", "berth_cache_objects", Labels{"kind": `x,kind="nodes"}`}, []Series{
			{map[string]string{"kind": `x,kind="nodes"}`}, 3},
		}},
		{`"" matches a label with the value ""`, decisions, Labels{"class": ""}, []Series{
			{map[string]string{"chosen_by": "none", "class": "", "component": "engine", "runtime": "ClusterServingRuntime/load-cpu-rt", "strategy": ""}, 2},
		}},
		{"a counter without labels", "berth_certificate_reloads_total", nil, []Series{{map[string]string{}, 1}}},
		{"a gauge without labels", "process_resident_memory_bytes", nil, []Series{{map[string]string{}, 50962432}}},
		{"untyped, with a timestamp", "old_style_requests", Labels{"path": "/a b"}, []Series{{map[string]string{"path": "/a b"}, 9}}},
		{"a histogram's _count without its TYPE line", "untyped_histogram_count", nil, []Series{{map[string]string{}, 6}}},
		{"an absent family", "berth_admission_panics_total", nil, nil},
	} {
		got, err := f.Series(tc.name, tc.match)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Series(%s, %v) = %v, %v; want %v", tc.what, tc.name, tc.match, got, err, tc.want)
		}
		var sum float64
		for _, s := range tc.want {
			sum += s.Value
		}
		if v, err := f.Value(tc.name, tc.match); err != nil || v != sum {
			t.Errorf("%s: Value(%s, %v) = %v, %v; want %v", tc.what, tc.name, tc.match, v, err, sum)
		}
	}
}

// Reading a family as another type is an error naming both types.
func TestWrongType(t *testing.T) {
	f := parse(t, apiserver+webhook)
	if _, err := f.Histogram("berth_certificate_reloads_total", nil); err == nil ||
		err.Error() != "metric berth_certificate_reloads_total is a counter, not a histogram or gauge_histogram" {
		t.Errorf("Histogram of a counter: %v", err)
	}
	if _, err := f.Histogram("go_gc_duration_seconds", nil); err == nil ||
		err.Error() != "metric go_gc_duration_seconds is a summary, not a histogram or gauge_histogram" {
		t.Errorf("Histogram of a summary: %v", err)
	}
	if _, err := f.Value("apiserver_cel_evaluation_duration_seconds", nil); err == nil ||
		err.Error() != "metric apiserver_cel_evaluation_duration_seconds is a histogram, not a counter or gauge or untyped" {
		t.Errorf("Value of a histogram: %v", err)
	}
}

// HELP and TYPE lines give each family its help (unescaped) and type.
func TestHelpAndType(t *testing.T) {
	f := parse(t, apiserver+webhook+"# HELP esc_total A \\\\ and a\\nnewline.\n# TYPE esc_total counter\nesc_total 1\n")
	for _, tc := range []struct {
		name, help string
		typ        dto.MetricType
	}{
		{"apiserver_admission_webhook_admission_duration_seconds", "[STABLE] Admission webhook latency identified by name and broken out for each operation and API resource and type (validate or admit).", dto.MetricType_HISTOGRAM},
		{"berth_selection_decisions_total", `Decisions the webhook made, by component, runtime, AcceleratorClass ("" for none), how the class was chosen and the strategy in force.`, dto.MetricType_COUNTER},
		{"berth_cache_objects", "Objects held in the webhook's caches, by kind.", dto.MetricType_GAUGE},
		{"go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", dto.MetricType_SUMMARY},
		{"old_style_requests", "", dto.MetricType_UNTYPED},
		{"esc_total", "A \\ and a\nnewline.", dto.MetricType_COUNTER},
	} {
		mf := f[tc.name]
		if mf.GetHelp() != tc.help || mf.GetType() != tc.typ {
			t.Errorf("%s: help %q, type %s; want %q, %s", tc.name, mf.GetHelp(), mf.GetType(), tc.help, tc.typ)
		}
	}
	if len(f) != 12 {
		t.Errorf("%d families, want 12: %v", len(f), f)
	}
}

// Malformed text is an error that names the line and the problem, and no
// families.
func TestParseMalformed(t *testing.T) {
	for _, tc := range []struct{ what, text, want string }{
		{"a value that is no number", "# TYPE a counter\na 1\nb{x=\"y\"} many\n",
			`text format parsing error in line 3: expected float as value, got "many"`},
		{"an unterminated label value", "a{x=\"y} 1\n",
			`text format parsing error in line 1: label value "y} 1" contains unescaped new-line`},
		{"a missing value", "a{x=\"y\"}\n",
			`text format parsing error in line 1: expected float as value, got ""`},
		{"a label without a value", "a{x} 1\n",
			`text format parsing error in line 1: expected '=' after label name, found '}'`},
		{"a label named twice", "a{x=\"y\",x=\"z\"} 1\n",
			`text format parsing error in line 1: duplicate label names for metric "a"`},
		{"an escape the format does not have", "a{x=\"\\q\"} 1\n",
			`text format parsing error in line 1: invalid escape sequence '\q'`},
		{"text after the timestamp", "a{x=\"y\"} 1 2 3\n",
			`text format parsing error in line 1: spurious string after timestamp: " 3"`},
		{"a second TYPE line", "# TYPE a counter\n# TYPE a gauge\n",
			`text format parsing error in line 2: second TYPE line for metric name "a", or TYPE reported after samples`},
		{"an unknown type", "# TYPE a histogrammm\n",
			`text format parsing error in line 1: unknown metric type "histogrammm"`},
		{"a bucket bound that is no number", "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n",
			`text format parsing error in line 2: expected float as value for 'le' label, got "x"`},
	} {
		f, err := Parse(strings.NewReader(tc.text))
		var pe expfmt.ParseError
		if err == nil || err.Error() != tc.want || !errors.As(err, &pe) || f != nil {
			t.Errorf("%s: Parse = %v, %v; want the error %q and no families", tc.what, f, err, tc.want)
		}
	}
}

// Scrape asks for the text format and parses the answer; a status other
// than 200 and malformed text are errors naming the URL.
func TestScrape(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Accept"), "text/plain; version=0.0.4") {
			http.Error(w, "not the text format: "+r.Header.Get("Accept"), http.StatusNotAcceptable)
			return
		}
		w.Write([]byte(webhook))
	})
	mux.HandleFunc("/bad", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("a 1\nb x\n")) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no such thing", http.StatusNotFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f, err := Scrape(context.Background(), srv.Client(), srv.URL+"/metrics")
	if v, verr := f.Value("berth_admission_requests_total", Labels{"result": "patched"}); err != nil || verr != nil || v != 25 {
		t.Errorf("Scrape /metrics: %v, %v, %v", v, err, verr)
	}
	for _, tc := range []struct{ path, want string }{
		{"/bad", "GET " + srv.URL + `/bad: text format parsing error in line 2: expected float as value, got "x"`},
		{"/gone", "GET " + srv.URL + "/gone: 404 Not Found: no such thing\n"},
	} {
		if f, err := Scrape(context.Background(), srv.Client(), srv.URL+tc.path); err == nil || err.Error() != tc.want || f != nil {
			t.Errorf("Scrape %s = %v, %v; want the error %q", tc.path, f, err, tc.want)
		}
	}
}
