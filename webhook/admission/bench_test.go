package admission

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkServeHTTP is the codec's share of one admission: read and
// decode the AdmissionReview (a pod CREATE), run an allowing handler,
// encode the answer (no TLS, no handler work).
//
//	go test -run XXX -bench ServeHTTP -benchmem -cpu 1 ./webhook/admission/
func BenchmarkServeHTTP(b *testing.B) {
	body := review(apiVersionV1, "u")
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
