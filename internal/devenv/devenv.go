package devenv

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/deploy"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/gang"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/devenv/kwok"
	"github.com/berthdev/berth/internal/devenv/node"
	"github.com/berthdev/berth/internal/devenv/process"
	"github.com/berthdev/berth/internal/fleet"
)

// Options configure Up.
type Options struct {
	// Components run in order once the CRDs are Established and the fleet
	// is Ready, and before Up returns (e.g. Webhook(bin), Reconciler(bin)).
	// None: a bare cluster with berth's CRDs.
	Components []Component
	// Root of a berth checkout, where missing Kubernetes binaries are built
	// with `make deps` (cluster.EnsureBinaries). Empty: the checkout
	// around the working directory, if any; outside one nothing is built.
	Root string
	// Fleet to create; nil: the default fleet (internal/fleet/fleet.yaml).
	Fleet *fleet.Fleet
	// Timeout for each readiness wait. Default 90s.
	Timeout time.Duration
	// KeepRunDir keeps certificates, data and logs after Stop.
	KeepRunDir bool
	// Log receives progress lines. Default io.Discard.
	Log io.Writer
	// Events receives the deaths and restarts of components, for as long
	// as the environment runs. Default: Log.
	Events io.Writer
	// Kubeconfig of a cluster started elsewhere (kind): Up attaches to it
	// instead of starting a control plane, and runs only kwok here.
	Kubeconfig string
	// OnStop runs when the environment stops (kind: delete the cluster).
	OnStop func() error
	// RealNode: also run a real node (package node) next to the kwok
	// fleet, where this machine can. Default off.
	RealNode RealNode
	// SecondNode: once the real node runs, also a second one in its own
	// network namespace (node.StartSecond), so hostNetwork pods get
	// separate hosts. Where it cannot start, Env.SecondNodeErr says why and
	// the first node carries on alone.
	SecondNode bool
	// APIServerProfiling serves the local apiserver's /debug/pprof to its
	// administrators (cluster.Options.Profiling); off by default. Ignored
	// with Kubeconfig.
	APIServerProfiling bool
}

// Env is a running local environment.
type Env struct {
	// Root is the berth checkout the environment was started from, ""
	// when outside one (an installed berth).
	Root     string
	Binaries cluster.Binaries
	Cluster  *cluster.Cluster
	Kube     kubernetes.Interface
	Applier  *install.Applier
	Fleet    *fleet.Fleet
	CRDs     []string
	// CRDErr lists the CRDs the apiserver rejected or that never became
	// Established. Up carries on without them so the rest still works; the
	// e2e suite fails on it and the CLI prints it.
	CRDErr error
	// GangCRDs are the gang-scheduling CRDs installed next to berth's
	// (package gang: the Coscheduling and Volcano PodGroups, ElasticQuota).
	GangCRDs []string
	// Components that were started, in order.
	Components []Component
	// Timings of each step, including those of the cluster.
	Timings []cluster.Timing
	// Node is the real node, nil when none runs; NodeErr says why not
	// when one was asked for (Options.RealNode).
	Node    *node.Node
	NodeErr error
	// SecondNode is the second real node (Options.SecondNode), nil when
	// none runs; SecondNodeErr says why not.
	SecondNode    *node.Node
	SecondNodeErr error
}

// Up starts everything. On error all that was started is stopped, and the
// error says which step failed and why.
func Up(ctx context.Context, opts Options) (env *Env, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	env = &Env{Root: opts.Root, Fleet: opts.Fleet}
	t := time.Now()
	if env.Binaries, err = cluster.EnsureBinaries(ctx, opts.Root, opts.Log); err != nil {
		return nil, err
	}
	env.Timings = append(env.Timings, cluster.Timing{Step: "binaries", Duration: time.Since(t)})
	nodeIP := ""
	if opts.RealNode != RealNodeOff {
		if env.NodeErr = env.nodePreflight(opts); env.NodeErr != nil {
			noNode(opts.Log, env.NodeErr)
		} else {
			nodeIP = node.GatewayIP
		}
	}
	c, err := startCluster(ctx, opts, env.Binaries, nodeIP)
	if err != nil {
		return nil, fmt.Errorf("start the local control plane: %w", err)
	}
	env.Cluster = c
	env.Timings = append(env.Timings, c.Timings...)
	started := env
	defer func() { // "return nil, err" clears env: stop through started
		if err != nil {
			started.Stop()
		}
	}()
	if err = env.install(ctx, opts); err != nil {
		return nil, err
	}
	if nodeIP != "" {
		env.startNode(ctx, opts)
	}
	for _, comp := range opts.Components {
		t = time.Now()
		if err = comp.Start(ctx, env); err != nil {
			return nil, fmt.Errorf("start berth component %s: %w", comp.Name(), err)
		}
		env.Components = append(env.Components, comp)
		env.step(opts.Log, comp.Name(), t)
	}
	return env, nil
}

func (o Options) withDefaults() (Options, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Events == nil {
		o.Events = o.Log
	}
	if o.Timeout == 0 {
		o.Timeout = 90 * time.Second
	}
	if o.Root == "" {
		o.Root, _ = cluster.RepoRoot(".") // outside a checkout: stays empty
	}
	if o.Fleet == nil {
		f, err := fleet.Default()
		if err != nil {
			return o, err
		}
		o.Fleet = f
	}
	for i, c := range o.Components {
		if c == nil {
			return o, fmt.Errorf("devenv.Options.Components[%d] is nil; pass a component such as devenv.Webhook(bin)", i)
		}
	}
	return o, nil
}

// startCluster starts the control plane (or attaches to opts.Kubeconfig).
func startCluster(ctx context.Context, opts Options, bins cluster.Binaries, nodeIP string) (*cluster.Cluster, error) {
	copts := cluster.Options{
		Binaries:   bins,
		Stages:     kwok.Stages(),
		KeepRunDir: opts.KeepRunDir,
		Timeout:    opts.Timeout,
		Log:        opts.Log,
		Events:     opts.Events,
		OnStop:     opts.OnStop,
		NodeIP:     nodeIP,
		Profiling:  opts.APIServerProfiling,
	}
	if opts.Kubeconfig != "" {
		return cluster.Attach(ctx, opts.Kubeconfig, copts)
	}
	c, err := cluster.Start(ctx, copts)
	// Free ports are chosen, released, then bound by the processes: on a
	// machine running several suites another process can take one in
	// between. That is worth one more try on new ports, not a failure.
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		fmt.Fprintf(opts.Log, "berth: a port was taken before the control plane bound it; starting again on new ports\n")
		c, err = cluster.Start(ctx, copts)
	}
	return c, err
}

// install makes the clients, installs the CRDs and creates the fleet.
func (env *Env) install(ctx context.Context, opts Options) (err error) {
	if env.Kube, err = env.Cluster.Clientset(); err != nil {
		return err
	}
	if env.Applier, err = install.NewApplier(env.Cluster.RESTConfig()); err != nil {
		return err
	}
	t := time.Now()
	crds, err := Manifests("crds")
	if err != nil {
		return err
	}
	env.CRDs, env.CRDErr = env.Applier.InstallCRDs(ctx, crds, opts.Timeout)
	if env.CRDErr != nil {
		fmt.Fprintf(opts.Log, "berth: WARNING: some CRDs are not installed:\n%v\n", env.CRDErr)
	}
	if len(env.CRDs) == 0 {
		return fmt.Errorf("install CRDs: none installed: %w", env.CRDErr)
	}
	env.step(opts.Log, "CRDs Established", t)
	if err = env.installGang(ctx, opts); err != nil {
		return err
	}

	t = time.Now()
	if _, err = fleet.Apply(ctx, env.Kube, opts.Fleet, opts.Timeout); err != nil {
		return fmt.Errorf("create the fake GPU fleet: %w", err)
	}
	env.step(opts.Log, "fleet Ready", t)
	return nil
}

// installGang installs the gang-scheduling CRDs and, on the local control
// plane (not an attached kind cluster), starts the second scheduler and
// its PodGroup controller, which need those CRDs served.
func (env *Env) installGang(ctx context.Context, opts Options) (err error) {
	t := time.Now()
	crds, err := gang.CRDs()
	if err != nil {
		return err
	}
	if env.GangCRDs, err = env.Applier.InstallCRDs(ctx, crds, opts.Timeout); err != nil {
		return fmt.Errorf("install the gang-scheduling CRDs (internal/devenv/gang/crds): %w", err)
	}
	env.step(opts.Log, "gang CRDs Established", t)
	if opts.Kubeconfig != "" {
		return nil
	}
	if err = env.Cluster.StartGangScheduler(ctx); err != nil {
		return fmt.Errorf("start the gang scheduler (scheduler-plugins %s): %w", cluster.SchedulerPluginsVersion, err)
	}
	return nil
}

func (env *Env) step(log io.Writer, name string, since time.Time) {
	d := time.Since(since)
	env.Timings = append(env.Timings, cluster.Timing{Step: name, Duration: d})
	fmt.Fprintf(log, "berth: %-24s ready in %s\n", name, d.Round(10*time.Millisecond))
}

// Stop tears everything down: the real nodes first, the second before the
// first (their pods, processes and network), then the components and the
// control plane.
func (env *Env) Stop() {
	if env == nil {
		return
	}
	if env.SecondNode != nil {
		env.SecondNode.Stop()
	}
	if env.Node != nil {
		env.Node.Stop()
	}
	if env.Cluster != nil {
		env.Cluster.Stop()
	}
}

// ComponentNames lists the started components, in start order.
func (env *Env) ComponentNames() []string {
	names := make([]string, len(env.Components))
	for i, c := range env.Components {
		names[i] = c.Name()
	}
	return names
}

// Deaths lists every death of a component since the start, oldest first
// (each was also reported on Options.Events and followed by a restart).
func (env *Env) Deaths() []process.Death { return env.Cluster.Deaths() }

// Path joins elements onto Root, the checkout (for tests, which run in
// one; the product reads deploy/ through Manifests).
func (env *Env) Path(elem ...string) string {
	return filepath.Join(append([]string{env.Root}, elem...)...)
}

// Manifests reads the objects of a file or folder of deploy/ compiled into
// the binary (deploy.FS): "crds", "runtimes", "accelerators", "samples",
// "base/webhooks.yaml". Sources read "deploy/<file>".
func Manifests(name string) ([]install.Object, error) {
	return install.ReadObjectsFS(deploy.FS, name, "deploy")
}
