package jsoncodec

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// encodesLike fails t unless an Encoder and encoding/json.Marshal write the
// same bytes for the value encoding/json decodes from data into a T (data
// it rejects has nothing to encode), on a fresh Encoder and on one reused.
func encodesLike[T any](t *testing.T, data []byte) {
	t.Helper()
	var v T
	if json.Unmarshal(data, &v) != nil {
		return
	}
	want, wantErr := json.Marshal(&v)
	var e Encoder
	got, gotErr := e.Encode(&v)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%T from %q: encoding/json says %v, Encoder %v", v, data, wantErr, gotErr)
	}
	if !bytes.Equal(want, got) {
		t.Fatalf("%T from %q encodes differently:\nencoding/json %s\nEncoder       %s", v, data, want, got)
	}
	if _, err := e.Encode(struct{ A string }{"a longer value than the next"}); err != nil {
		t.Fatal(err)
	}
	again, _ := e.Encode(&v)
	if !bytes.Equal(want, again) {
		t.Fatalf("%T from %q encodes differently on a reused Encoder:\nencoding/json %s\nEncoder       %s", v, data, want, again)
	}
}

func TestCapturedReviewEncodesAsEncodingJSON(t *testing.T) {
	data, err := os.ReadFile("../../webhook/handlers/testdata/podreview.json")
	if err != nil {
		t.Fatal(err)
	}
	encodesLike[admissionv1.AdmissionReview](t, data)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &review); err != nil {
		t.Fatal(err)
	}
	encodesLike[corev1.Pod](t, review.Request.Object.Raw)
	// The answer the pod handler writes: a patch (base64) and warnings.
	encodesLike[admissionv1.AdmissionReview](t, []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
		"response":{"uid":"u","allowed":true,"patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d","patchType":"JSONPatch",
		"warnings":["<é>&\u2028"],"auditAnnotations":{"b":"2","a":"1"}}}`))
}

// The values where encoders are known to part: HTML and line-separator
// escapes, map key order, empty and nil collections, quantities, times,
// int-or-strings, raw extensions and byte slices.
func TestEncodesAsEncodingJSON(t *testing.T) {
	for name, data := range map[string]string{
		"escapes":        `{"metadata":{"name":"<a>&b\u2028\u2029\u007f\u0000é","annotations":{"x":"\"\\/"}}}`,
		"map order":      `{"metadata":{"labels":{"b":"1","a":"2","A":"3","_":"4","é":"5"}}}`,
		"empty and nil":  `{"metadata":{"labels":{},"finalizers":[]},"spec":{"containers":[],"nodeSelector":null}}`,
		"quantities":     `{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"8","memory":"1024Mi","cpu":"1000m"},"requests":{"cpu":"0.5"}}}]}}`,
		"times":          `{"metadata":{"creationTimestamp":"2026-11-27T12:00:00+02:00","deletionTimestamp":null}}`,
		"int-or-string":  `{"spec":{"containers":[{"readinessProbe":{"httpGet":{"port":"http"}},"livenessProbe":{"tcpSocket":{"port":8080}}}]}}`,
		"pointers":       `{"spec":{"priority":0,"enableServiceLinks":false,"securityContext":{},"terminationGracePeriodSeconds":-1}}`,
		"managed fields": `{"metadata":{"managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{}}}}}]}}`,
	} {
		t.Run(name, func(t *testing.T) { encodesLike[corev1.Pod](t, []byte(data)) })
	}
	encodesLike[admissionv1.AdmissionReview](t, []byte(`{"request":{"object":{"a":[1,{"b":null}]},"oldObject":null,"options":{"x":"<"}}}`))
}

// FuzzMarshalMatchesEncodingJSON: whatever pod or review encoding/json
// decodes, the Encoder writes it byte for byte as
// encoding/json.Marshal does (make fuzz runs it with
// GOEXPERIMENT=nojsonv2, against the classic encoding/json).
func FuzzMarshalMatchesEncodingJSON(f *testing.F) {
	if data, err := os.ReadFile("../../webhook/handlers/testdata/podreview.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"metadata":{"name":"<a>","labels":{"b":"1","a":"2"}},"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1000m"}}}]}}`))
	f.Add([]byte(`{"response":{"uid":"u","allowed":true,"patch":"W10=","warnings":["&"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		encodesLike[corev1.Pod](t, data)
		encodesLike[admissionv1.AdmissionReview](t, data)
	})
}

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("boom") }

// A panic inside the encoder is an error, and the Encoder still works.
func TestEncoderTurnsPanicIntoError(t *testing.T) {
	var e Encoder
	if _, err := e.Encode(struct{ P panicky }{}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("want the panic as an error, got %v", err)
	}
	got, err := e.Encode(map[string]int{"b": 1, "a": 2})
	if err != nil || string(got) != `{"a":2,"b":1}` {
		t.Fatalf("after a panic: %s, %v", got, err)
	}
}

// The pool keeps an Encoder whose buffer is within Max and drops a larger one.
func TestEncoderPoolDropsLargeBuffers(t *testing.T) {
	p := EncoderPool{Max: 64}
	e := p.Get()
	if _, err := e.Encode(strings.Repeat("x", 100)); err != nil {
		t.Fatal(err)
	}
	p.Put(e)
	if got := p.Get(); got == e {
		t.Fatal("an Encoder grown past Max came back from the pool")
	}
	small := new(Encoder)
	if _, err := small.Encode("x"); err != nil {
		t.Fatal(err)
	}
	if small.buf.Cap() > p.Max {
		t.Fatalf("a 3-byte encoding grew the buffer to %d bytes", small.buf.Cap())
	}
	p.Put(small)
	if small.buf.Len() != 0 {
		t.Fatal("Put keeps what the last Encode wrote")
	}
}
