// Command berth-reconcile-load measures berth-reconciler against the real
// local control plane (internal/devenv: etcd, kube-apiserver, scheduler,
// controller-manager and kwok nodes on 127.0.0.1), with berth-webhook and
// berth-reconciler running as supervised processes, found next to this
// executable (make build). In one run it reports, as tables on stdout:
//
//  1. Pod creation through the reconciler and the webhook, next to a raw
//     loop with the same client QPS and burst and no webhook. For each N of
//     -groups: one InferenceService of N single-pod groups (a test-only
//     runtime without GPUs, named by the service), from its apply until N
//     pods exist and until all are Running; then N plain pods (no
//     ome.io/inferenceservice label, so the webhook never sees them)
//     created one after another by a client whose rest.Config has the QPS
//     and burst passed to the reconciler as --kube-api-qps and
//     --kube-api-burst. The ratio of creation rates is the result (goal
//     ≥ 0.8×). Each run has its own namespace, deleted and waited for.
//  2. The time from applying -apply-services one-group InferenceServices
//     (server-side apply, what kubectl apply --server-side sends) until all
//     their pods are Running, and each service's apply-to-Running latency.
//  3. The reconciler idle: once -idle-services × -idle-replicas pods exist,
//     are Running, the services are Ready and the reconciler has sent no
//     write for -settle, its CPU seconds (/proc/<pid>/stat), RSS
//     (/proc/<pid>/status) and API writes (berth_reconciler_api_writes_total
//     from its /metrics) over -idle-window. The goal is 0 writes. Every
//     service gets a ClusterIP from the local control plane's Service CIDR
//     (cluster.ServiceCIDR); the report says when the services outnumber it.
//
// A warm-up sends 20 pods down each path before the creation phase.
// The fleet is one pool of CPU-only kwok nodes (110 pods each) sized for
// the largest phase. Only 127.0.0.1 is dialled; every wait is bounded by
// -wait and the whole run by -timeout; Ctrl-C stops the control plane and
// removes its run folder. Progress goes to stderr.
//
//	make build && bin/berth-reconcile-load -groups 100,1000 -apply-services 100 -idle-services 1000 -idle-replicas 10 -idle-window 60s
//	bin/berth-reconcile-load -phases idle -idle-services 250 -idle-replicas 40
//	bin/berth-reconcile-load -groups 20 -apply-services 20 -idle-services 20 -idle-replicas 2 -idle-window 10s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/procstat"
)

// config is the command line.
type config struct {
	groups        []int
	applyServices int
	idleServices  int
	idleReplicas  int
	idleWindow    time.Duration
	settle        time.Duration
	resync        time.Duration
	qps           float64
	burst         int
	wait          time.Duration
	timeout       time.Duration
	phases        []string
	keep          bool
	// heapProfile: where the reconciler's heap profile (in use at the end
	// of the idle window) is written; pprofAddress is the reconciler's
	// --pprof-address, a free port of 127.0.0.1 when heapProfile is set.
	heapProfile, pprofAddress string
}

const (
	phaseCreate = "create"
	phaseApply  = "apply"
	phaseIdle   = "idle"
)

func main() {
	// Debian's etcd 3.4 cannot serve streaming watch-lists; see internal/devenv/cluster.
	os.Setenv(cluster.WatchListEnv, "false")
	// Every applied service carries the webhook's "berth chose runtime ..."
	// warning; thousands of them would bury the progress lines.
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	cfg, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(cfg)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "berth-reconcile-load:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("berth-reconcile-load", flag.ContinueOnError)
	groups := fs.String("groups", "100,1000", "comma-separated group counts of the creation phase")
	phases := fs.String("phases", "create,apply,idle", "phases to run, comma-separated: create, apply, idle")
	fs.IntVar(&cfg.applyServices, "apply-services", 100, "one-group InferenceServices of the apply phase")
	fs.IntVar(&cfg.idleServices, "idle-services", 1000, "InferenceServices of the idle phase")
	fs.IntVar(&cfg.idleReplicas, "idle-replicas", 10, "groups (pods) per InferenceService of the idle phase")
	fs.DurationVar(&cfg.idleWindow, "idle-window", 60*time.Second, "how long the idle reconciler is measured")
	fs.DurationVar(&cfg.settle, "settle", 20*time.Second, "how long the reconciler must send no write before the idle window starts")
	fs.DurationVar(&cfg.resync, "resync", 10*time.Minute, "the reconciler's --resync (informer resync period; its default is 10m)")
	fs.Float64Var(&cfg.qps, "qps", 50, "client QPS of the reconciler (--kube-api-qps) and of the raw loop")
	fs.IntVar(&cfg.burst, "burst", 100, "client burst of the reconciler (--kube-api-burst) and of the raw loop")
	fs.DurationVar(&cfg.wait, "wait", 15*time.Minute, "bound of each wait (pods created, Running, statuses settled, namespace gone)")
	fs.DurationVar(&cfg.timeout, "timeout", 90*time.Minute, "bound of the whole run after the control plane is up")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the run folder (component logs) after exit")
	fs.StringVar(&cfg.heapProfile, "heap-profile", "", "write the reconciler's heap profile (after a GC, at the end of the idle window) to this file, for go tool pprof; runs the reconciler with --pprof-address on a free port of 127.0.0.1")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var err error
	if cfg.groups, err = parseInts(*groups); err != nil {
		return cfg, fmt.Errorf("-groups: %w", err)
	}
	cfg.phases = strings.Split(*phases, ",")
	if cfg.heapProfile != "" {
		if cfg.pprofAddress, err = freeAddress(); err != nil {
			return cfg, fmt.Errorf("-heap-profile: %w", err)
		}
	}
	return cfg, cfg.validate()
}

// validate bounds every count, so a typo cannot ask the machine for a
// million pods.
func (c config) validate() error {
	for _, p := range c.phases {
		if !slices.Contains([]string{phaseCreate, phaseApply, phaseIdle}, p) {
			return fmt.Errorf("-phases: unknown phase %q; use create, apply, idle", p)
		}
	}
	for _, n := range c.groups {
		if n < 1 || n > maxPods {
			return fmt.Errorf("-groups: %d is outside 1..%d", n, maxPods)
		}
	}
	switch {
	case c.applyServices < 1 || c.applyServices > maxServices:
		return fmt.Errorf("-apply-services: %d is outside 1..%d", c.applyServices, maxServices)
	case c.idleServices > maxServices:
		return fmt.Errorf("-idle-services: %d is more than %d", c.idleServices, maxServices)
	case c.idleServices < 1 || c.idleReplicas < 1 || c.idleServices*c.idleReplicas > maxPods:
		return fmt.Errorf("-idle-services × -idle-replicas: %d × %d is outside 1..%d pods", c.idleServices, c.idleReplicas, maxPods)
	case c.qps <= 0 || c.burst < 1:
		return fmt.Errorf("-qps and -burst must be positive")
	case c.idleWindow <= 0 || c.wait <= 0 || c.timeout <= 0 || c.settle < 0 || c.resync <= 0:
		return fmt.Errorf("-idle-window, -wait and -timeout must be positive")
	}
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func (c config) runs(phase string) bool { return slices.Contains(c.phases, phase) }

// run starts the environment, runs the phases and prints the report, also
// when a phase failed (with what was measured until then).
func run(cfg config) error {
	startCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	l, err := start(startCtx, cfg)
	stopSignals()
	if err != nil {
		return err
	}
	defer l.env.Stop()
	release := l.env.Cluster.StopOnSignal() // Ctrl-C: stop everything, exit 130
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()

	rep := &report{cfg: cfg, loadStart: procstat.LoadAvgString(), nodes: l.nodes}
	err = l.phases(ctx, rep)
	rep.loadEnd = procstat.LoadAvgString()
	rep.deaths = l.env.Deaths()
	rep.print(os.Stdout)
	if err != nil {
		return fmt.Errorf("%w (component logs: %s)", err, l.env.Cluster.RunDir)
	}
	return nil
}

func (l *load) phases(ctx context.Context, rep *report) error {
	if l.cfg.runs(phaseCreate) {
		if err := l.warmUp(ctx); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		for _, n := range l.cfg.groups {
			pair, err := l.createPair(ctx, n)
			rep.creates = append(rep.creates, pair...)
			if err != nil {
				return err
			}
		}
	}
	if l.cfg.runs(phaseApply) {
		a, err := l.applyPhase(ctx, l.cfg.applyServices)
		rep.apply = a
		if err != nil {
			return err
		}
	}
	if l.cfg.runs(phaseIdle) {
		idle, err := l.idlePhase(ctx)
		rep.idle = idle
		if err != nil {
			return err
		}
	}
	return nil
}

// progress prints one line on stderr.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
