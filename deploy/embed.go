package deploy

import "embed"

// FS holds the manifests `berth up` and `berth demo` apply, compiled into
// the binary so they work outside a checkout: crds/, runtimes/,
// accelerators/, samples/, test-engine/, test-engine-sidecar/, profiles/
// and base/webhooks.yaml, at those paths (each folder's kustomization.yaml
// too; readers skip it).
//
//go:embed crds/*.yaml runtimes/*.yaml accelerators/*.yaml samples/*.yaml base/webhooks.yaml test-engine/*.yaml test-engine-sidecar/*.yaml profiles/*.yaml
var FS embed.FS
