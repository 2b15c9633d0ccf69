package e2eutil

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestRouterSelectors(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Command: []string{"python3", "-m", "sglang_router.launch_router"},
		Args: []string{"--pd-disaggregation", "--prefill-selector", "ome.io/component=engine", "ome.io/pairing=a",
			"--policy", "cache_aware", "--decode-selector", "ome.io/component=decoder", "ome.io/pairing=a", "--port", "8080"},
	}}}}
	assert.Equal(t, []map[string]string{
		{"ome.io/component": "engine", "ome.io/pairing": "a"},
		{"ome.io/component": "decoder", "ome.io/pairing": "a"},
	}, RouterSelectors(p))
	assert.Empty(t, RouterSelectors(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Args: []string{"--port", "8080"}}}}}))
}
