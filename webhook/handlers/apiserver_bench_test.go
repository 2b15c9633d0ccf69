package handlers

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
)

// BenchmarkAPIServerAppliesPatch is the API server's half of a pod
// admission that berth patches, on the captured pod and berth's answer to
// it: what k8s.io/apiserver's mutating dispatcher does with a JSON patch
// (it uses gopkg.in/evanphx/json-patch.v4): decode the patch, encode the
// pod, apply the patch, decode the pod again, compare and default it. A
// webhook that returns no patch costs none of it.
//
//	go test -run '^$' -bench APIServerAppliesPatch -benchmem -cpu 1 ./webhook/handlers/
func BenchmarkAPIServerAppliesPatch(b *testing.B) {
	pod, patch := capturedPodAndPatch(b)
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, kjson.SerializerOptions{})
	encoded, err := runtime.Encode(ser, pod)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("patch", func(b *testing.B) { // decoding and applying it only
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			applyJSONPatch(b, patch, encoded)
		}
	})
	b.Run("dispatcher", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			js, err := runtime.Encode(ser, pod)
			if err != nil {
				b.Fatal(err)
			}
			out := &corev1.Pod{}
			if _, _, err := ser.Decode(applyJSONPatch(b, patch, js), nil, out); err != nil {
				b.Fatal(err)
			}
			if apiequality.Semantic.DeepEqual(pod, out) {
				b.Fatal("the patch changed nothing")
			}
			scheme.Scheme.Default(out)
		}
	})
}

func applyJSONPatch(b *testing.B, patch, doc []byte) []byte {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		b.Fatal(err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// capturedPodAndPatch is the captured review's pod, typed as the API
// server holds it, and berth's patch for it.
func capturedPodAndPatch(b *testing.B) (*corev1.Pod, []byte) {
	req := capturedRequest(b)
	resp := benchPods(b).Mutate(ctx, req)
	if !resp.Allowed || len(resp.Patch) == 0 {
		b.Fatalf("not patched: %+v", resp.Result)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		b.Fatal(err)
	}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	return pod, resp.Patch
}
