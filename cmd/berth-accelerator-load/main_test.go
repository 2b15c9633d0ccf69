package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil)
	require.NoError(t, err)
	assert.Equal(t, config{nodes: 2000, pods: 5000, churn: 20, window: time.Minute, interval: 10 * time.Second,
		settle: 40 * time.Second, timeout: 45 * time.Minute}, c)

	for args, want := range map[string]string{
		"-nodes=3":     "-nodes: 3 is outside 4..10000",
		"-pods=40000":  "-pods: 40000 is outside 0..min(8 × nodes, 30000)",
		"-churn=-1":    "-churn: -1 is outside 0..500",
		"-interval=0s": "-window, -interval and -timeout must be positive",
	} {
		_, err := parseFlags([]string{args})
		require.Error(t, err, args)
		assert.Equal(t, want, err.Error(), args)
	}
}

// The fleet's pools and the tool's classes agree: each pool's class
// matches its nodes only, and the broad class every NVIDIA node.
func TestClassesMatchTheirPools(t *testing.T) {
	f := gpuFleet(8)
	got := map[string]int{}
	for _, n := range f.Nodes() {
		for _, c := range classes() {
			if classMatches(c, n.Labels) {
				got[c.Name]++
			}
		}
	}
	assert.Equal(t, map[string]int{"load-h100": 2, "load-a100": 2, "load-h200": 2, "load-mi300x": 2, broadClass: 6}, got)
}
