package handlers

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// A pod the reconciler restores from a recorded revision arrives composed
// and stamped: the webhook keeps it as it is (a protected group comes back
// as it ran). Without the revision it is composed as any skeleton.
func TestRestoredPodIsNotComposedAgain(t *testing.T) {
	w, _ := gpuWorld(t)
	_, composed := admitPod(t, w, skeletonPod(t, "chat", v1beta1.ComponentEngine))
	var pod corev1.Pod
	require.NoError(t, json.Unmarshal(composed, &pod))
	pod.Spec.Containers[0].Image = "registry.example/engine:old" // what an older revision ran
	pod.Annotations[v1beta1.AnnotationRevision] = "0123456789abcdef0123"
	pod.Annotations[v1beta1.AnnotationRestoredFrom] = "chat-engine-0123456789abcdef0123"
	raw, err := json.Marshal(&pod)
	require.NoError(t, err)

	resp, out := admitPod(t, w, raw)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Empty(t, resp.Patch, "a restored pod is not patched")
	var got corev1.Pod
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, "registry.example/engine:old", got.Spec.Containers[0].Image)
	assert.Equal(t, "0123456789abcdef0123", got.Annotations[v1beta1.AnnotationRevision])

	delete(pod.Annotations, v1beta1.AnnotationRevision)
	raw, err = json.Marshal(&pod)
	require.NoError(t, err)
	resp, out = admitPod(t, w, raw)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, "lmsysorg/sglang:v0.5.5.post3", got.Spec.Containers[0].Image, "without its revision the pod is composed from the pin")
	assert.NotEqual(t, "0123456789abcdef0123", got.Annotations[v1beta1.AnnotationRevision])
}
