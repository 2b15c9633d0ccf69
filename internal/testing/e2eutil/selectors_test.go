package e2eutil

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
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

func TestServedPairings(t *testing.T) {
	mk := func(name, component, pairing string, ready, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1beta1.LabelComponent: component, v1beta1.LabelPairing: pairing}}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	pods := []*corev1.Pod{
		mk("r0", v1beta1.ComponentRouter, "a", true, false),
		mk("r1", v1beta1.ComponentRouter, "b", false, false),
		mk("r2", v1beta1.ComponentRouter, "c", true, true),
		mk("e0", v1beta1.ComponentEngine, "d", true, false),
	}
	assert.Equal(t, map[string]bool{"a": true}, ServedPairings(pods))
	assert.True(t, PodReady(pods[0]))
	assert.False(t, PodReady(pods[1]))
}
