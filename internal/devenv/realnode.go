package devenv

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/node"
	"github.com/berthdev/berth/version"
)

// CoreDNSVersion must match the Makefile's COREDNS_VERSION: `make deps`
// builds CoreDNS into bin/coredns-<version>/.
const CoreDNSVersion = "v1.15.0"

// PauseImage is the sandbox image of the real node, built by `make images`.
var PauseImage = version.Image("berth-pause")

// RealNode says whether Up starts a real node next to the kwok fleet.
type RealNode string

const (
	// RealNodeOff: the kwok fleet alone (the default).
	RealNodeOff RealNode = ""
	// RealNodeAuto: a real node where this machine can run one; where it
	// cannot, Up says why (Env.NodeErr, and the log) and carries on.
	RealNodeAuto RealNode = "auto"
)

// nodeBinaries are the real node's executables: kubelet and kube-proxy
// next to the control plane's binaries, CoreDNS in the folder `make deps`
// builds it into (or $PATH), the rest from the system.
func nodeBinaries(bins cluster.Binaries) node.Binaries {
	k8s := filepath.Dir(bins.APIServer)
	coredns := filepath.Join(filepath.Dir(k8s), "coredns-"+CoreDNSVersion, "coredns")
	if p, err := exec.LookPath(coredns); err != nil || p == "" {
		if p, err := exec.LookPath("coredns"); err == nil {
			coredns = p
		}
	}
	return node.FindBinaries(node.Binaries{
		Kubelet:   filepath.Join(k8s, "kubelet"),
		KubeProxy: filepath.Join(k8s, "kube-proxy"),
		CoreDNS:   coredns,
	})
}

// imageTarballs are the tarballs `make images` wrote into root/bin/images.
func imageTarballs(root string) []string {
	if root == "" {
		return nil
	}
	tars, _ := filepath.Glob(filepath.Join(root, "bin", "images", "*.tar"))
	sort.Strings(tars)
	return tars
}

// nodePreflight decides, before the control plane starts, whether a real
// node will run: nil when it can, else why not (printed, not fatal).
func (env *Env) nodePreflight(opts Options) error {
	if opts.RealNode == RealNodeOff {
		return nil
	}
	if opts.Kubeconfig != "" {
		return fmt.Errorf("attached to another cluster (kind): its nodes are real already")
	}
	return node.Preflight(nodeBinaries(env.Binaries), imageTarballs(env.Root), PauseImage)
}

// startNode starts the real node; on failure it says why on log and the
// environment carries on with the kwok fleet alone.
func (env *Env) startNode(ctx context.Context, opts Options) {
	creds := env.Cluster.NodeCredentials()
	n, err := node.Start(ctx, node.Options{
		Binaries: nodeBinaries(env.Binaries),
		Credentials: node.Credentials{APIServerURL: creds.APIServerURL, CAFile: creds.CAFile, CAPEM: creds.CAPEM,
			KubeletToken: creds.KubeletToken, ProxyToken: creds.ProxyToken, CoreDNSToken: creds.CoreDNSToken},
		Kube:        env.Kube,
		RunDir:      env.Cluster.RunDir,
		Images:      imageTarballs(env.Root),
		PauseImage:  PauseImage,
		ServiceCIDR: cluster.ServiceCIDR,
		Timeout:     opts.Timeout,
		Log:         opts.Log,
	})
	if err != nil {
		env.NodeErr = err
		if opts.SecondNode {
			env.SecondNodeErr = fmt.Errorf("the first real node did not start: %w", err)
		}
		noNode(opts.Log, err)
		return
	}
	env.Node = n
	// Whoever stops the cluster (Env.Stop, Ctrl-C through
	// Cluster.StopOnSignal) stops the node first: its containers would
	// otherwise outlive it.
	env.Cluster.StopFirst(n.Stop)
	for _, t := range n.Timings {
		env.Timings = append(env.Timings, cluster.Timing{Step: t.Step, Duration: t.Duration})
	}
	if opts.SecondNode {
		env.startSecondNode(ctx, opts)
	}
}

// startSecondNode starts the second real node; on failure it says why on
// log and the first node carries on alone.
func (env *Env) startSecondNode(ctx context.Context, opts Options) {
	second, err := env.Node.StartSecond(ctx)
	if err != nil {
		env.SecondNodeErr = err
		fmt.Fprintf(opts.Log, "berth: no second real node: %v\nberth: carrying on with one real node\n", err)
		return
	}
	env.SecondNode = second
	env.Cluster.StopFirst(second.Stop) // registered after the first node's: stops before it
	for _, t := range second.Timings {
		env.Timings = append(env.Timings, cluster.Timing{Step: t.Step, Duration: t.Duration})
	}
}

func noNode(log io.Writer, why error) {
	fmt.Fprintf(log, "berth: no real node: %v\nberth: carrying on with the kwok fleet alone\n", why)
}
