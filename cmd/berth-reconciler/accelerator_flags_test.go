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
