// Package version is the one version of berth: its images' tag, the
// manifests' and the Helm chart's, and what every command reports. The
// number lives in the file VERSION beside this one (read by the Makefile
// too); nothing else may spell it.
package version

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var raw string

// Registry is where berth's images are published; `make push
// REGISTRY=...` publishes them elsewhere, and the manifests' kustomize
// `images:` and the Helm values rewrite the references.
const Registry = "ghcr.io/berthdev"

// Version is berth's version, e.g. "0.1.0" (no "v"); images are tagged with it.
var Version = strings.TrimSpace(raw)

// Image is the reference of one of berth's images at this version:
// Image("berth-webhook") is "ghcr.io/berthdev/berth-webhook:0.1.0".
func Image(name string) string { return Registry + "/" + name + ":" + Version }
