package admission

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkServeHTTP is the codec's share of one admission: read and
// decode the AdmissionReview (a pod CREATE), run an allowing handler,
// encode the answer (no TLS, no handler work).
//
//	go test -run XXX -bench ServeHTTP -benchmem -cpu 1 ./webhook/admission/
func BenchmarkServeHTTP(b *testing.B) {
	benchServe(b, review(apiVersionV1, "u"))
}

// BenchmarkServeHTTPPodBody is BenchmarkServeHTTP with a review the size
// the API server sends for a pod CREATE (the pod with its defaults and
// managedFields, about 4 KB), with its Content-Length as the API server
// sends it.
func BenchmarkServeHTTPPodBody(b *testing.B) {
	pad := `"metadata":{"annotations":{"x":"` + strings.Repeat("a", 3800) + `"}}`
	body := []byte(`{"apiVersion":"` + apiVersionV1 + `","kind":"AdmissionReview","request":{"uid":"u",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE","object":{"kind":"Pod",` + pad + `}}}`)
	benchServe(b, body)
}

// benchServe posts body to an allowing Handler once per iteration.
func benchServe(b *testing.B, body []byte) {
	h := &Handler{Name: "bench", Decide: allowAll}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
