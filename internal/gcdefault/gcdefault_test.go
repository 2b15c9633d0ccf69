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

func TestSetMemoryLimit(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(orig)
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}

	assert.Equal(t, int64(483183819), SetMemoryLimit(env(map[string]string{LimitEnv: "536870912"})), "90 % of 512Mi")
	assert.Equal(t, int64(483183819), debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(orig)
	for name, vars := range map[string]map[string]string{
		"GOMEMLIMIT set": {LimitEnv: "536870912", "GOMEMLIMIT": "300MiB"},
		"no limit":       {},
		"not a number":   {LimitEnv: "512Mi"},
		"zero":           {LimitEnv: "0"},
		"negative":       {LimitEnv: "-5"},
	} {
		assert.Zero(t, SetMemoryLimit(env(vars)), name)
		assert.Equal(t, orig, debug.SetMemoryLimit(-1), name+": the runtime's limit is left alone")
	}
}
