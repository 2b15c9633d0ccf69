// Package admission is the AdmissionReview codec of the berth webhook: it
// turns any HTTP request into exactly one well-formed AdmissionReview answer.
//
// The rules it enforces for every handler:
//   - bodies are capped (MaxBodyBytes, as controller-runtime: two objects of
//     etcd's 1.5 MiB limit plus envelope) and read with a deadline set by the
//     server;
//   - a body that is empty, not JSON, of the wrong content type or of an
//     unknown AdmissionReview version is answered with a denial (HTTP 200 and
//     result code 400), never a 500, so the apiserver shows the reason;
//   - the response UID always echoes the request, and the response uses the
//     AdmissionReview version of the request (v1beta1 is answered in kind);
//   - a panicking handler becomes a denial plus an error log and a metric.
package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/internal/jsoncodec"
)

// MaxBodyBytes caps an AdmissionReview body: 7 MiB, as controller-runtime
// (old and new object of up to 3 MiB each, plus the envelope).
const MaxBodyBytes = 7 << 20

const (
	apiVersionV1      = "admission.k8s.io/v1"
	apiVersionV1beta1 = "admission.k8s.io/v1beta1"
	kindAdmission     = "AdmissionReview"
)

// Func decides one admission request. It must not write anything (requests
// may be dry runs) and must treat req as read-only.
type Func func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// Observer is told the outcome of every request, for metrics.
type Observer interface {
	Observe(handler, operation, result string, elapsed time.Duration)
	Panicked(handler string)
}

// Handler serves one admission path.
type Handler struct {
	Name     string // metric and log label, e.g. "mutate-pods"
	Decide   Func
	Log      *slog.Logger
	Observer Observer
}

// envelope reads apiVersion and kind before committing to a version.
type envelope struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	review, apiVersion := h.review(w, r)
	result := "allowed"
	switch {
	case review.Request == nil:
		result = "malformed"
	case !review.Response.Allowed:
		result = "denied"
	case len(review.Response.Patch) > 0:
		result = "patched"
	}
	op := ""
	if review.Request != nil {
		op = string(review.Request.Operation)
	}
	if h.Observer != nil {
		h.Observer.Observe(h.Name, op, result, time.Since(start))
	}
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kindAdmission},
		Response: review.Response,
	}
	enc := answers.Get()
	defer answers.Put(enc)
	body, err := enc.Encode(out)
	if err != nil { // cannot happen for these types; answer something valid anyway
		body = []byte(`{"apiVersion":"` + apiVersionV1 + `","kind":"AdmissionReview","response":{"uid":"","allowed":false,"status":{"code":500,"message":"berth: cannot encode response"}}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	// Declared, so an answer over net/http's 4 KB buffer (a large patch)
	// is not sent chunked.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// review decodes the request and runs the handler. It always returns a
// review with a non-nil Response and the apiVersion to answer with.
func (h *Handler) review(w http.ResponseWriter, r *http.Request) (review admissionv1.AdmissionReview, apiVersion string) {
	apiVersion = apiVersionV1
	deny := func(code int32, format string, args ...any) (admissionv1.AdmissionReview, string) {
		review.Response = Denied(code, fmt.Sprintf(format, args...))
		if review.Request != nil {
			review.Response.UID = review.Request.UID
		}
		return review, apiVersion
	}
	if r.Method != http.MethodPost {
		return deny(http.StatusMethodNotAllowed, "berth webhook %s: method %s not allowed, use POST", h.Name, r.Method)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return deny(http.StatusUnsupportedMediaType, "berth webhook %s: content type %q is not supported, send application/json", h.Name, ct)
		}
	}
	body, pooled, err := readBody(w, r)
	if pooled != nil {
		defer bodies.Put(pooled)
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return deny(http.StatusRequestEntityTooLarge, "berth webhook %s: request body exceeds %d bytes", h.Name, MaxBodyBytes)
		}
		return deny(http.StatusBadRequest, "berth webhook %s: cannot read request body: %v", h.Name, err)
	}
	if len(body) == 0 {
		return deny(http.StatusBadRequest, "berth webhook %s: empty request body, expected an AdmissionReview", h.Name)
	}
	// One decode in the common case: the review's TypeMeta holds apiVersion
	// and kind. v1beta1 and v1 share their JSON shape, so one decoder
	// serves both. Only a body that fails it, or names another version or
	// kind, is read again for the envelope, to say which.
	decodeErr := jsoncodec.Unmarshal(body, &review)
	env := envelope{APIVersion: review.APIVersion, Kind: review.Kind}
	if decodeErr != nil {
		review, env = admissionv1.AdmissionReview{}, envelope{}
		if err := json.Unmarshal(body, &env); err != nil {
			return deny(http.StatusBadRequest, "berth webhook %s: request body is not an AdmissionReview: %v", h.Name, err)
		}
	}
	switch env.APIVersion {
	case apiVersionV1, apiVersionV1beta1:
		apiVersion = env.APIVersion
	default:
		review.Request = nil // not answered in kind: no UID to echo
		return deny(http.StatusBadRequest, "berth webhook %s: AdmissionReview apiVersion %q is not supported, use %s", h.Name, env.APIVersion, apiVersionV1)
	}
	if env.Kind != kindAdmission {
		review.Request = nil
		return deny(http.StatusBadRequest, "berth webhook %s: kind %q is not AdmissionReview", h.Name, env.Kind)
	}
	if decodeErr != nil {
		return deny(http.StatusBadRequest, "berth webhook %s: malformed AdmissionReview: %v", h.Name, decodeErr)
	}
	if review.Request == nil {
		return deny(http.StatusBadRequest, "berth webhook %s: AdmissionReview has no request", h.Name)
	}
	review.Response = h.decide(r.Context(), review.Request)
	review.Response.UID = review.Request.UID
	if len(review.Response.Patch) > 0 && review.Response.PatchType == nil {
		pt := admissionv1.PatchTypeJSONPatch
		review.Response.PatchType = &pt
	}
	return review, apiVersion
}

// decide runs the handler and turns a panic into a denial.
func (h *Handler) decide(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	defer func() {
		if p := recover(); p != nil {
			if h.Log != nil {
				h.Log.Error("admission handler panicked", "handler", h.Name, "uid", req.UID,
					"kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			if h.Observer != nil {
				h.Observer.Panicked(h.Name)
			}
			resp = Denied(http.StatusInternalServerError, fmt.Sprintf("berth webhook %s: internal error while admitting %s %s/%s; this is a bug, please report it with the webhook log", h.Name, req.Kind.Kind, req.Namespace, req.Name))
		}
	}()
	resp = h.Decide(ctx, req)
	if resp == nil {
		resp = Denied(http.StatusInternalServerError, fmt.Sprintf("berth webhook %s: handler returned no decision", h.Name))
	}
	return resp
}

// Allowed returns an allowing response with optional warnings.
func Allowed(warnings ...string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
}

// Denied returns a denial with an HTTP-like code and a message for the user.
func Denied(code int32, message string) *admissionv1.AdmissionResponse {
	reason := metav1.StatusReasonForbidden
	switch code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed:
		reason = metav1.StatusReasonBadRequest
	case http.StatusUnprocessableEntity:
		reason = metav1.StatusReasonInvalid
	case http.StatusInternalServerError:
		reason = metav1.StatusReasonInternalError
	}
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message},
	}
}

// Patched returns an allowing response carrying a JSON patch.
func Patched(patch []byte, warnings ...string) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
	if len(patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	return resp
}

// Invalid denies with structured causes: one per field error, each with its
// path, so `kubectl apply` shows every field at once and clients can read
// Status.Details.Causes. kind and name identify the object.
func Invalid(kind, name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	return InvalidIn("ome.io", kind, name, errs)
}

// InvalidIn is Invalid for a kind of another API group.
func InvalidIn(group, kind, name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	st := apierrors.NewInvalid(schema.GroupKind{Group: group, Kind: kind}, name, errs).ErrStatus
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &st}
}

// readBody reads the request body, at most MaxBodyBytes. A body whose
// Content-Length is declared (the API server always sends it) is read
// into one buffer of that size; io.ReadAll would grow one from 512 bytes,
// copying the review at each step. A body up to maxPooled is read into a
// pooled buffer, returned in pooled for the caller to put back once the
// body is no longer read.
func readBody(w http.ResponseWriter, r *http.Request) (body []byte, pooled *[]byte, err error) {
	rd := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	n := r.ContentLength
	if n <= 0 || n > MaxBodyBytes {
		body, err = io.ReadAll(rd)
		return body, nil, err
	}
	var buf []byte
	if n <= maxPooled {
		pooled = bodies.Get().(*[]byte)
		buf = *pooled
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
		if pooled != nil {
			*pooled = buf
		}
	}
	buf = buf[:n]
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, pooled, err
	}
	return buf, pooled, nil
}

// maxPooled is the largest body or answer whose buffer is kept for the
// next request (a pod's review is about 3 KB): the review's decoding
// copies all it keeps (strings, the objects' raw bytes), so a body's
// buffer is free once the review is answered, an answer's once written.
// Larger ones are left to the collector.
const maxPooled = 64 << 10

var (
	bodies  = sync.Pool{New: func() any { return new([]byte) }}
	answers = jsoncodec.EncoderPool{Max: maxPooled}
)
