package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestClassAvailabilityCounts(t *testing.T) {
	cordoned := gpuNode("h3", "h100-80gb", 8)
	cordoned.Ready = false
	x := objects{classes: fleet(), nodes: []NodeInfo{gpuNode("h1", "h100-80gb", 8), gpuNode("h2", "h100-80gb", 8), cordoned, gpuNode("a1", "a100-40gb", 8)}}.load()
	x.SetPodUsage("ns/p1", "h1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 2})
	x.SetPodUsage("ns/p2", "h1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 2})
	x.SetPodUsage("ns/p3", "h2", map[corev1.ResourceName]int64{"nvidia.com/gpu": 2, "cpu": 4})
	x.SetPodUsage("ns/p4", "h3", map[corev1.ResourceName]int64{"nvidia.com/gpu": 8})

	got, ok := x.ClassAvailability("h100-80gb")
	require.True(t, ok)
	assert.Equal(t, ClassAvailability{Resource: "nvidia.com/gpu", Nodes: []string{"h1", "h2"}, Total: 16, Available: 10, Matching: 3, Products: map[string]int{}}, got)

	x.DeletePodUsage("ns/p1")
	x.UpsertNode(gpuNode("h3", "h100-80gb", 8)) // uncordoned: its pod still holds all 8
	got, _ = x.ClassAvailability("h100-80gb")
	assert.Equal(t, ClassAvailability{Resource: "nvidia.com/gpu", Nodes: []string{"h1", "h2", "h3"}, Total: 24, Available: 12, Matching: 3, Products: map[string]int{}}, got)

	x.DeleteNode("h1")
	got, _ = x.ClassAvailability("h100-80gb")
	assert.Equal(t, int64(16), got.Total)
	assert.Equal(t, int64(6), got.Available)

	_, ok = x.ClassAvailability("gone")
	assert.False(t, ok)
}

func TestCountedResourceIsVendorAware(t *testing.T) {
	amd := class("mi300x").Resources().Vendor("AMD").Obj()
	intel := class("gaudi").Resources().Vendor("intel").Obj()
	none := class("any").Resources().Obj()
	mig := class("mig").Resources(v1beta1.AcceleratorResource{Name: "nvidia.com/mig-1g.10gb"}, v1beta1.AcceleratorResource{Name: "nvidia.com/gpu"}).Obj()
	assert.Equal(t, corev1.ResourceName("amd.com/gpu"), CountedResource(amd))
	assert.Equal(t, corev1.ResourceName("gpu.intel.com/i915"), CountedResource(intel))
	assert.Equal(t, corev1.ResourceName("nvidia.com/gpu"), CountedResource(none))
	assert.Equal(t, corev1.ResourceName("nvidia.com/mig-1g.10gb"), CountedResource(mig))

	x := objects{classes: []*v1beta1.AcceleratorClass{amd}, nodes: []NodeInfo{{Name: "m1", Ready: true,
		Labels:      map[string]string{"gpu": "mi300x", "amd.com/gpu.product": "AMD-Instinct-MI300X"},
		Allocatable: map[corev1.ResourceName]int64{"amd.com/gpu": 8, "nvidia.com/gpu": 99}}}}.load()
	got, _ := x.ClassAvailability("mi300x")
	assert.Equal(t, ClassAvailability{Resource: "amd.com/gpu", Nodes: []string{"m1"}, Total: 8, Available: 8, Matching: 1,
		Products: map[string]int{"AMD-Instinct-MI300X": 1}}, got)
}

// A losing class's explanation quotes the numbers its status reports.
func TestExplanationQuotesClassAvailability(t *testing.T) {
	model := []*v1beta1.ClusterBaseModel{cbm("m", mSize("35B"))}
	x := objects{cbms: model, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(4, 0))},
		classes: fleet(), nodes: []NodeInfo{gpuNode("a1", "a100-40gb", 8), gpuNode("a2", "a100-40gb", 8), gpuNode("h1", "h100-80gb", 8)}}.load()
	x.SetPodUsage("ns/p1", "a1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 6})
	x.SetPodUsage("ns/p2", "a2", map[corev1.ResourceName]int64{"nvidia.com/gpu": 5})

	d, err := x.Select(isvc("m", withAnnotation(v1beta1.AnnotationSelectionStrategy, string(v1beta1.StrategyCost))))
	require.NoError(t, err)
	assert.Equal(t, "h100-80gb", d.AcceleratorClassName())
	a, _ := x.ClassAvailability("a100-40gb")
	assert.Equal(t, ClassAvailability{Resource: "nvidia.com/gpu", Nodes: []string{"a1", "a2"}, Total: 16, Available: 5, Matching: 2, Products: map[string]int{}}, a)
	assert.Contains(t, d.Explanation, "AcceleratorClass/a100-40gb: fits, but its ready nodes lack 1 pod(s) × 4 nvidia.com/gpu (5 of 16 nvidia.com/gpu free on 2 Ready nodes); h100-80gb has room")

	// No class has room: the warning of the chosen one quotes its numbers.
	x.SetPodUsage("ns/p3", "h1", map[corev1.ResourceName]int64{"nvidia.com/gpu": 7})
	d, err = x.Select(isvc("m", withAnnotation(v1beta1.AnnotationSelectionStrategy, string(v1beta1.StrategyCost))))
	require.NoError(t, err)
	assert.Equal(t, "a100-40gb", d.AcceleratorClassName())
	assert.Contains(t, d.Warnings, "AcceleratorClass a100-40gb currently has no room: its ready nodes lack 1 pod(s) × 4 nvidia.com/gpu (5 of 16 nvidia.com/gpu free on 2 Ready nodes); the service will wait for capacity")
}
