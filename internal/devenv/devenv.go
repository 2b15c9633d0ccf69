// Package devenv composes the local environment the e2e suite, `berth up`
// and `berth demo` share: binaries built if missing, the control plane
// started, CRDs Established, the fake GPU fleet Ready, and then the berth
// components registered as Components (the seam for the webhook and the
// reconciler), before any deploy/ object is applied.
package devenv

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/fleet"
	"github.com/berthdev/berth/internal/devenv/install"
)

// Component starts one berth component next to the cluster (for example:
// build and run berth-webhook with env.Cluster.StartProcess, then
// install.RegisterWebhooks). Components run in order after the CRDs and the
// fleet are in place and before Up returns, so every object applied later
// goes through them. Whatever a component starts through the cluster is
// stopped with it.
type Component struct {
	Name  string
	Start func(ctx context.Context, env *Env) error
}

var registered []Component

// Register adds a component to every environment started afterwards. Call
// it from an init function of the package that owns the component; the e2e
// suite and the CLI import that package.
func Register(c Component) { registered = append(registered, c) }

// Options configure Up.
type Options struct {
	// Root of the berth checkout; empty: found from the working directory.
	Root string
	// Fleet to create; nil: the default fleet (internal/devenv/fleet/fleet.yaml).
	Fleet *fleet.Fleet
	// Timeout for each readiness wait. Default 90s.
	Timeout time.Duration
	// KeepRunDir keeps certificates, data and logs after Stop.
	KeepRunDir bool
	// Log receives progress lines. Default io.Discard.
	Log io.Writer
	// Kubeconfig of a cluster started elsewhere (kind): Up attaches to it
	// instead of starting a control plane, and runs only kwok here.
	Kubeconfig string
	// OnStop runs when the environment stops (kind: delete the cluster).
	OnStop func() error
}

// Env is a running local environment.
type Env struct {
	Root    string
	Cluster *cluster.Cluster
	Kube    kubernetes.Interface
	Applier *install.Applier
	Fleet   *fleet.Fleet
	CRDs    []string
	// CRDErr lists the CRDs the apiserver rejected or that never became
	// Established. Up carries on without them so the rest still works; the
	// e2e suite fails on it and the CLI prints it.
	CRDErr error
	// Components that were started, in order.
	Components []string
	// Timings of each step, including those of the cluster.
	Timings []cluster.Timing
}

// Up starts everything. On error all that was started is stopped, and the
// error says which step failed and why.
func Up(ctx context.Context, opts Options) (env *Env, err error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Timeout == 0 {
		opts.Timeout = 90 * time.Second
	}
	if opts.Root == "" {
		if opts.Root, err = cluster.RepoRoot("."); err != nil {
			return nil, err
		}
	}
	if opts.Fleet == nil {
		if opts.Fleet, err = fleet.Default(); err != nil {
			return nil, err
		}
	}
	env = &Env{Root: opts.Root, Fleet: opts.Fleet}
	t := time.Now()
	bins, err := cluster.EnsureBinaries(ctx, opts.Root, opts.Log)
	if err != nil {
		return nil, err
	}
	env.Timings = append(env.Timings, cluster.Timing{Step: "binaries", Duration: time.Since(t)})

	copts := cluster.Options{
		Binaries:   bins,
		StageDir:   filepath.Join(opts.Root, "internal", "devenv", "kwok", "stages"),
		KeepRunDir: opts.KeepRunDir,
		Timeout:    opts.Timeout,
		Log:        opts.Log,
		OnStop:     opts.OnStop,
	}
	var c *cluster.Cluster
	if opts.Kubeconfig != "" {
		c, err = cluster.Attach(ctx, opts.Kubeconfig, copts)
	} else {
		c, err = cluster.Start(ctx, copts)
		// Free ports are chosen, released, then bound by the processes: on a
		// machine running several suites another process can take one in
		// between. That is worth one more try on new ports, not a failure.
		if err != nil && strings.Contains(err.Error(), "address already in use") {
			fmt.Fprintf(opts.Log, "berth: a port was taken before the control plane bound it; starting again on new ports\n")
			c, err = cluster.Start(ctx, copts)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("start the local control plane: %w", err)
	}
	env.Cluster = c
	env.Timings = append(env.Timings, c.Timings...)
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if env.Kube, err = c.Clientset(); err != nil {
		return nil, err
	}
	if env.Applier, err = install.NewApplier(c.RESTConfig()); err != nil {
		return nil, err
	}

	t = time.Now()
	env.CRDs, env.CRDErr = env.Applier.InstallCRDs(ctx, filepath.Join(opts.Root, "deploy", "crds"), opts.Timeout)
	if env.CRDErr != nil {
		fmt.Fprintf(opts.Log, "berth: WARNING: some CRDs are not installed:\n%v\n", env.CRDErr)
	}
	if len(env.CRDs) == 0 {
		return nil, fmt.Errorf("install CRDs: none installed: %w", env.CRDErr)
	}
	env.step(opts.Log, "CRDs Established", t)

	t = time.Now()
	if _, err = fleet.Apply(ctx, env.Kube, opts.Fleet, opts.Timeout); err != nil {
		return nil, fmt.Errorf("create the fake GPU fleet: %w", err)
	}
	env.step(opts.Log, "fleet Ready", t)

	for _, comp := range registered {
		t = time.Now()
		if err = comp.Start(ctx, env); err != nil {
			return nil, fmt.Errorf("start berth component %s: %w", comp.Name, err)
		}
		env.Components = append(env.Components, comp.Name)
		env.step(opts.Log, comp.Name, t)
	}
	return env, nil
}

func (env *Env) step(log io.Writer, name string, since time.Time) {
	d := time.Since(since)
	env.Timings = append(env.Timings, cluster.Timing{Step: name, Duration: d})
	fmt.Fprintf(log, "berth: %-24s ready in %s\n", name, d.Round(10*time.Millisecond))
}

// Stop tears everything down.
func (env *Env) Stop() {
	if env != nil && env.Cluster != nil {
		env.Cluster.Stop()
	}
}

// Path joins elements onto the repository root.
func (env *Env) Path(elem ...string) string {
	return filepath.Join(append([]string{env.Root}, elem...)...)
}
