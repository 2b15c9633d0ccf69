// Package kwok holds the Stage configurations that make kwok fake node
// heartbeats and pod lifecycles (a pod bound to a fake node becomes Running
// and Ready at once). They are compiled in, so the local control plane runs
// from an installed binary; cluster.Options.Stages takes them.
package kwok

import (
	"embed"
	"io/fs"
)

//go:embed stages/*.yaml
var stages embed.FS

// Stages returns the Stage files (*.yaml at the root of the FS).
func Stages() fs.FS {
	sub, err := fs.Sub(stages, "stages")
	if err != nil { // only for an invalid path, and "stages" is valid
		return stages
	}
	return sub
}
