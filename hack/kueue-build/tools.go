//go:build tools

// Package kueuebuild pins Kueue's controller manager (cmd/kueue), which the
// local control plane runs for the Kueue ResourceFlavor sync's e2e tests,
// and the module its CRDs are copied from (see go.mod).
package kueuebuild

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
