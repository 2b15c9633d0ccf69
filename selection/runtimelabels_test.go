package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// The decision's runtime carries the runtime object's labels, for Select
// and Resolve alike (ServingPolicy's runtimes rule may select by label).
func TestDecisionRuntimeLabels(t *testing.T) {
	rt := csr("rt", formats(format("safetensors", "")), gpus(2, 0))
	rt.Labels = map[string]string{"tier": "premium"}
	objs := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}, classes: fleet(),
		csrs: []*v1beta1.ClusterServingRuntime{rt}, nodes: []NodeInfo{gpuNode("h", "h100-80gb", 8)}}
	x := objs.load()
	d, err := x.Select(isvc("m"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"tier": "premium"}, d.Runtime.Labels)

	d, err = x.Resolve(isvc("m"), KindClusterServingRuntime, "rt", "h100-80gb")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"tier": "premium"}, d.Runtime.Labels)
}
