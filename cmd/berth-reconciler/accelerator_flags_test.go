package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAcceleratorStatusFlags(t *testing.T) {
	d := newFlags()
	require.NoError(t, d.parse(nil))
	assert.True(t, d.acceleratorStatus, "AcceleratorClass status is written by default")
	assert.Equal(t, 10*time.Second, d.acceleratorStatusInterval)

	f := newFlags()
	require.NoError(t, f.parse([]string{"--accelerator-status=false", "--accelerator-status-interval=1m"}))
	assert.False(t, f.acceleratorStatus)
	assert.Equal(t, time.Minute, f.acceleratorStatusInterval)

	err := newFlags().parse([]string{"--accelerator-status-interval=0s"})
	require.Error(t, err)
	assert.Equal(t, "--accelerator-status-interval must be positive, got 0s", err.Error())
}

func TestControllersFlag(t *testing.T) {
	d := newFlags()
	require.NoError(t, d.parse(nil))
	assert.Equal(t, []string{"servinggroups", "models", "accelerator-status", "policy"}, d.controllers, "all by default")

	off := newFlags()
	require.NoError(t, off.parse([]string{"--accelerator-status=false"}))
	assert.Equal(t, []string{"servinggroups", "models", "policy"}, off.controllers, "the older flag still turns it off")

	some := newFlags()
	require.NoError(t, some.parse([]string{"--controllers= models, servinggroups,models"}))
	assert.Equal(t, []string{"models", "servinggroups"}, some.controllers)

	agree := newFlags()
	require.NoError(t, agree.parse([]string{"--controllers=accelerator-status", "--accelerator-status=true"}))
	assert.Equal(t, []string{"accelerator-status"}, agree.controllers)

	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--controllers=servinggroups,policies"}, `--controllers: unknown controller "policies" (known: servinggroups, models, accelerator-status, accelerator-sync, policy)`},
		{[]string{"--controllers=models,accelerator-status", "--accelerator-status=false"}, "--accelerator-status=false disagrees with --controllers=models,accelerator-status; give one of them"},
		{[]string{"--controllers=,"}, "--controllers=, names no controller (known: servinggroups, models, accelerator-status, accelerator-sync, policy)"},
		{[]string{"--controllers=models", "--accelerator-status=true"}, "--accelerator-status=true disagrees with --controllers=models; give one of them"},
	}
	for _, tt := range tests {
		err := newFlags().parse(tt.args)
		require.Error(t, err, tt.args)
		assert.Equal(t, tt.want, err.Error())
	}
}

// accelerator-sync (discovery and the Kueue sync) runs exactly when
// --accelerator-discovery or --kueue-sync asks for its work: the flags
// alone add it to the default list, and a --controllers list must agree.
func TestAcceleratorSyncController(t *testing.T) {
	for _, flag := range []string{"--accelerator-discovery", "--kueue-sync"} {
		f := newFlags()
		require.NoError(t, f.parse([]string{flag}))
		assert.Equal(t, []string{"servinggroups", "models", "accelerator-status", "accelerator-sync", "policy"}, f.controllers, flag)

		named := newFlags()
		require.NoError(t, named.parse([]string{"--controllers=accelerator-sync", flag}))
		assert.Equal(t, []string{"accelerator-sync"}, named.controllers, flag)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--controllers=accelerator-sync"}, "--controllers=accelerator-sync names accelerator-sync, which needs --accelerator-discovery or --kueue-sync"},
		{[]string{"--controllers=servinggroups", "--accelerator-discovery"}, "--accelerator-discovery needs accelerator-sync in --controllers=servinggroups"},
		{[]string{"--controllers=models", "--kueue-sync"}, "--kueue-sync needs accelerator-sync in --controllers=models"},
	}
	for _, tt := range tests {
		err := newFlags().parse(tt.args)
		require.Error(t, err, tt.args)
		assert.Equal(t, tt.want, err.Error())
	}
}
