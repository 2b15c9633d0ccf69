package promtext

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ScrapeAPIServer reads /metrics through the API server's client: the
// pod webhook's calls of the fixture, a parse error that says whose
// /metrics it was, and the client's own error for a failed request.
func TestScrapeAPIServer(t *testing.T) {
	f, err := ScrapeAPIServer(context.Background(), apiServerServing(t, apiserver))
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.Histogram(APIServerWebhookDuration, Labels{"name": "pods.mutate.ome.io"})
	if want := (Histogram{Count: 82, Sum: 0.14768}); err != nil || h.Count != want.Count || math.Abs(h.Sum-want.Sum) > 1e-12 {
		t.Errorf("the pod webhook's calls: %+v, %v; want %+v", h, err, want)
	}
	want := `the API server's /metrics: text format parsing error in line 2: expected float as value, got "x"`
	if f, err := ScrapeAPIServer(context.Background(), apiServerServing(t, "a 1\nb x\n")); err == nil || err.Error() != want || f != nil {
		t.Errorf("malformed: %v, %v; want the error %q", f, err, want)
	}
	if f, err := ScrapeAPIServer(context.Background(), apiServerServing(t, "")); err == nil || f != nil {
		t.Errorf("a 500: %v, %v; want the client's error", f, err)
	}
}

// APIServerWebhookCalls counts a webhook's calls by the label name
// alone: the pod webhook's admitted and rejected calls, not the series of
// another webhook that carries its name as webhook_name; the client's
// error for a failed request.
func TestAPIServerWebhookCalls(t *testing.T) {
	c := apiServerServing(t, apiserver)
	for webhook, want := range map[string]Histogram{
		"pods.mutate.ome.io": {Count: 82, Sum: 0.14768},
		"other":              {Count: 5, Sum: 0.5},
		"absent":             {},
	} {
		h, err := APIServerWebhookCalls(context.Background(), c, webhook)
		if err != nil || h.Count != want.Count || math.Abs(h.Sum-want.Sum) > 1e-12 {
			t.Errorf("%s: %+v, %v; want %+v", webhook, h, err, want)
		}
	}
	if h, err := APIServerWebhookCalls(context.Background(), apiServerServing(t, ""), "pods.mutate.ome.io"); err == nil || h != (Histogram{}) {
		t.Errorf("a 500: %+v, %v; want the client's error", h, err)
	}
}

// apiServerServing is a client of a server whose /metrics is body, or a
// 500 when body is empty.
func apiServerServing(t *testing.T, body string) rest.Interface {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/metrics":
			http.NotFound(w, r)
		case body == "":
			http.Error(w, "down", http.StatusInternalServerError)
		default:
			w.Write([]byte(body))
		}
	}))
	t.Cleanup(srv.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return kube.CoreV1().RESTClient()
}
