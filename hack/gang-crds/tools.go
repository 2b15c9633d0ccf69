//go:build tools

// Package gangcrds pins the Go types the gang-scheduling CRDs of the local
// control plane are generated from (see go.mod).
package gangcrds

import (
	_ "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)
