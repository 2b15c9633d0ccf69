package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/devenv/gang"
)

// The second scheduler's configuration has one profile, named
// gang.SchedulerName, that sorts and holds pods with Coscheduling, waits
// gang.PermitWaitingTimeSeconds, and runs without leader election against
// the given kubeconfig. Decoded strictly: a misspelt field fails here.
func TestGangSchedulerConfig(t *testing.T) {
	type plugin struct {
		Name string `json:"name"`
	}
	type set struct {
		Enabled  []plugin `json:"enabled,omitempty"`
		Disabled []plugin `json:"disabled,omitempty"`
	}
	var cfg struct {
		APIVersion     string `json:"apiVersion"`
		Kind           string `json:"kind"`
		LeaderElection struct {
			LeaderElect *bool `json:"leaderElect"`
		} `json:"leaderElection"`
		ClientConnection struct {
			Kubeconfig string `json:"kubeconfig"`
		} `json:"clientConnection"`
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
			Plugins       struct {
				MultiPoint set `json:"multiPoint"`
				QueueSort  set `json:"queueSort"`
			} `json:"plugins"`
			PluginConfig []struct {
				Name string `json:"name"`
				Args struct {
					PermitWaitingTimeSeconds int `json:"permitWaitingTimeSeconds"`
				} `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	require.NoError(t, yaml.UnmarshalStrict(gangSchedulerConfig("/run/scheduler-plugins.kubeconfig"), &cfg))

	assert.Equal(t, "kubescheduler.config.k8s.io/v1", cfg.APIVersion)
	assert.Equal(t, "KubeSchedulerConfiguration", cfg.Kind)
	require.NotNil(t, cfg.LeaderElection.LeaderElect)
	assert.False(t, *cfg.LeaderElection.LeaderElect)
	assert.Equal(t, "/run/scheduler-plugins.kubeconfig", cfg.ClientConnection.Kubeconfig)
	require.Len(t, cfg.Profiles, 1)
	p := cfg.Profiles[0]
	assert.Equal(t, "scheduler-plugins-scheduler", p.SchedulerName)
	assert.Equal(t, gang.SchedulerName, p.SchedulerName)
	assert.Equal(t, set{Enabled: []plugin{{"Coscheduling"}}}, p.Plugins.MultiPoint)
	assert.Equal(t, set{Enabled: []plugin{{"Coscheduling"}}, Disabled: []plugin{{"*"}}}, p.Plugins.QueueSort)
	require.Len(t, p.PluginConfig, 1)
	assert.Equal(t, "Coscheduling", p.PluginConfig[0].Name)
	assert.Equal(t, gang.PermitWaitingTimeSeconds, p.PluginConfig[0].Args.PermitWaitingTimeSeconds)
}

// On a cluster started elsewhere (kind) nothing is started.
func TestStartGangSchedulerRefusesAttachedClusters(t *testing.T) {
	c := &Cluster{RunDir: t.TempDir(), attached: &rest.Config{Host: "https://127.0.0.1:1"}, opts: Options{}.withDefaults()}
	err := c.StartGangScheduler(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not on an attached cluster")
	assert.Empty(t, c.Processes())
}
