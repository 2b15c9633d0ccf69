package jsoncodec

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
)

// encodingJSONOnV2 is set when encoding/json is built on v2
// (v1impl_jsonv2_test.go).
var encodingJSONOnV2 bool

// needsClassicEncodingJSON skips a comparison that would compare v2 with
// itself. go test ./... (go.mod's Go 1.26) has the classic encoding/json;
// make fuzz runs this package's target with GOEXPERIMENT=nojsonv2.
func needsClassicEncodingJSON(t interface{ Skip(...any) }) {
	if encodingJSONOnV2 {
		t.Skip("encoding/json is built on encoding/json/v2 here (GOEXPERIMENT jsonv2, Go 1.27's default): run with GOEXPERIMENT=nojsonv2 to compare with the classic encoding/json")
	}
}

// decodesLike fails t unless Unmarshal and encoding/json agree on data
// decoded into a fresh T: both fail, or both succeed with equal values.
func decodesLike[T any](t *testing.T, data []byte) {
	t.Helper()
	var want, got T
	wantErr := json.Unmarshal(data, &want)
	gotErr := Unmarshal(data, &got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%T from %q: encoding/json says %v, jsoncodec says %v", want, data, wantErr, gotErr)
	}
	if wantErr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%T from %q decodes differently:\nencoding/json %+v\njsoncodec     %+v", want, data, want, got)
	}
}

func TestCapturedReviewDecodesAsEncodingJSON(t *testing.T) {
	needsClassicEncodingJSON(t)
	data, err := os.ReadFile("../../webhook/handlers/testdata/podreview.json")
	if err != nil {
		t.Fatal(err)
	}
	decodesLike[admissionv1.AdmissionReview](t, data)
	var review admissionv1.AdmissionReview
	if err := Unmarshal(data, &review); err != nil {
		t.Fatal(err)
	}
	if review.Request == nil || len(review.Request.Object.Raw) == 0 {
		t.Fatalf("the review's object was not kept: %+v", review.Request)
	}
	decodesLike[corev1.Pod](t, review.Request.Object.Raw)
}

// The cases where v2's own defaults differ from encoding/json's: each must
// decode as encoding/json does.
func TestV1Semantics(t *testing.T) {
	needsClassicEncodingJSON(t)
	for name, data := range map[string]string{
		"case-insensitive names":  `{"Metadata":{"NAME":"p"},"SPEC":{"containers":[{"Name":"c"}]}}`,
		"duplicate names":         `{"metadata":{"name":"a","name":"b"}}`,
		"invalid UTF-8":           "{\"metadata\":{\"name\":\"a\xffb\"}}",
		"unknown fields":          `{"futureField":{"a":[1]},"spec":{"futureSpec":1}}`,
		"null into a struct":      `{"metadata":null,"spec":{"containers":null}}`,
		"quantity and int-or-str": `{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"8","memory":"1Gi"}},"ports":[{"containerPort":80}],"readinessProbe":{"httpGet":{"port":"http"}}}]}}`,
		"time":                    `{"metadata":{"creationTimestamp":"2026-11-27T12:00:00Z","deletionTimestamp":null}}`,
		"number into a string":    `{"metadata":{"name":1}}`,
		"float into an int":       `{"spec":{"priority":1.5}}`,
		"trailing data":           `{"metadata":{}} {}`,
		"not JSON":                `{"metadata":`,
		"empty":                   ``,
		"top-level null":          `null`,
	} {
		t.Run(name, func(t *testing.T) { decodesLike[corev1.Pod](t, []byte(data)) })
	}
}

func FuzzUnmarshalMatchesEncodingJSON(f *testing.F) {
	needsClassicEncodingJSON(f)
	if data, err := os.ReadFile("../../webhook/handlers/testdata/podreview.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"spec":{}}}}`))
	f.Add([]byte(`{"metadata":{"labels":{"a":"b","a":"c"}},"spec":{"containers":[{"name":"c","env":[{"name":"E","value":"\u00e9"}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		decodesLike[corev1.Pod](t, data)
		decodesLike[admissionv1.AdmissionReview](t, data)
	})
}
