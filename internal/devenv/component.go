package devenv

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/process"
)

// Component is one berth process that runs next to the control plane.
// Pass components to Up in Options.Components; Up starts them in order
// once the CRDs are Established and the fleet is Ready. Start must return
// only once the component serves (every object applied afterwards goes
// through it), and must run its processes through env.Cluster.Supervise
// so they are restarted when they die and stopped with the environment.
// A component value serves one environment: Start fills in its fields.
type Component interface {
	// Name names the component in progress lines, errors and its log file.
	Name() string
	Start(ctx context.Context, env *Env) error
}

// ProcessComponent runs a berth binary that follows the component
// contract, supervised (restarted with backoff when it dies):
//
//   - it is started as `<Bin> --kubeconfig <admin kubeconfig>
//     --probe-listen 127.0.0.1:<port> <Args...>`;
//   - it answers GET http://127.0.0.1:<port>/readyz with 200 once it
//     serves; Start returns then.
//
// berth-reconciler follows it (Reconciler); the webhook builds on it.
type ProcessComponent struct {
	name string
	// Bin is the executable (see FindComponent); Args come after the
	// contract's flags.
	Bin  string
	Args []string
	// ProbePort for --probe-listen; 0: a free port chosen by Start.
	ProbePort int

	// Set by Start.
	// ProbeURL is http://127.0.0.1:<port>, serving /readyz (and, by
	// berth's convention, /healthz and /metrics).
	ProbeURL string
	// Process is the supervised process: Kill, Restarts, Deaths, LogPath.
	Process *process.Supervised
}

// Process returns a component that runs bin under the component contract
// (see ProcessComponent) with args after the contract's flags.
func Process(name, bin string, args ...string) *ProcessComponent {
	return &ProcessComponent{name: name, Bin: bin, Args: args}
}

// Reconciler is berth-reconciler (cmd/berth-reconciler) as a component:
// bin is its path (FindComponent("berth-reconciler")), args its own flags.
func Reconciler(bin string, args ...string) *ProcessComponent {
	return Process("berth-reconciler", bin, args...)
}

// Name implements Component.
func (c *ProcessComponent) Name() string { return c.name }

// Start implements Component.
func (c *ProcessComponent) Start(ctx context.Context, env *Env) error {
	if c.Bin == "" {
		return fmt.Errorf("%s: no binary given; build it with `make build` and pass its path (devenv.FindComponent(%q))", c.name, c.name)
	}
	if c.ProbePort == 0 {
		ports, err := cluster.FreePorts(1)
		if err != nil {
			return err
		}
		c.ProbePort = ports[0]
	}
	probe := "127.0.0.1:" + strconv.Itoa(c.ProbePort)
	c.ProbeURL = "http://" + probe
	args := append([]string{"--kubeconfig", env.Cluster.KubeconfigPath, "--probe-listen", probe}, c.Args...)
	ready := process.HTTPReady(&http.Client{Timeout: 2 * time.Second}, c.ProbeURL+"/readyz", "")
	p, err := env.Cluster.Supervise(ctx, c.name, c.Bin, args, ready)
	if err != nil {
		return err
	}
	c.Process = p
	return nil
}
