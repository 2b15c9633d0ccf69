package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModelFlags(t *testing.T) {
	f := newFlags()
	require.NoError(t, f.parse([]string{"--hf-endpoint=http://127.0.0.1:8080", "--model-credentials-namespace=creds",
		"--model-inspector-image=ghcr.io/berthdev/berth:v1", "--model-discovery-timeout=30s", "--model-workers=3"}))
	assert.Equal(t, "http://127.0.0.1:8080", f.hfEndpoint)
	assert.Equal(t, "creds", f.credentialsNamespace)
	assert.Equal(t, "ghcr.io/berthdev/berth:v1", f.inspectorImage)
	assert.Equal(t, 30*time.Second, f.discoveryTimeout)
	assert.Equal(t, 3, f.modelWorkers)

	e := newFlags()
	require.NoError(t, e.parse([]string{"--model-namespaced-endpoints=https://hf-mirror.example, http://minio.storage:9000"}))
	assert.Equal(t, []string{"https://hf-mirror.example", "http://minio.storage:9000"}, e.namespacedEndpoints)
	assert.Error(t, newFlags().parse([]string{"--model-namespaced-endpoints=minio.storage:9000"}), "not an http(s) URL")

	d := newFlags()
	require.NoError(t, d.parse(nil))
	assert.Empty(t, d.namespacedEndpoints, "namespaced models keep the default endpoints unless an admin allows more")
	assert.Equal(t, "https://huggingface.co", d.hfEndpoint)
	assert.Empty(t, d.inspectorImage, "pvc:// inspection is off unless an image is given")
}

func TestModelFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--hf-endpoint=huggingface.co"}, `--hf-endpoint "huggingface.co" is not an http(s) URL`},
		{[]string{"--hf-endpoint=ftp://mirror"}, `--hf-endpoint "ftp://mirror" is not an http(s) URL`},
		{[]string{"--model-workers=0"}, "--model-workers must be at least 1, got 0"},
		{[]string{"--model-discovery-timeout=0s"}, "--model-discovery-timeout and --model-retry-base must be positive and --model-retry-max at least --model-retry-base"},
		{[]string{"--model-retry-base=1m", "--model-retry-max=10s"}, "--model-discovery-timeout and --model-retry-base must be positive and --model-retry-max at least --model-retry-base"},
		{[]string{"--model-credentials-namespace="}, "--model-credentials-namespace must not be empty"},
	}
	for _, tt := range tests {
		err := newFlags().parse(tt.args)
		require.Error(t, err, tt.args)
		assert.Equal(t, tt.want, err.Error())
	}
}

func TestPolicyFlags(t *testing.T) {
	d := newFlags()
	require.NoError(t, d.parse(nil))
	assert.True(t, d.servingPolicies, "ServingPolicies are on by default")
	assert.Equal(t, 5*time.Second, d.quotaRetryBase)
	assert.Equal(t, 5*time.Minute, d.quotaRetryMax)

	f := newFlags()
	require.NoError(t, f.parse([]string{"--namespace=berth", "--serving-policies=false", "--quota-retry-base=1s", "--quota-retry-max=1m"}))
	assert.Equal(t, "berth", f.namespace)
	assert.False(t, f.servingPolicies)
	assert.Equal(t, time.Second, f.quotaRetryBase)
	assert.Equal(t, time.Minute, f.quotaRetryMax)

	assert.NotContains(t, f.controllers, "policy", "--serving-policies=false leaves the policy controller out")
	assert.Contains(t, d.controllers, "policy")
	agree := newFlags()
	require.NoError(t, agree.parse([]string{"--controllers=servinggroups,policy", "--serving-policies=true"}))
	assert.Equal(t, []string{"servinggroups", "policy"}, agree.controllers)
	for _, args := range [][]string{{"--controllers=servinggroups", "--serving-policies=true"}, {"--controllers=policy", "--serving-policies=false"}} {
		err := newFlags().parse(args)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), "disagrees with --controllers=")
	}

	err := newFlags().parse([]string{"--quota-retry-base=1m", "--quota-retry-max=10s"})
	require.Error(t, err)
	assert.Equal(t, "--quota-retry-base must be positive and --quota-retry-max at least --quota-retry-base", err.Error())
}

func TestAcceleratorFlags(t *testing.T) {
	d := newFlags()
	require.NoError(t, d.parse(nil))
	assert.False(t, d.acceleratorDiscovery, "discovery writes classes: off unless an admin turns it on")
	assert.False(t, d.kueueSync, "the Kueue sync needs Kueue's CRD: off by default")
	assert.Empty(t, d.acceleratorNodeSelector)

	f := newFlags()
	require.NoError(t, f.parse([]string{"--accelerator-discovery", "--kueue-sync", "--accelerator-discovery-node-selector=pool in (gpu),!spot"}))
	assert.True(t, f.acceleratorDiscovery)
	assert.True(t, f.kueueSync)
	assert.Equal(t, "pool in (gpu),!spot", f.acceleratorNodeSelector)

	err := newFlags().parse([]string{"--accelerator-discovery-node-selector=pool in gpu"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--accelerator-discovery-node-selector "pool in gpu": `)
}

func TestPprofAddressFlag(t *testing.T) {
	d := newFlags()
	require.NoError(t, d.parse(nil))
	assert.Empty(t, d.pprofAddress, "no profiles are served by default")

	f := newFlags()
	require.NoError(t, f.parse([]string{"--pprof-address=127.0.0.1:6060"}))
	assert.Equal(t, "127.0.0.1:6060", f.pprofAddress)
}
