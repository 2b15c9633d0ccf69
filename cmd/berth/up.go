package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/node"
)

func init() {
	register(command{
		Name:    "up",
		Summary: "start a local control plane with the fake GPU fleet, berth's CRDs and webhook; runs until Ctrl-C",
		Run:     runUp,
	})
}

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("berth up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keep := fs.Bool("keep", false, "keep certificates, etcd data and logs after exit")
	timeout := fs.Duration("timeout", 90*time.Second, "how long each process may take to become ready")
	realNode := fs.Bool("real-node", true, "also run a real node (containerd, kubelet, kube-proxy, CoreDNS) where this machine can (root, cgroups, make images); where it cannot, say why and go on with the kwok fleet")
	if err := fs.Parse(args); err != nil {
		return err
	}
	comps, err := components()
	if err != nil {
		return err
	}
	env, err := devenv.Up(ctx, devenv.Options{Components: comps, Timeout: *timeout, KeepRunDir: *keep, RealNode: realNodeMode(*realNode), Log: stderr})
	if err != nil {
		return err
	}
	defer env.Stop()
	printReady(stdout, env)
	return waitForExit(ctx, stderr, env)
}

// printReady tells a person how to use the cluster.
func printReady(w io.Writer, env *devenv.Env) {
	total := time.Duration(0)
	for _, t := range env.Timings {
		if t.Step == "control plane" {
			total = t.Duration
		}
	}
	fmt.Fprintf(w, "\nThe local control plane is ready (%s to start).\n", total.Round(100*time.Millisecond))
	switch {
	case env.Node != nil:
		fmt.Fprintf(w, "A real node %s runs next to the kwok fleet (label and taint %s=%s); %d images loaded.\n", node.Name, node.Label, node.LabelValue, len(env.Node.Images))
	case env.NodeErr != nil:
		fmt.Fprintf(w, "No real node: %v\n", env.NodeErr)
	}
	fmt.Fprintf(w, "  export KUBECONFIG=%s\n  kubectl get nodes -L nvidia.com/gpu.product\n", env.Cluster.KubeconfigPath)
	fmt.Fprintf(w, "Logs are in %s. Press Ctrl-C to stop; everything is removed.\n", env.Cluster.RunDir)
}

// waitForExit blocks until Ctrl-C, or fails when a process of the control
// plane dies, naming it and quoting its log. A berth component that dies
// does not end it: the component is restarted with backoff (the death is
// reported on stderr as it happens), so a person can watch the cluster
// through an outage.
func waitForExit(ctx context.Context, stderr io.Writer, env *devenv.Env) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			printDeaths(stderr, env)
			return nil
		case <-tick.C:
			if p := env.Cluster.Died(); p != nil {
				printDeaths(stderr, env)
				_, exitErr := p.Exited()
				return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.Name, exitErr, p.LogPath, p.Tail(20))
			}
		}
	}
}
