package gcdefault

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSet(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)

	assert.True(t, Set(37, func(string) string { return "" }))
	assert.Equal(t, 37, debug.SetGCPercent(100), "no GOGC in the environment: the binary's default")

	assert.False(t, Set(37, func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	}))
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment is the runtime's to apply")
}
