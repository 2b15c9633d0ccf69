package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/internal/devenv/process"
)

// The real node's name, network and placement. They are fixed: one real
// node per machine (see Lock).
const (
	// Name is the node's name (the kubelet's identity is system:node:Name).
	Name = "berth-node"
	// Bridge is the Linux bridge the pods' veths join.
	Bridge = "berth0"
	// PodCIDR is the pod network; GatewayIP, its first address, is the
	// host's address on the bridge: the node's InternalIP, where pods reach
	// the apiserver and CoreDNS.
	PodCIDR   = "10.244.0.0/24"
	GatewayIP = "10.244.0.1"
	// ClusterDomain is the DNS domain CoreDNS serves.
	ClusterDomain = "cluster.local"
	// Label marks the node; Taint keeps pods that do not tolerate it away.
	Label      = "node.berth.dev/real"
	LabelValue = "true"
)

// The second real node (Node.StartSecond): a host of its own in the
// network namespace SecondNetns, joined to the host by a veth pair
// (SecondVeth on the host with SecondHostIP, eth0 in the namespace with
// SecondIP, its InternalIP), its own bridge and pod network. It carries
// Label and its taint like the first, and SecondTaint too: pods placed with
// Placement stay on the first node; PlacementAny reaches both.
const (
	SecondName      = "berth-node-2"
	SecondNetns     = "berth-n2"
	SecondVeth      = "berth-n2"
	SecondHostIP    = "10.245.0.1"
	SecondIP        = "10.245.0.2"
	SecondBridge    = "berth1"
	SecondPodCIDR   = "10.244.1.0/24"
	SecondGatewayIP = "10.244.1.1"
	SecondTaint     = "node.berth.dev/second"
	// SecondCgroupRoot is the second kubelet's cgroup root: two kubelets on
	// one cgroup v1 host must not share /kubepods.
	SecondCgroupRoot = "/berth-n2"
)

// layout is one node's identity and network.
type layout struct {
	name, bridge, podCIDR, gateway string
	nodeIP                         string
	netns                          string // "": the host's network namespace
	cgroupRoot                     string // "": the kubelet's default, /
	taints                         []string
}

var (
	firstLayout  = layout{name: Name, bridge: Bridge, podCIDR: PodCIDR, gateway: GatewayIP, nodeIP: GatewayIP}
	secondLayout = layout{name: SecondName, bridge: SecondBridge, podCIDR: SecondPodCIDR, gateway: SecondGatewayIP,
		nodeIP: SecondIP, netns: SecondNetns, cgroupRoot: SecondCgroupRoot, taints: []string{Label, SecondTaint}}
)

// Name is the node's name.
func (n *Node) Name() string { return n.lay.name }

// IP is the node's InternalIP: where hostNetwork pods on it listen.
func (n *Node) IP() string { return n.lay.nodeIP }

// Binaries are the executables of the real node.
type Binaries struct {
	Kubelet, KubeProxy, CoreDNS string // built by `make deps`
	Containerd, Ctr, Runc       string // Debian's containerd and runc
	CNIDir                      string // the CNI plugins (Debian: /usr/lib/cni)
	IP, IPTables                string // iproute2, iptables
	Nsenter                     string // util-linux: the second node's processes enter its network namespace
}

// Credentials are what the node's processes authenticate to the apiserver
// with (cluster.Cluster.NodeCredentials).
type Credentials struct {
	APIServerURL string
	CAFile       string
	CAPEM        []byte
	KubeletToken string
	ProxyToken   string
	CoreDNSToken string
}

// Options configure Start.
type Options struct {
	Binaries    Binaries
	Credentials Credentials
	// Kube is an admin client: Start waits for the node through it and
	// gives CoreDNS its ClusterRole.
	Kube kubernetes.Interface
	// RunDir receives configuration, state and logs (under RunDir/node).
	RunDir string
	// Images are docker-archive tarballs (`make images`) loaded into
	// containerd; PauseImage, the sandbox image, must be among them.
	Images     []string
	PauseImage string
	// ServiceCIDR is the cluster's Service range (kube-proxy, the
	// unreachable route).
	ServiceCIDR string
	// Timeout for each process to become ready. Default 90s.
	Timeout time.Duration
	// Log receives one line per step.
	Log io.Writer
}

// Node is a running real node.
type Node struct {
	// Dir holds everything the node wrote (RunDir/node).
	Dir string
	// Images lists the image references loaded into containerd.
	Images []string
	// Timings of each step, in order.
	Timings []Timing

	lay      layout
	opts     Options
	mu       sync.Mutex
	procs    map[string]*process.Process
	order    []string
	lock     *os.File
	rec      *os.File // the lock file this node's state is recorded in
	stopOnce sync.Once
	socket   string // containerd's
	stateDir string // under /run, removed by Stop
}

// Timing is how long one step of Start took.
type Timing struct {
	Step     string
	Duration time.Duration
}

// Start brings the node up: network, containerd and its images, kubelet
// (until the Node is Ready), kube-proxy and CoreDNS. On error everything
// started is stopped and undone, and the error names the step.
func Start(ctx context.Context, opts Options) (n *Node, err error) {
	if opts.Timeout == 0 {
		opts.Timeout = 90 * time.Second
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Kube == nil || opts.RunDir == "" || opts.PauseImage == "" || opts.ServiceCIDR == "" {
		return nil, errors.New("node.Start: Kube, RunDir, PauseImage and ServiceCIDR are required")
	}
	n = &Node{Dir: filepath.Join(opts.RunDir, "node"), lay: firstLayout, opts: opts, procs: map[string]*process.Process{}}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return nil, err
	}
	var prev leftovers
	if n.lock, prev, err = Lock(); err != nil {
		return nil, err
	}
	n.rec = n.lock
	started := n
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	n.removeLeftovers(ctx, prev)
	if err := n.bringUp(ctx, "real node", []step{
		{"node network", n.startNetwork},
		{"containerd", n.startContainerd},
		{"node images", n.loadImages},
		{"kubelet", n.startKubelet},
		{"kube-proxy", n.startProxy},
		{"coredns", n.startCoreDNS},
	}); err != nil {
		return nil, err
	}
	return n, nil
}

// StartSecond brings up the second real node (see SecondNetns) next to
// the running first node n, whose lock and CoreDNS it shares: network
// namespace and veth, containerd, images, kubelet (until Ready) and
// kube-proxy, each process in the namespace. Its kubelet authenticates
// with a ServiceAccount token bound to the system:node ClusterRole
// (secondNodeToken). Stop the second node before the first.
func (n *Node) StartSecond(ctx context.Context) (second *Node, err error) {
	opts := n.opts
	if opts.Binaries.Nsenter == "" {
		return nil, errors.New("second real node: nsenter not found: apt-get install util-linux")
	}
	if opts.Credentials.KubeletToken, err = secondNodeToken(ctx, opts.Kube); err != nil {
		return nil, fmt.Errorf("second real node: kubelet credentials: %w", err)
	}
	// The apiserver's loopback address is the host's: from the node's
	// namespace it is reached at the first node's address.
	if opts.Credentials.APIServerURL, err = atHost(opts.Credentials.APIServerURL, GatewayIP); err != nil {
		return nil, fmt.Errorf("second real node: %w", err)
	}
	second = &Node{Dir: filepath.Join(opts.RunDir, "node-2"), lay: secondLayout, opts: opts, procs: map[string]*process.Process{}}
	if err := os.MkdirAll(second.Dir, 0o755); err != nil {
		return nil, err
	}
	second.rec = n.lock
	if err := record(second.rec, recordDir, second.Dir); err != nil {
		return nil, fmt.Errorf("second real node: record %s in %s: %w", second.Dir, LockPath, err)
	}
	started := second
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	if err := second.bringUp(ctx, "second real node", []step{
		{"node-2 network", second.startNetwork},
		{"node-2 containerd", second.startContainerd},
		{"node-2 images", second.loadImages},
		{"node-2 kubelet", second.startKubelet},
		{"node-2 kube-proxy", second.startProxy},
	}); err != nil {
		return nil, err
	}
	return second, nil
}

// removeLeftovers removes what a killed run left: what its lock file
// recorded (removeLeftovers), and the second node's network namespace,
// veth and cgroups, which a run of the first node alone would otherwise
// keep. Then it records this node's folder. Problems are printed: the
// start goes on.
func (n *Node) removeLeftovers(ctx context.Context, prev leftovers) {
	log := func(err error) {
		fmt.Fprintf(n.opts.Log, "berth: real node: removing what a killed run left: %v\n", err)
	}
	if err := removeLeftovers(ctx, n.opts.Binaries.Runc, prev); err != nil {
		log(err)
	}
	second := &Node{lay: secondLayout, opts: n.opts}
	if err := second.cleanupKernel(); err != nil {
		log(err)
	}
	if err := removeCgroupRoot(SecondCgroupRoot); err != nil {
		log(err)
	}
	if err := record(n.rec, recordDir, n.Dir); err != nil {
		log(err)
	}
}

type step struct {
	name string
	run  func(context.Context) error
}

// bringUp runs the steps in order, timing each; the error names the step.
func (n *Node) bringUp(ctx context.Context, what string, steps []step) error {
	begin := time.Now()
	for _, s := range steps {
		t := time.Now()
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s: %s: %w", what, s.name, err)
		}
		n.step(s.name, t)
	}
	n.step(what, begin)
	return nil
}

func (n *Node) step(name string, since time.Time) {
	d := time.Since(since)
	n.Timings = append(n.Timings, Timing{name, d})
	fmt.Fprintf(n.opts.Log, "berth: %-24s ready in %s\n", name, d.Round(10*time.Millisecond))
}

// path joins elem onto the node's folder.
func (n *Node) path(elem ...string) string {
	return filepath.Join(append([]string{n.Dir}, elem...)...)
}

// run starts one of the node's processes, its log in the node's folder,
// in the node's network namespace (nsenter --net: only the network; the
// mounts stay the host's, which containerd and the kubelet share).
func (n *Node) run(name, bin string, args []string, env ...string) (*process.Process, error) {
	if n.lay.netns != "" {
		args = append([]string{"--net=" + netnsPath(n.lay.netns), "--", bin}, args...)
		bin = n.opts.Binaries.Nsenter
	}
	p, err := process.Start(process.Spec{Name: name, Bin: bin, Args: args, Env: env, LogPath: n.path(name + ".log")})
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.procs[name] = p
	n.order = append(n.order, name)
	n.mu.Unlock()
	fmt.Fprintf(n.opts.Log, "berth: started %-22s pid %d, log %s\n", name, p.PID(), p.LogPath)
	return p, nil
}

// stopProcess stops one process by name, if it runs.
func (n *Node) stopProcess(name string, grace time.Duration) {
	n.mu.Lock()
	p := n.procs[name]
	delete(n.procs, name)
	n.mu.Unlock()
	if p != nil {
		p.Stop(grace)
	}
}

// Died returns the first of the node's processes that exited, or nil.
func (n *Node) Died() *process.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, name := range n.order {
		if p := n.procs[name]; p != nil {
			if exited, _ := p.Exited(); exited {
				return p
			}
		}
	}
	return nil
}

// Stop removes every pod sandbox, stops the node's processes and undoes
// what the kernel keeps (mounts, the bridge, the route, kube-proxy's
// chains). It is safe to call more than once; problems are printed to the
// log, not returned: a stop goes as far as it can.
func (n *Node) Stop() {
	n.stopOnce.Do(func() {
		log := func(format string, a ...any) { fmt.Fprintf(n.opts.Log, "berth: real node: "+format+"\n", a...) }
		n.stopProcess("kubelet", 10*time.Second)
		if n.socket != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			if err := removeSandboxes(ctx, n.socket); err != nil {
				log("removing pod sandboxes: %v", err)
			}
			cancel()
		}
		n.stopProcess("coredns", 5*time.Second)
		n.stopProcess("kube-proxy", 5*time.Second)
		n.stopProcess("containerd", 10*time.Second)
		if err := n.cleanupKernel(); err != nil {
			log("%v", err)
		}
		if err := unmountUnder(n.Dir, n.stateDir); err != nil {
			log("%v", err)
		}
		if err := removeCgroupRoot(n.lay.cgroupRoot); err != nil {
			log("%v", err)
		}
		if n.stateDir != "" {
			os.RemoveAll(n.stateDir)
		}
		if n.lock != nil {
			Unlock(n.lock)
		}
	})
}

// port formats a loopback address.
func loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// local is where the node's processes serve health and metrics: loopback
// on the host, the node's address in a namespace of its own (so the host
// reaches them).
func (n *Node) local(port int) string {
	if n.lay.netns == "" {
		return loopback(port)
	}
	return n.lay.nodeIP + ":" + strconv.Itoa(port)
}

// Placement is what puts a pod on the real node: a nodeSelector on Label
// and a toleration of its taint.
func Placement() (map[string]string, []corev1.Toleration) {
	return map[string]string{Label: LabelValue},
		[]corev1.Toleration{{Key: Label, Operator: corev1.TolerationOpEqual, Value: LabelValue, Effect: corev1.TaintEffectNoSchedule}}
}

// PlacementAny puts a pod on any real node, the second included: Placement
// and a toleration of SecondTaint.
func PlacementAny() (map[string]string, []corev1.Toleration) {
	sel, tol := Placement()
	return sel, append(tol, corev1.Toleration{Key: SecondTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
}
