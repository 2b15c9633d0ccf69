package pin

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func svc(ann map[string]string) *v1beta1.InferenceService {
	return &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Annotations: ann}}
}

func TestReadWriteRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pin    Pin
		inputs string
		ann    map[string]string // what Write leaves
	}{
		{"cluster runtime and class", Pin{RuntimeKind: KindClusterServingRuntime, RuntimeName: "sglang", AcceleratorClass: "h100"}, "abc",
			map[string]string{RuntimeAnnotation: "ClusterServingRuntime/sglang", ClassAnnotation: "h100", InputsAnnotation: "abc"}},
		{"namespaced runtime, no class", Pin{RuntimeKind: KindServingRuntime, RuntimeName: "vllm"}, "d",
			map[string]string{RuntimeAnnotation: "ServingRuntime/vllm", InputsAnnotation: "d"}},
		{"decoder on its own class", Pin{RuntimeKind: KindClusterServingRuntime, RuntimeName: "pd", AcceleratorClass: "h100", DecoderAcceleratorClass: "l40s"}, "d",
			map[string]string{RuntimeAnnotation: "ClusterServingRuntime/pd", ClassAnnotation: "h100", DecoderClassAnnotation: "l40s", InputsAnnotation: "d"}},
		{"the zero pin writes nothing", Pin{}, "", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svc(nil)
			Write(s, tc.pin, tc.inputs)
			if !reflect.DeepEqual(s.Annotations, tc.ann) {
				t.Fatalf("Write: annotations %v, want %v", s.Annotations, tc.ann)
			}
			got, err := Read(s)
			if err != nil || got != tc.pin {
				t.Fatalf("Read = %+v, %v; want %+v", got, err, tc.pin)
			}
			if Pinned(s) != (tc.pin.Runtime() != "") {
				t.Fatalf("Pinned = %v for %+v", Pinned(s), tc.pin)
			}
		})
	}
}

func TestWriteReplacesAndKeepsOthers(t *testing.T) {
	s := svc(map[string]string{ClassAnnotation: "old", DecoderClassAnnotation: "old-dec", "team": "a", v1beta1.AnnotationDecision: "ranking"})
	Write(s, Pin{RuntimeKind: KindServingRuntime, RuntimeName: "r"}, "x")
	want := map[string]string{RuntimeAnnotation: "ServingRuntime/r", InputsAnnotation: "x", "team": "a", v1beta1.AnnotationDecision: "ranking"}
	if !reflect.DeepEqual(s.Annotations, want) {
		t.Fatalf("annotations %v, want %v", s.Annotations, want)
	}
	Clear(s)
	if want := map[string]string{"team": "a"}; !reflect.DeepEqual(s.Annotations, want) {
		t.Fatalf("after Clear: %v, want %v", s.Annotations, want)
	}
}

func TestReadMalformed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime string
		wantPin Pin
		wantErr error
	}{
		{"no slash", "sglang", Pin{RuntimeKind: "sglang", AcceleratorClass: "c"},
			&MalformedError{RuntimeAnnotation, "sglang", "is not <Kind>/<name>"}},
		{"no name", "ClusterServingRuntime/", Pin{RuntimeKind: KindClusterServingRuntime, AcceleratorClass: "c"},
			&MalformedError{RuntimeAnnotation, "ClusterServingRuntime/", "is not <Kind>/<name>"}},
		{"only a slash", "/", Pin{AcceleratorClass: "c"},
			&MalformedError{RuntimeAnnotation, "/", "is not <Kind>/<name>"}},
		{"unknown kind", "Deployment/x", Pin{RuntimeKind: "Deployment", RuntimeName: "x", AcceleratorClass: "c"},
			&MalformedError{RuntimeAnnotation, "Deployment/x", `names kind "Deployment", not ServingRuntime or ClusterServingRuntime`}},
		{"kind in the wrong case", "clusterservingruntime/x", Pin{RuntimeKind: "clusterservingruntime", RuntimeName: "x", AcceleratorClass: "c"},
			&MalformedError{RuntimeAnnotation, "clusterservingruntime/x", `names kind "clusterservingruntime", not ServingRuntime or ClusterServingRuntime`}},
		{"empty: not pinned", "", Pin{AcceleratorClass: "c"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := svc(map[string]string{ClassAnnotation: "c"})
			if tc.runtime != "" {
				s.Annotations[RuntimeAnnotation] = tc.runtime
			}
			got, err := Read(s)
			if got != tc.wantPin {
				t.Errorf("pin %+v, want %+v", got, tc.wantPin)
			}
			if !reflect.DeepEqual(err, tc.wantErr) {
				t.Errorf("error %#v, want %#v", err, tc.wantErr)
			}
			if Pinned(s) != (tc.runtime != "") {
				t.Errorf("Pinned = %v", Pinned(s))
			}
			if !strings.Contains(tc.runtime, "/") && got.Runtime() != tc.runtime {
				t.Errorf("Runtime() = %q, want the value as written", got.Runtime())
			}
		})
	}
}

func TestMalformedErrorText(t *testing.T) {
	_, err := Read(svc(map[string]string{RuntimeAnnotation: "x"}))
	if want := `annotation ome.io/resolved-runtime="x" is not <Kind>/<name>`; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
}

func TestClassFor(t *testing.T) {
	p := Pin{AcceleratorClass: "e", DecoderAcceleratorClass: "d"}
	for c, want := range map[string]string{v1beta1.ComponentEngine: "e", v1beta1.ComponentDecoder: "d", v1beta1.ComponentRouter: "e"} {
		if got := p.ClassFor(c); got != want {
			t.Errorf("ClassFor(%s) = %q, want %q", c, got, want)
		}
	}
	if got := (Pin{AcceleratorClass: "e"}).ClassFor(v1beta1.ComponentDecoder); got != "e" {
		t.Errorf("decoder without its own class: %q, want the engine's", got)
	}
}

func TestRepin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cur, old map[string]string
		create   bool
		want     bool
	}{
		{"new value", map[string]string{RepinAnnotation: "t2"}, map[string]string{RepinAnnotation: "t1"}, false, true},
		{"first value", map[string]string{RepinAnnotation: "t1"}, nil, false, true},
		{"same value", map[string]string{RepinAnnotation: "t1"}, map[string]string{RepinAnnotation: "t1"}, false, false},
		{"removed", nil, map[string]string{RepinAnnotation: "t1"}, false, false},
		{"on CREATE", map[string]string{RepinAnnotation: "t1"}, nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old metav1.Object
			if !tc.create {
				old = svc(tc.old)
			}
			if got := RepinAsked(svc(tc.cur), old); got != tc.want {
				t.Fatalf("RepinAsked = %v, want %v", got, tc.want)
			}
		})
	}
	if got, want := string(RepinPatch("2026-01-01T00:00:00Z")), `{"metadata":{"annotations":{"ome.io/repin":"2026-01-01T00:00:00Z"}}}`; got != want {
		t.Fatalf("RepinPatch = %s, want %s", got, want)
	}
}

func TestNudge(t *testing.T) {
	s := svc(map[string]string{ModelNudgeAnnotation: "rev-a#2", RuntimeNudgeAnnotation: "ClusterServingRuntime/r@u1", "keep": "x"})
	n := ReadNudge(s)
	if want := (Nudge{ModelRevision: "rev-a#2", RuntimeRevision: "ClusterServingRuntime/r@u1"}); n != want {
		t.Fatalf("ReadNudge = %+v, want %+v", n, want)
	}
	if n.Attempt() != 2 {
		t.Errorf("Attempt = %d, want 2", n.Attempt())
	}
	if got, want := n.Retry(3), (Nudge{ModelRevision: "rev-a#3", RuntimeRevision: "ClusterServingRuntime/r@u1#3"}); got != want {
		t.Errorf("Retry(3) = %+v, want %+v", got, want)
	}
	if got, want := string((Nudge{RuntimeRevision: "x@1"}).MergePatch()), `{"metadata":{"annotations":{"ome.io/runtime-revision":"x@1"}}}`; got != want {
		t.Errorf("MergePatch = %s, want %s", got, want)
	}
	if (Nudge{}).Attempt() != 0 || !(Nudge{}).IsZero() {
		t.Errorf("the zero nudge has attempt %d", (Nudge{}).Attempt())
	}
	ClearNudge(s)
	if want := map[string]string{"keep": "x"}; !reflect.DeepEqual(s.Annotations, want) {
		t.Errorf("after ClearNudge: %v", s.Annotations)
	}
	for v, want := range map[string]struct {
		base    string
		attempt int
	}{"r": {"r", 1}, "r#2": {"r", 2}, "r#0": {"r#0", 1}, "r#x": {"r#x", 1}, "a#b#3": {"a#b", 3}, "": {"", 1}} {
		if b, a := NudgeBase(v), NudgeAttempt(v); b != want.base || a != want.attempt {
			t.Errorf("%q: base %q attempt %d, want %q %d", v, b, a, want.base, want.attempt)
		}
	}
}

// Nothing panics on a nil object, nor on an interface holding a nil pointer.
func TestNilObjects(t *testing.T) {
	var typed *v1beta1.InferenceService
	for _, obj := range []metav1.Object{nil, typed} {
		if p, err := Read(obj); err != nil || p != (Pin{}) || Pinned(obj) {
			t.Errorf("Read(%#v) = %+v, %v", obj, p, err)
		}
		Write(obj, Pin{RuntimeKind: KindServingRuntime, RuntimeName: "r"}, "d")
		SetInputs(obj, "d")
		Clear(obj)
		ClearNudge(obj)
		if n := ReadNudge(obj); !n.IsZero() || RepinValue(obj) != "" {
			t.Errorf("nudge %+v", n)
		}
		if RepinAsked(svc(map[string]string{RepinAnnotation: "t"}), obj) {
			t.Errorf("RepinAsked against %#v", obj)
		}
	}
}
