// Command berth-accelerator-load measures berth-reconciler's
// AcceleratorClass status controller against the real local control plane
// (internal/devenv: etcd, kube-apiserver, scheduler, controller-manager and
// kwok nodes on 127.0.0.1), with berth-reconciler found next to this
// executable (make build) and run with --accelerator-status-interval
// -interval.
//
// The fleet is -nodes kwok nodes in four GPU pools (H100, A100, H200 with
// 8 nvidia.com/gpu each, MI300X with 8 amd.com/gpu), one AcceleratorClass
// per pool plus one whose discovery matches every NVIDIA node (its
// SelectorTooBroad condition is True). -pods pods of 1 GPU are bound to
// the nodes (spec.nodeName: no scheduler in the way) and kwok runs them.
// For -window, -churn pods a second are deleted and replaced on another
// node, while a watch counts every update of every class: those are the
// controller's status writes. The report gives writes per class per minute
// against the bound (one per interval: window/interval + 1), then, with
// the churn stopped, checks each class's status against a count of the
// API's pods and nodes. It exits 1 when a class exceeds the bound or a
// status disagrees.
//
//	make build && bin/berth-accelerator-load -nodes 2000 -pods 5000 -churn 20 -window 60s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/devenv/cluster"
)

type config struct {
	nodes, pods int
	churn       float64
	window      time.Duration
	interval    time.Duration
	settle      time.Duration
	timeout     time.Duration
	keep        bool
}

func main() {
	os.Setenv(cluster.WatchListEnv, "false")
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	cfg, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(cfg)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "berth-accelerator-load:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("berth-accelerator-load", flag.ContinueOnError)
	fs.IntVar(&c.nodes, "nodes", 2000, "kwok GPU nodes, in four pools")
	fs.IntVar(&c.pods, "pods", 5000, "pods of 1 GPU bound to the nodes")
	fs.Float64Var(&c.churn, "churn", 20, "pods replaced per second during the window")
	fs.DurationVar(&c.window, "window", 60*time.Second, "how long writes are counted under churn")
	fs.DurationVar(&c.interval, "interval", 10*time.Second, "berth-reconciler --accelerator-status-interval")
	fs.DurationVar(&c.settle, "settle", 0, "how long the final statuses may take to agree with the API (default 3 × interval + 10s)")
	fs.DurationVar(&c.timeout, "timeout", 45*time.Minute, "bound of the whole run")
	fs.BoolVar(&c.keep, "keep", false, "keep the run folder (component logs) after exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch {
	case c.nodes < 4 || c.nodes > 10000:
		return c, fmt.Errorf("-nodes: %d is outside 4..10000", c.nodes)
	case c.pods < 0 || c.pods > c.nodes*8 || c.pods > 30000:
		return c, fmt.Errorf("-pods: %d is outside 0..min(8 × nodes, 30000)", c.pods)
	case c.churn < 0 || c.churn > 500:
		return c, fmt.Errorf("-churn: %g is outside 0..500", c.churn)
	case c.window <= 0 || c.interval <= 0 || c.timeout <= 0:
		return c, fmt.Errorf("-window, -interval and -timeout must be positive")
	}
	if c.settle <= 0 {
		c.settle = 3*c.interval + 10*time.Second
	}
	return c, nil
}

func run(cfg config) error {
	startCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	l, err := start(startCtx, cfg)
	stopSignals()
	if err != nil {
		return err
	}
	defer l.env.Stop()
	release := l.env.Cluster.StopOnSignal()
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()

	rep, err := l.measure(ctx)
	if rep != nil {
		rep.print(os.Stdout)
	}
	if err != nil {
		return fmt.Errorf("%w (component logs: %s)", err, l.env.Cluster.RunDir)
	}
	if bad := rep.failures(); len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

func itoa(n int) string { return strconv.Itoa(n) }
