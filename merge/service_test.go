package merge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
)

func shippedClass(t *testing.T, name string) *v1beta1.AcceleratorClass {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "accelerators", name+".yaml"))
	require.NoError(t, err)
	var c v1beta1.AcceleratorClass
	require.NoError(t, yaml.UnmarshalStrict(raw, &c), name)
	return &c
}

// ComposeService gives one composed pod per role of every component, with
// how many of each a group holds, on the shipped PD runtime (multi-node
// engine and decoder, and a router).
func TestComposeServiceRolesAndCounts(t *testing.T) {
	rt := shippedRuntime(t, "srt-deepseek-rdma-pd-rt")
	h100 := shippedClass(t, "nvidia-h100-80gb")
	svc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "team-a"}}
	roles, errs := ComposeService(ServiceInput{
		Service: svc, RuntimeKind: "ClusterServingRuntime", RuntimeName: "srt-deepseek-rdma-pd-rt", Runtime: rt,
		ClassFor: func(c string) *v1beta1.AcceleratorClass {
			if c == v1beta1.ComponentRouter {
				return nil
			}
			return h100
		},
	})
	require.Empty(t, errs)
	type row struct {
		Component, Role string
		PerGroup        int32
	}
	var got []row
	for _, r := range roles {
		got = append(got, row{r.Topology.Component, r.Role, r.PerGroup})
		gpus := r.Pod.Spec.Containers[0].Resources.Requests[corev1.ResourceName("nvidia.com/gpu")]
		if r.Topology.Component == v1beta1.ComponentRouter {
			assert.True(t, gpus.IsZero(), "the router requests no GPU")
		} else {
			assert.Positive(t, gpus.Value(), "%s %s pods are composed with the class's GPUs", r.Topology.Component, r.Role)
		}
	}
	topo := Topology(svc, rt)
	require.Len(t, topo, 3, "engine, decoder and router")
	var want []row
	for _, tp := range topo {
		require.True(t, tp.Component == v1beta1.ComponentRouter || tp.Workers > 0, "the runtime has multi-node engine and decoder")
		if tp.MultiNode {
			want = append(want, row{tp.Component, RoleLeader, 1}, row{tp.Component, RoleWorker, tp.Workers})
		} else {
			want = append(want, row{tp.Component, "", 1})
		}
	}
	assert.Equal(t, want, got)
}

func TestComposeServiceReportsEachFailingComponent(t *testing.T) {
	rt := shippedRuntime(t, "srt-mistral-7b-instruct-rt")
	svc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "team-a"}}
	svc.Spec.Engine = &v1beta1.EngineSpec{}
	svc.Spec.Engine.Runner = &v1beta1.RunnerSpec{Args: []string{"--owner={{.Annotations.owner}}"}}
	roles, errs := ComposeService(ServiceInput{Service: svc, RuntimeKind: "ClusterServingRuntime", RuntimeName: "x", Runtime: rt})
	assert.Empty(t, roles)
	require.Len(t, errs, 1)
	var ce *ComposeError
	require.ErrorAs(t, errs[0], &ce)
	assert.Equal(t, v1beta1.ComponentEngine, ce.Component)
	assert.Equal(t, "", ce.Role)
	assert.Contains(t, ce.Err.Error(), "spec.engine.runner.args[0]")
	assert.Equal(t, "engine: "+ce.Err.Error(), errs[0].Error(), "the message is the component's, then the error")
}

func TestComposedRoleMaxGroups(t *testing.T) {
	assert.Equal(t, int32(3), ComposedRole{Topology: ComponentTopology{Replicas: 1, MaxReplicas: 3}}.MaxGroups())
	assert.Equal(t, int32(2), ComposedRole{Topology: ComponentTopology{Replicas: 2}}.MaxGroups())
	assert.Equal(t, int64(6), ComposedRole{PerGroup: 3}.Pods(2))
}
