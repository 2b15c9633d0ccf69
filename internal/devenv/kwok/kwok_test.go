package kwok

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStagesAreCompiledIn(t *testing.T) {
	names, err := fs.Glob(Stages(), "*.yaml")
	require.NoError(t, err)
	assert.Subset(t, names, []string{"node-heartbeat.yaml", "node-initialize.yaml", "pod-complete.yaml", "pod-delete.yaml", "pod-ready.yaml"})
	for _, n := range names {
		data, err := fs.ReadFile(Stages(), n)
		require.NoError(t, err)
		assert.Contains(t, string(data), "kind: Stage", n)
	}
}
