package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGCDefault(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)

	setGCDefault(func(string) string { return "" })
	assert.Equal(t, defaultGOGC, debug.SetGCPercent(100), "no GOGC in the environment: the reconciler's default")

	setGCDefault(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	})
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment is the runtime's to apply")
}
