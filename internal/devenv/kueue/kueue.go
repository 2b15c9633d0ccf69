// Package kueue is what the local control plane (internal/devenv) offers to
// run Kueue (sigs.k8s.io/kueue) for the Kueue ResourceFlavor sync's e2e
// tests: Kueue's own CustomResourceDefinitions, compiled in from crds/, and
// the names its controller manager expects in the cluster.
//
// crds/ is generated (`make generate-kueue-crds`, part of `make generate`,
// checked by `make verify`): the CRDs of `kubectl kustomize` of Kueue's
// config/default at the version the Makefile pins (KUEUE_VERSION), as Kueue
// installs them — ClusterQueue, LocalQueue, Workload, Cohort and
// MultiKueueCluster with their conversion webhook (Service
// kueue-system/kueue-webhook-service), the others without one. Never edit
// it by hand.
//
// cluster.Cluster.StartKueue runs the controller manager next to a local
// control plane once these CRDs are Established.
package kueue

import (
	"embed"

	"github.com/berthdev/berth/internal/devenv/install"
)

// Version is the Kueue release whose CRDs are in crds/ and whose
// controller manager `make deps` builds into bin/kueue-<Version>/kueue: the
// Makefile's KUEUE_VERSION.
const Version = "v0.17.0"

// The namespace, webhook Service and webhook Secret Kueue's own install
// (config/default) uses. The controller manager keeps its webhook
// certificate in the Secret (internalCertManagement) and writes the CA into
// the conversion webhooks of the CRDs, which name the Service.
const (
	Namespace          = "kueue-system"
	WebhookServiceName = "kueue-webhook-service"
	WebhookSecretName  = "kueue-webhook-server-cert"
)

//go:embed crds/*.yaml
var crds embed.FS

// CRDs returns the CustomResourceDefinitions of crds/, sorted by file name.
func CRDs() ([]install.Object, error) {
	return install.ReadObjectsFS(crds, "crds", "internal/devenv/kueue")
}
