package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

func TestOMECompatLabels(t *testing.T) {
	cases := []struct {
		name      string
		component string
		g         GroupIdentity
		want      map[string]string
	}{
		{"single-pod engine", v1beta1.ComponentEngine, GroupIdentity{GroupIndex: 2}, map[string]string{"component": "engine"}},
		{"router", v1beta1.ComponentRouter, GroupIdentity{}, map[string]string{"component": "router"}},
		{"multi-node leader", v1beta1.ComponentDecoder, GroupIdentity{Role: RoleLeader, GroupSize: 2},
			map[string]string{"component": "decoder", "leaderworkerset.sigs.k8s.io/worker-index": "0"}},
		{"multi-node worker", v1beta1.ComponentEngine, GroupIdentity{Role: RoleWorker, WorkerIndex: 3, GroupSize: 4},
			map[string]string{"component": "engine", "leaderworkerset.sigs.k8s.io/worker-index": "3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, OMECompatLabels(tc.component, tc.g))
		})
	}
}

// A runtime's or the service's labels cannot move a pod out of what OME's
// routers select: the reconciler's component label stands, as the identity
// labels do.
func TestOMECompatLabelsProtected(t *testing.T) {
	rt := &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{
		ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{Labels: map[string]string{"component": "web", "team": "a"}},
		Runner:                 &v1beta1.RunnerSpec{Name: "ome-container", Image: "engine:v1"},
	}}
	svc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "ns"},
		Spec: v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{}}}
	in := Input{Service: svc, Component: v1beta1.ComponentEngine, RuntimeKind: "ClusterServingRuntime", RuntimeName: "rt", Runtime: rt}

	pod := SkeletonPod(svc, v1beta1.ComponentEngine, GroupIdentity{})
	for k, v := range OMECompatLabels(v1beta1.ComponentEngine, GroupIdentity{}) {
		pod.Labels[k] = v
	}
	require.NoError(t, ComposePod(in, pod))
	assert.Equal(t, "engine", pod.Labels["component"])
	assert.Equal(t, "a", pod.Labels["team"])
}
