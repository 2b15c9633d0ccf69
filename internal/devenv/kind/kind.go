// Package kind runs the e2e suite's cluster in kind (Kubernetes in Docker)
// through the sigs.k8s.io/kind Go API, for machines with a Docker engine.
// It is opt-in (BERTH_E2E_CLUSTER=kind): the project's CI machines and the
// default path use the host-process control plane of internal/devenv/cluster, and this
// package is only compiled and unit-tested there.
package kind

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/yaml"
)

// DefaultNodeImage is the kind node image of the Kubernetes minor berth
// pins (v1.34, like its client libraries). Override it with
// BERTH_KIND_NODE_IMAGE, e.g. to pin a digest. It was not pulled on the
// project's machines (no Docker engine there).
const DefaultNodeImage = "kindest/node:v1.34.0"

// Options configure a kind cluster.
type Options struct {
	// Name of the kind cluster; default "berth-e2e".
	Name string
	// NodeImage; default BERTH_KIND_NODE_IMAGE or DefaultNodeImage.
	NodeImage string
	// Workers is the number of worker nodes besides the control plane.
	Workers int
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "berth-e2e"
	}
	if o.NodeImage == "" {
		o.NodeImage = os.Getenv("BERTH_KIND_NODE_IMAGE")
	}
	if o.NodeImage == "" {
		o.NodeImage = DefaultNodeImage
	}
	return o
}

// Config is the kind cluster configuration: the apiserver published on
// 127.0.0.1 only (a random port), one control plane and Workers workers.
// The fake GPU fleet is added by kwok afterwards, as on the local path.
func Config(o Options) *v1alpha4.Cluster {
	o = o.withDefaults()
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{APIVersion: "kind.x-k8s.io/v1alpha4", Kind: "Cluster"},
		Name:     o.Name,
		Networking: v1alpha4.Networking{
			APIServerAddress: "127.0.0.1",
			APIServerPort:    0, // a free port, chosen by Docker
		},
		Nodes: []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole, Image: o.NodeImage}},
	}
	for range o.Workers {
		cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{Role: v1alpha4.WorkerRole, Image: o.NodeImage})
	}
	return cfg
}

// Render is Config as the YAML `kind create cluster --config` reads, for a
// person who wants to reproduce the suite's cluster by hand.
func Render(o Options) ([]byte, error) {
	return yaml.Marshal(Config(o))
}

// Available answers nil when a Docker engine responds, else says why the
// kind path cannot run here.
func Available(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("BERTH_E2E_CLUSTER=kind needs a Docker engine, and `docker info` failed (%v): %s",
			err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Create makes the kind cluster, writes its kubeconfig to kubeconfigPath
// and returns a function that deletes it again.
func Create(ctx context.Context, o Options, kubeconfigPath string) (deleteCluster func() error, err error) {
	o = o.withDefaults()
	if err := Available(ctx); err != nil {
		return nil, err
	}
	provider := kindcluster.NewProvider(kindcluster.ProviderWithDocker())
	if err := provider.Create(o.Name,
		kindcluster.CreateWithV1Alpha4Config(Config(o)),
		kindcluster.CreateWithKubeconfigPath(kubeconfigPath),
		kindcluster.CreateWithWaitForReady(3*time.Minute),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false),
	); err != nil {
		return nil, fmt.Errorf("create kind cluster %s (image %s): %w", o.Name, o.NodeImage, err)
	}
	return func() error { return provider.Delete(o.Name, kubeconfigPath) }, nil
}
