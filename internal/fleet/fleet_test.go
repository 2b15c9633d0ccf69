package fleet

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The default fleet is the shared contract with deploy/accelerators.
func TestDefaultFleetMatchesTheContract(t *testing.T) {
	f, err := Default()
	require.NoError(t, err)
	nodes := f.Nodes()

	count := map[string]int{}
	for _, n := range nodes {
		count[n.Labels["nvidia.com/gpu.product"]+n.Labels["amd.com/gpu.product"]+n.Labels["gpu.intel.com/product"]+n.Labels["node-type"]]++
	}
	assert.Equal(t, map[string]int{
		"NVIDIA-H100-80GB-HBM3": 4, "NVIDIA-A100-SXM4-40GB": 4, "NVIDIA-A100-SXM4-80GB": 2,
		"NVIDIA-H200": 2, "NVIDIA-B200": 1, "MI250X": 2, "max-1550": 1, "cpu-only": 3,
	}, count)

	byName := map[string]int{}
	for i, n := range nodes {
		byName[n.Name] = i
	}
	h100 := nodes[byName["h100-0"]]
	assert.Equal(t, map[string]string{
		"kubernetes.io/hostname":       "h100-0",
		"kubernetes.io/os":             "linux",
		"kubernetes.io/arch":           "amd64",
		"type":                         "kwok",
		"topology.kubernetes.io/zone":  "us-west-2a",
		"nvidia.com/gpu.product":       "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.memory":        "81559",
		"nvidia.com/gpu.compute.major": "9",
		"nvidia.com/gpu.compute.minor": "0",
		"nvidia.com/gpu.count":         "8",
		"nvidia.com/gpu.family":        "hopper",
	}, h100.Labels)
	assert.Equal(t, map[string]string{KwokAnnotation: KwokValue}, h100.Annotations)
	assert.Empty(t, h100.Spec.Taints)
	for res, want := range map[string]string{"cpu": "208", "memory": "2Ti", "pods": "110", "nvidia.com/gpu": "8"} {
		got := h100.Status.Allocatable[corev1.ResourceName(res)]
		wantQ := resource.MustParse(want)
		assert.Zero(t, wantQ.Cmp(got), "h100 allocatable %s = %s", res, got.String())
		capacity := h100.Status.Capacity[corev1.ResourceName(res)]
		assert.Zero(t, got.Cmp(capacity), "capacity equals allocatable for %s", res)
	}
	assert.Equal(t, "us-west-2b", nodes[byName["h100-1"]].Labels[ZoneLabel], "zones alternate")
	assert.Equal(t, "mi250x", nodes[byName["mi250x-1"]].Labels["gpu.amd.com/model"])
	amd := nodes[byName["mi250x-0"]].Status.Allocatable[corev1.ResourceName("amd.com/gpu")]
	assert.Equal(t, int64(8), amd.Value())
}

func TestValidateNamesPoolAndField(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"no pools", "zones: [a]\npools: []\n", []string{"pools: empty"}},
		{"bad count", "pools:\n- {name: h100, count: 0, allocatable: {cpu: '1'}}\n", []string{"pools[0] (h100).count: 0; set at least 1"}},
		{"duplicate name", "pools:\n- {name: a, count: 1, allocatable: {cpu: '1'}}\n- {name: a, count: 1, allocatable: {cpu: '1'}}\n",
			[]string{"pools[1] (a).name: duplicate pool name"}},
		{"bad pool name", "pools:\n- {name: H100_x, count: 1, allocatable: {cpu: '1'}}\n", []string{"pools[0] (H100_x).name:"}},
		{"bad quantity", "pools:\n- {name: a, count: 1, allocatable: {nvidia.com/gpu: eight}}\n",
			[]string{`pools[0] (a).allocatable[nvidia.com/gpu]: "eight" is not a quantity`}},
		{"no allocatable", "pools:\n- {name: a, count: 1}\n", []string{"pools[0] (a).allocatable: empty"}},
		{"bad label value", "pools:\n- {name: a, count: 1, labels: {nvidia.com/gpu.product: 'H100 80GB'}, allocatable: {cpu: '1'}}\n",
			[]string{"pools[0] (a).labels[nvidia.com/gpu.product]: bad value"}},
		{"unknown field", "pools:\n- {name: a, count: 1, alocatable: {cpu: '1'}}\n", []string{`unknown field "alocatable"`}},
		{"every problem at once", "pools:\n- {name: a, count: 0, allocatable: {cpu: x}}\n",
			[]string{"pools[0] (a).count", "pools[0] (a).allocatable[cpu]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "test.yaml")
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "fleet test.yaml: "), err.Error())
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	f, err := Parse([]byte("pools:\n- {name: h100, count: 4, allocatable: {cpu: '8', nvidia.com/gpu: '8'}}\n- {name: cpu, count: 2, allocatable: {cpu: '4'}}\n"), "t")
	require.NoError(t, err)
	assert.Equal(t, []string{"h100 ×4 (nvidia.com/gpu: 8 each)", "cpu ×2 (CPU only)"}, f.Summary())
}
