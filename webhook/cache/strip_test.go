package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStripNodeKeepsOnlyWhatSelectionReads(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "h100-0", Labels: map[string]string{"nvidia.com/gpu.product": "H100"},
			Annotations: map[string]string{"big": "annotation"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"cpu": resource.MustParse("208"), "nvidia.com/gpu": resource.MustParse("8"), "hugepages-2Mi": resource.MustParse("1Gi")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "kubelet is posting ready status"}},
			Images:      []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1}},
		},
	}
	out, err := stripNode(n)
	require.NoError(t, err)
	s := out.(*corev1.Node)
	assert.Equal(t, "h100-0", s.Name)
	assert.Equal(t, n.Labels, s.Labels)
	assert.Empty(t, s.Annotations)
	assert.Empty(t, s.ManagedFields)
	assert.Empty(t, s.Status.Images)
	assert.Equal(t, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}, s.Status.Allocatable)
	assert.Equal(t, []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, s.Status.Conditions)

	info := NodeInfo(s)
	assert.EqualValues(t, 8, info.Allocatable["nvidia.com/gpu"])
	assert.False(t, info.Ready, "an unschedulable node offers no room")
	n.Spec.Unschedulable = false
	out, _ = stripNode(n)
	assert.True(t, NodeInfo(out.(*corev1.Node)).Ready)
}

func TestPodAcceleratorRequests(t *testing.T) {
	gpu := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Limits: gpu("3")}}},
		Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Limits: gpu("1")}},                     // requests default to limits
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: gpu("1"), Limits: gpu("1")}}, // counted once
			{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("4")}}},
		},
	}}
	assert.Equal(t, map[corev1.ResourceName]int64{"nvidia.com/gpu": 3}, PodAcceleratorRequests(p), "max(init 3, sum 2)")
	p.Spec.InitContainers = nil
	assert.Equal(t, map[corev1.ResourceName]int64{"nvidia.com/gpu": 2}, PodAcceleratorRequests(p))

	out, err := stripPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"x": "y"}}, Spec: p.Spec})
	require.NoError(t, err)
	s := out.(*corev1.Pod)
	assert.Empty(t, s.Labels)
	assert.Equal(t, map[corev1.ResourceName]int64{"nvidia.com/gpu": 2}, PodAcceleratorRequests(s), "the stripped pod keeps its usage")
}

func TestIsAcceleratorResource(t *testing.T) {
	for name, want := range map[corev1.ResourceName]bool{
		"nvidia.com/gpu": true, "amd.com/gpu": true, "gpu.intel.com/i915": true, "nvidia.com/mig-3g.20gb": true,
		"cpu": false, "memory": false, "ephemeral-storage": false, "hugepages-2Mi": false, "pods": false, "kubernetes.io/batch-cpu": false,
	} {
		assert.Equal(t, want, IsAcceleratorResource(name), name)
	}
}
