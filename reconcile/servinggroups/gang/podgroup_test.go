package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

func TestHasSubGroupPolicy(t *testing.T) {
	assert.False(t, hasSubGroupPolicy(wrappers.VolcanoPodGroupCRD(false), "v1beta1"))
	assert.True(t, hasSubGroupPolicy(wrappers.VolcanoPodGroupCRD(true), "v1beta1"))
	assert.False(t, hasSubGroupPolicy(wrappers.VolcanoPodGroupCRD(true), "v1alpha1"), "another version's schema")
}

// The task a pod's Volcano mark names (merge.GangTaskName) is the key the
// PodGroup's minTaskMember uses (plan.TaskName).
func TestGangTaskNamesAgree(t *testing.T) {
	for _, c := range []struct {
		component string
		group     int
	}{{"engine", 0}, {"decoder", 7}, {"engine", 12}} {
		if got, want := merge.GangTaskName(c.component, c.group), plan.TaskName(c.component, int32(c.group)); got != want {
			t.Errorf("merge.GangTaskName(%q, %d) = %q, plan.TaskName = %q", c.component, c.group, got, want)
		}
	}
}

// An update of a PodGroup goes through its backend's Go type: the fields
// berth owns are set, the others (a person's priorityClassName, the
// scheduler's status) come back as they were, and reading the result back
// gives what was written.
func TestPodGroupUpdateKeepsOthersFields(t *testing.T) {
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: "ns", UID: "isvc-uid"}}
	yes := true
	owner := []any{map[string]any{"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "pd", "uid": "isvc-uid", "controller": yes}}
	base := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "pd", "namespace": "ns", "uid": "pg-uid", "resourceVersion": "7", "ownerReferences": owner},
		"spec": map[string]any{"minMember": int64(1), "queue": "default", "priorityClassName": "high",
			"minTaskMember": map[string]any{"engine-0": int64(1)}},
		"status": map[string]any{"phase": "Pending", "conditions": []any{map[string]any{
			"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": "2/3 tasks in gang unschedulable"}}},
	}}
	obs, ok := Read(base, isvc)
	require.True(t, ok)
	assert.Equal(t, "Pending", obs.Phase)
	require.NotNil(t, obs.Unschedulable, "Volcano's Unschedulable condition is read")
	assert.Equal(t, "NotEnoughResources", obs.Unschedulable.Reason)
	assert.Equal(t, map[string]int32{"engine-0": 1}, obs.Spec.Gang.MinTaskMember)

	g := &Plan{backend: find(newBackends(), v1beta1.GangSchedulerVolcano)}
	want := Spec{Queue: "q1", Gang: plan.Gang{MinMember: 3, MinResources: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
		SubGroups: []plan.SubGroup{{Name: "engine", SubGroupSize: 1, MinSubGroups: 2}}}}
	u, err := g.podGroup(isvc, "pd", want, base)
	require.NoError(t, err)
	assert.Equal(t, "7", u.GetResourceVersion(), "an update of the object read")
	pc, _, _ := unstructured.NestedString(u.Object, "spec", "priorityClassName")
	assert.Equal(t, "high", pc, "a field berth does not own is kept")
	_, hasTasks, _ := unstructured.NestedMap(u.Object, "spec", "minTaskMember")
	assert.False(t, hasTasks, "minTaskMember no longer wanted")
	sgs, _, _ := unstructured.NestedSlice(u.Object, "spec", "subGroupPolicy")
	assert.Equal(t, []any{map[string]any{"name": "engine", "subGroupSize": int64(1), "minSubGroups": int64(2),
		"labelSelector":  map[string]any{"matchLabels": map[string]any{v1beta1.LabelInferenceService: "pd", v1beta1.LabelComponent: "engine"}},
		"matchLabelKeys": []any{v1beta1.LabelGroupIndex}}}, sgs)
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	assert.Equal(t, "Pending", phase, "the scheduler's status is kept")

	back, ok := Read(u, isvc)
	require.True(t, ok)
	assert.True(t, want.Gang.Equal(back.Spec.Gang), "read back: want %+v, got %+v", want.Gang, back.Spec.Gang)
	assert.Equal(t, "q1", back.Spec.Queue)

	// A new one carries the owner and no status; a Coscheduling PodGroup
	// says minMember and minResources only.
	g.backend = find(newBackends(), v1beta1.GangSchedulerCoscheduling)
	u, err = g.podGroup(isvc, "pd-engine-0", want, nil)
	require.NoError(t, err)
	assert.Equal(t, "scheduling.x-k8s.io/v1alpha1", u.GetAPIVersion())
	assert.True(t, metav1.IsControlledBy(u, isvc))
	assert.NotContains(t, u.Object, "status")
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	assert.Equal(t, map[string]any{"minMember": int64(3), "minResources": map[string]any{"nvidia.com/gpu": "2"}}, spec)
}
