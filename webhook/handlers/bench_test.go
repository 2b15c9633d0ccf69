package handlers

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkPodMutate is one pod admission's handler work: cache reads,
// Resolve, ComposePod, Revision and the JSON patch (no HTTP, no TLS).
func BenchmarkPodMutate(b *testing.B) {
	t := &testing.T{}
	w, isvc := gpuWorld(t)
	isvc.ResourceVersion, isvc.UID = "7", "uid-7" // as from the API server: the revision is cached
	if err := w.services.Update(isvc); err != nil {
		b.Fatal(err)
	}
	h := w.pods()
	req := &admissionv1.AdmissionRequest{UID: "p", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Kind: "Pod"}, Namespace: "team-a"}
	req.Object.Raw = skeletonPod(b, "chat", "engine")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp := h.Mutate(ctx, req); !resp.Allowed {
			b.Fatalf("denied: %s", resp.Result.Message)
		}
	}
}

// BenchmarkInferenceServiceMutate is a CREATE: migrate, default, select, pin, patch.
func BenchmarkInferenceServiceMutate(b *testing.B) {
	t := &testing.T{}
	w, isvc := gpuWorld(t)
	fresh := isvc.DeepCopy()
	fresh.Annotations = nil
	req := request(t, admissionv1.Create, "InferenceService", fresh, nil, fresh.Namespace, fresh.Name)
	h := w.isvcs()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp := h.Mutate(ctx, req); !resp.Allowed {
			b.Fatalf("denied: %s", resp.Result.Message)
		}
	}
}

// BenchmarkInferenceServiceValidate is the validating pass of that CREATE:
// verify the pin, check the lifecycle, compose every pod of the service.
func BenchmarkInferenceServiceValidate(b *testing.B) {
	t := &testing.T{}
	w, isvc := gpuWorld(t)
	fresh := isvc.DeepCopy()
	fresh.Annotations = nil
	req := request(t, admissionv1.Create, "InferenceService", fresh, nil, fresh.Namespace, fresh.Name)
	h := w.isvcs()
	req.Object.Raw = applyPatch(t, req.Object.Raw, h.Mutate(ctx, req))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp := h.Validate(ctx, req); !resp.Allowed {
			b.Fatalf("denied: %s", resp.Result.Message)
		}
	}
}
