package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPluginDispatch: `kubectl berth` offers berth's explain, render and
// lint with their help, and says when a command does not exist.
func TestPluginDispatch(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), nil, &stdout, &stderr))
	for _, c := range []string{"explain ", "render ", "lint "} {
		assert.Contains(t, stderr.String(), c)
	}
	stderr.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"explain", "-h"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "Examples:")
	stderr.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"nope"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `kubectl berth: unknown command "nope"`)
	stderr.Reset()
	assert.Equal(t, 1, run(context.Background(), []string{"lint", "../berth/testdata/lint/conflict"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "mistral-a.yaml:15")
}
