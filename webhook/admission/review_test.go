package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

type observed struct {
	results []string
	panics  int
}

func (o *observed) Observe(_, _, result string, _ time.Duration) {
	o.results = append(o.results, result)
}
func (o *observed) Panicked(string) { o.panics++ }

func allowAll(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return Allowed("looks fine")
}

func post(t *testing.T, h http.Handler, contentType string, body []byte) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), "response must be JSON: %s", rec.Body.String())
	return rec.Code, out
}

func review(version, uid string) []byte {
	return []byte(`{"apiVersion":"` + version + `","kind":"AdmissionReview","request":{"uid":"` + uid +
		`","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE","object":{"kind":"Pod"}}}`)
}

func TestHandlerAnswersEveryBadInputWithADenial(t *testing.T) {
	tests := map[string]struct {
		contentType string
		body        []byte
		wantCode    float64
		wantMessage string
	}{
		"empty body":         {"application/json", nil, 400, "empty request body"},
		"not json":           {"application/json", []byte("{nope"), 400, "not an AdmissionReview"},
		"wrong content type": {"text/plain", review(apiVersionV1, "u"), 415, `content type "text/plain"`},
		"unknown version":    {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview"}`), 400, `apiVersion "admission.k8s.io/v2"`},
		// One decode reads the envelope and the request together; these
		// keep the answer the envelope alone gave.
		"unknown version, request":           {"application/json", bytes.Replace(review(apiVersionV1, "u"), []byte(apiVersionV1), []byte("admission.k8s.io/v2"), 1), 400, `apiVersion "admission.k8s.io/v2"`},
		"unknown version, malformed request": {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":[1]}`), 400, `apiVersion "admission.k8s.io/v2"`},
		"wrong kind, malformed request":      {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":[1]}`), 400, `kind "Pod"`},
		"wrong kind":                         {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"Pod"}`), 400, `kind "Pod"`},
		"no request":                         {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), 400, "has no request"},
		"request not object":                 {"application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[1]}`), 400, "malformed AdmissionReview"},
		"too big":                            {"application/json", append(append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","x":"`), bytes.Repeat([]byte("a"), MaxBodyBytes)...), '"', '}'), 413, "exceeds"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := &observed{}
			h := &Handler{Name: "test", Decide: allowAll, Observer: o}
			code, out := post(t, h, tc.contentType, tc.body)
			assert.Equal(t, http.StatusOK, code)
			resp := out["response"].(map[string]any)
			assert.Equal(t, false, resp["allowed"])
			status := resp["status"].(map[string]any)
			assert.Equal(t, tc.wantCode, status["code"])
			assert.Contains(t, status["message"], tc.wantMessage)
			assert.Equal(t, []string{"malformed"}, o.results)
		})
	}
}

func TestHandlerEchoesUIDAndVersion(t *testing.T) {
	for _, version := range []string{apiVersionV1, apiVersionV1beta1} {
		t.Run(version, func(t *testing.T) {
			h := &Handler{Name: "test", Decide: allowAll}
			_, out := post(t, h, "application/json", review(version, "abc-123"))
			assert.Equal(t, version, out["apiVersion"])
			assert.Equal(t, "AdmissionReview", out["kind"])
			resp := out["response"].(map[string]any)
			assert.Equal(t, "abc-123", resp["uid"])
			assert.Equal(t, true, resp["allowed"])
			assert.Equal(t, []any{"looks fine"}, resp["warnings"])
		})
	}
}

func TestHandlerTurnsPanicIntoDenial(t *testing.T) {
	o := &observed{}
	h := &Handler{Name: "boom", Observer: o, Decide: func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var m map[string]int
		m["x"] = 1 // nil map write
		return nil
	}}
	_, out := post(t, h, "application/json", review(apiVersionV1, "u1"))
	resp := out["response"].(map[string]any)
	assert.Equal(t, "u1", resp["uid"])
	assert.Equal(t, false, resp["allowed"])
	assert.Contains(t, resp["status"].(map[string]any)["message"], "internal error")
	assert.Equal(t, 1, o.panics)
	assert.Equal(t, []string{"denied"}, o.results)
}

func TestHandlerSetsPatchType(t *testing.T) {
	h := &Handler{Name: "p", Decide: func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(`[]`)}
	}}
	_, out := post(t, h, "application/json", review(apiVersionV1, "u2"))
	assert.Equal(t, "JSONPatch", out["response"].(map[string]any)["patchType"])
}

func TestHandlerRejectsGet(t *testing.T) {
	h := &Handler{Name: "g", Decide: allowAll}
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Contains(t, rec.Body.String(), "method GET not allowed")
}

// FuzzHandler: arbitrary bytes never panic and always produce a well-formed
// AdmissionReview answer whose UID echoes the request when one was decoded.
func FuzzHandler(f *testing.F) {
	f.Add(review(apiVersionV1, "seed"))
	f.Add(review(apiVersionV1beta1, "seed"))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":5}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := &Handler{Name: "fuzz", Decide: func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			if strings.Contains(string(req.UID), "deny") {
				return Denied(403, "no")
			}
			return Allowed()
		}}
		req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("response is not an AdmissionReview: %v: %s", err, rec.Body.String())
		}
		if out.Kind != kindAdmission || (out.APIVersion != apiVersionV1 && out.APIVersion != apiVersionV1beta1) || out.Response == nil {
			t.Fatalf("malformed response: %s", rec.Body.String())
		}
		var in admissionv1.AdmissionReview
		if json.Unmarshal(body, &in) == nil && in.Request != nil && in.APIVersion != "" && in.Kind == kindAdmission {
			if (in.APIVersion == apiVersionV1 || in.APIVersion == apiVersionV1beta1) && out.Response.UID != in.Request.UID {
				t.Fatalf("uid %q not echoed, got %q", in.Request.UID, out.Response.UID)
			}
		}
		if !out.Response.Allowed && (out.Response.Result == nil || out.Response.Result.Message == "") {
			t.Fatalf("denial without a message: %s", rec.Body.String())
		}
	})
}

// The body is read whole whether its length is declared (one buffer of
// that size) or not (chunked), and a body shorter than its declared
// length is a bad request, as before.
func TestHandlerReadsBodyOfAnyDeclaredLength(t *testing.T) {
	h := &Handler{Name: "test", Decide: allowAll}
	body := review(apiVersionV1, "abc-123")
	for name, length := range map[string]int64{"declared": int64(len(body)), "unknown": -1} {
		t.Run(name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
			req.ContentLength = length
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var out map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
			resp := out["response"].(map[string]any)
			assert.Equal(t, "abc-123", resp["uid"])
			assert.Equal(t, true, resp["allowed"])
		})
	}
	req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
	req.ContentLength = int64(len(body)) + 10
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	resp := out["response"].(map[string]any)
	assert.Equal(t, false, resp["allowed"])
	assert.Equal(t, float64(http.StatusBadRequest), resp["status"].(map[string]any)["code"])
	assert.Contains(t, resp["status"].(map[string]any)["message"], "cannot read request body")
}

// An answer larger than net/http's 4 KB write buffer (a large patch) is
// sent with its length, not chunked.
func TestHandlerDeclaresAnswerLength(t *testing.T) {
	big := func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		r := Allowed()
		r.Patch = []byte(`[{"op":"add","path":"/metadata/annotations","value":{"x":"` + strings.Repeat("a", 8000) + `"}}]`)
		return r
	}
	srv := httptest.NewServer(&Handler{Name: "test", Decide: big})
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(review(apiVersionV1, "u")))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Empty(t, resp.TransferEncoding, "not chunked")
	assert.Greater(t, resp.ContentLength, int64(8000))
}

// Bodies and answers are read and written through pooled buffers: what a
// decision was handed must not change when the next request reuses them.
func TestPooledBuffersAreNotAliased(t *testing.T) {
	var kept []*admissionv1.AdmissionRequest
	h := &Handler{Name: "t", Decide: func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		kept = append(kept, req)
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(`[{"op":"add","path":"/x","value":"` + string(req.UID) + `"}]`)}
	}}
	var answers [][]byte
	for _, uid := range []string{"first-uid-aaaaaaaa", "second-uid-bbbbbbb", "third-uid-cccccccc"} {
		body := bytes.Replace(review(apiVersionV1, uid), []byte(`{"kind":"Pod"}`), []byte(`{"kind":"Pod","metadata":{"name":"`+uid+`"}}`), 1)
		req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		answers = append(answers, rec.Body.Bytes())
	}
	for i, uid := range []string{"first-uid-aaaaaaaa", "second-uid-bbbbbbb", "third-uid-cccccccc"} {
		assert.Equal(t, uid, string(kept[i].UID))
		assert.Equal(t, `{"kind":"Pod","metadata":{"name":"`+uid+`"}}`, string(kept[i].Object.Raw))
		var out admissionv1.AdmissionReview
		require.NoError(t, json.Unmarshal(answers[i], &out))
		assert.Equal(t, uid, string(out.Response.UID))
		assert.Contains(t, string(out.Response.Patch), uid)
	}
}
