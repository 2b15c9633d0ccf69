package jsoncodec

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// encodesLike fails t unless Marshal, an Encoder and encoding/json.Marshal
// write the same bytes for the value encoding/json decodes from data into
// a T (data it rejects has nothing to encode).
func encodesLike[T any](t *testing.T, data []byte) {
	t.Helper()
	var v T
	if json.Unmarshal(data, &v) != nil {
		return
	}
	want, wantErr := json.Marshal(&v)
	got, gotErr := Marshal(&v)
	var e Encoder
	fromEncoder, encErr := e.Encode(&v)
	if (wantErr == nil) != (gotErr == nil) || (wantErr == nil) != (encErr == nil) {
		t.Fatalf("%T from %q: encoding/json says %v, Marshal %v, Encoder %v", v, data, wantErr, gotErr, encErr)
	}
	if !bytes.Equal(want, got) || !bytes.Equal(want, fromEncoder) {
		t.Fatalf("%T from %q encodes differently:\nencoding/json %s\nMarshal       %s\nEncoder       %s", v, data, want, got, fromEncoder)
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
// decodes, Marshal and the Encoder write it byte for byte as
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
