package handlers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// capturedReview is testdata/podreview.json compacted: the AdmissionReview
// body the API server sent a pod webhook for the reconciler's engine pod
// of team-a/chat, byte for byte (the file is the body indented; captured
// by testdata/capture, whose doc says how).
func capturedReview(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "podreview.json"))
	require.NoError(t, err)
	var body bytes.Buffer
	require.NoError(t, json.Compact(&body, raw))
	return body.Bytes()
}

// capturedRequest is the request of capturedReview, decoded.
func capturedRequest(t testing.TB) *admissionv1.AdmissionRequest {
	t.Helper()
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(capturedReview(t), &review))
	require.NotNil(t, review.Request)
	return review.Request
}

// The captured review still holds what makes it the API server's pod and
// not the reconciler's skeleton, and the pod handler patches it without
// losing any of it.
func TestCapturedPodReview(t *testing.T) {
	req := capturedRequest(t)
	assert.Equal(t, admissionv1.Create, req.Operation)
	assert.Equal(t, "Pod", req.Kind.Kind)
	var pod corev1.Pod
	require.NoError(t, json.Unmarshal(req.Object.Raw, &pod))
	assert.Equal(t, "chat", pod.Labels[v1beta1.LabelInferenceService])
	assert.Equal(t, v1beta1.ComponentEngine, pod.Labels[v1beta1.LabelComponent])
	require.Len(t, pod.OwnerReferences, 1)
	assert.Equal(t, "InferenceService", pod.OwnerReferences[0].Kind)
	require.Len(t, pod.ManagedFields, 1, "the reconciler's managedFields entry")
	assert.Equal(t, "berth-reconciler", pod.ManagedFields[0].Manager)
	// Defaults and the ServiceAccount plugin's additions.
	spec := pod.Spec
	assert.Equal(t, corev1.DNSClusterFirst, spec.DNSPolicy)
	assert.Equal(t, "default-scheduler", spec.SchedulerName)
	assert.NotNil(t, spec.SecurityContext)
	assert.NotNil(t, spec.EnableServiceLinks)
	assert.NotNil(t, spec.PreemptionPolicy)
	assert.NotNil(t, spec.Priority)
	assert.Len(t, spec.Tolerations, 2, "not-ready and unreachable")
	require.Len(t, spec.Volumes, 1)
	require.NotNil(t, spec.Volumes[0].Projected, "the service account token volume")
	require.Len(t, spec.Containers, 1)
	assert.Equal(t, "/dev/termination-log", spec.Containers[0].TerminationMessagePath)
	require.Len(t, spec.Containers[0].VolumeMounts, 1)

	h := benchPods(t)
	resp := h.Mutate(ctx, req)
	patched := applyPatch(t, req.Object.Raw, resp)
	require.NotEmpty(t, resp.Patch)
	assert.NotContains(t, string(resp.Patch), `"/metadata/managedFields`, "berth never writes managedFields")
	// The patch's shape, which the API server parses operation by
	// operation and berth-admission-load's replay webhook copies: the
	// annotations added and the spec replaced whole (the request's spec
	// is all round trip).
	var ops []struct{ Op, Path string }
	require.NoError(t, json.Unmarshal(resp.Patch, &ops))
	assert.Equal(t, []struct{ Op, Path string }{{"add", "/metadata/annotations"}, {"replace", "/spec"}}, ops)
	var got corev1.Pod
	require.NoError(t, json.Unmarshal(patched, &got))
	assert.Equal(t, pod.ManagedFields, got.ManagedFields)
	assert.Equal(t, pod.OwnerReferences, got.OwnerReferences)
	assert.Contains(t, got.Spec.Volumes, spec.Volumes[0], "the token volume is kept")
	assert.Contains(t, got.Spec.Containers[0].VolumeMounts, spec.Containers[0].VolumeMounts[0])
	assert.NotEmpty(t, got.Spec.Containers[0].Image, "composed")
	assert.NotEmpty(t, got.Annotations[v1beta1.AnnotationRevision])
	again := *req
	again.Object.Raw = patched
	assert.Empty(t, string(h.Mutate(ctx, &again).Patch), "a second pass changes nothing")
}
