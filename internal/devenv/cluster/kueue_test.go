package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/devenv/kueue"
)

// Kueue's configuration as StartKueue writes it: its webhook server and
// probes on loopback at the given ports, no leader election, no metrics
// server, internal certificate management in the namespace and Secret
// StartKueue creates, the visibility server off. (Kueue itself rejects an
// unknown field: the e2e test TestKueue starts it with this.)
func TestKueueConfig(t *testing.T) {
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(kueueConfig(9443, 8081, "/run/kueue-certs"), &cfg))
	assert.Equal(t, "config.kueue.x-k8s.io/v1beta2", cfg["apiVersion"])
	assert.Equal(t, kueue.Namespace, cfg["namespace"])
	assert.Equal(t, map[string]any{"healthProbeBindAddress": "127.0.0.1:8081"}, cfg["health"])
	assert.Equal(t, map[string]any{"bindAddress": "0"}, cfg["metrics"])
	assert.Equal(t, map[string]any{"host": "127.0.0.1", "port": float64(9443), "certDir": "/run/kueue-certs"}, cfg["webhook"])
	assert.Equal(t, map[string]any{"leaderElect": false}, cfg["leaderElection"])
	assert.Equal(t, map[string]any{"enable": true, "webhookServiceName": kueue.WebhookServiceName, "webhookSecretName": kueue.WebhookSecretName},
		cfg["internalCertManagement"])
	assert.Equal(t, map[string]any{"VisibilityOnDemand": false}, cfg["featureGates"])
}
