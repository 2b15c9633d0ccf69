package kind

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

func TestConfig(t *testing.T) {
	tests := []struct {
		name      string
		env       string
		opts      Options
		wantName  string
		wantImage string
		wantRoles []v1alpha4.NodeRole
	}{
		{"defaults", "", Options{}, "berth-e2e", DefaultNodeImage, []v1alpha4.NodeRole{v1alpha4.ControlPlaneRole}},
		{"image from the environment", "kindest/node:v1.34.4", Options{}, "berth-e2e", "kindest/node:v1.34.4", []v1alpha4.NodeRole{v1alpha4.ControlPlaneRole}},
		{"explicit options win", "kindest/node:ignored", Options{Name: "x", NodeImage: "img:1", Workers: 2}, "x", "img:1",
			[]v1alpha4.NodeRole{v1alpha4.ControlPlaneRole, v1alpha4.WorkerRole, v1alpha4.WorkerRole}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BERTH_KIND_NODE_IMAGE", tc.env)
			cfg := Config(tc.opts)
			assert.Equal(t, tc.wantName, cfg.Name)
			assert.Equal(t, "127.0.0.1", cfg.Networking.APIServerAddress, "the apiserver is published on loopback only")
			var roles []v1alpha4.NodeRole
			for _, n := range cfg.Nodes {
				roles = append(roles, n.Role)
				assert.Equal(t, tc.wantImage, n.Image)
			}
			assert.Equal(t, tc.wantRoles, roles)
		})
	}
}

// The rendered file is what `kind create cluster --config` reads.
func TestRender(t *testing.T) {
	t.Setenv("BERTH_KIND_NODE_IMAGE", "")
	data, err := Render(Options{Workers: 1})
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, yaml.Unmarshal(data, &back))
	assert.Equal(t, "kind.x-k8s.io/v1alpha4", back["apiVersion"])
	assert.Equal(t, "Cluster", back["kind"])
	assert.Equal(t, "127.0.0.1", back["networking"].(map[string]any)["apiServerAddress"])
	nodes := back["nodes"].([]any)
	require.Len(t, nodes, 2)
	assert.Equal(t, "control-plane", nodes[0].(map[string]any)["role"])
	assert.Equal(t, DefaultNodeImage, nodes[1].(map[string]any)["image"])
}
