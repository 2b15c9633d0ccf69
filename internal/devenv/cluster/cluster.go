// Package cluster runs a real Kubernetes control plane on 127.0.0.1 as host
// processes — etcd, kube-apiserver, kube-controller-manager, kube-scheduler
// and kwok (fake nodes and pod lifecycles) — for the e2e suite, `berth up`
// and `berth demo`. No Docker, no network: every port is a free loopback
// port, every file lives in one run folder that Stop removes.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berthdev/berth/internal/devenv/process"
)

// WatchListEnv turns off client-go's streaming watch-list. Debian's etcd
// 3.4 lacks RequestWatchProgress, so kube-apiserver cannot serve it; every
// client and process of the local cluster gets this setting.
const WatchListEnv = "KUBE_FEATURE_WatchListClient"

// ServiceCIDR of the local cluster. Its addresses are data, never dialled.
// A /16 leaves room for tens of thousands of ClusterIP Services: every
// InferenceService gets one, and a /24 ran out at about 250 (found by
// cmd/berth-reconcile-load with 1,000 services).
const ServiceCIDR = "10.0.0.0/16"

// Options configure Start. The zero value (plus Binaries) is a sensible cluster.
type Options struct {
	// Binaries to run; see DefaultBinaries and EnsureBinaries.
	Binaries Binaries
	// Stages holds kwok Stage configurations (*.yaml at its root, see
	// package kwok); they are written into the run folder for kwok, which
	// does nothing without them. Nil: no kwok (pods are scheduled but
	// never run).
	Stages fs.FS
	// RunDir receives certificates, kubeconfigs, data and logs. Empty: a new
	// temporary folder, removed by Stop.
	RunDir string
	// KeepRunDir leaves RunDir in place after Stop (to read logs).
	KeepRunDir bool
	// Timeout for each process to become ready. Default 90s: the apiserver
	// needs ~10s on an idle 2-core machine, much more when tests compile next to it.
	Timeout time.Duration
	// Log receives one line per step. Default: io.Discard.
	Log io.Writer
	// Events receives the deaths and restarts of supervised processes
	// (berth's components), also after start-up. Default: Log.
	Events io.Writer
	// OnStop runs last in Stop: Attach uses it to delete the cluster it
	// was given (kind). Its error is printed to Log.
	OnStop func() error
	// NodeIP is the address of a real node's pod network gateway (package
	// node), "" for none. With it the apiserver also listens there for pods
	// (through the "kubernetes" Service), its certificate covers it, and
	// pods get service-account tokens. See apiserverArgs.
	NodeIP string
	// Profiling serves the apiserver's /debug/pprof to its administrators
	// (kube-apiserver --profiling), for measuring it; off by default, as
	// on the measured command lines.
	Profiling bool
}

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = 90 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Events == nil {
		o.Events = o.Log
	}
	return o
}

// Cluster is a running local control plane.
type Cluster struct {
	// RunDir holds everything the cluster wrote.
	RunDir string
	// KubeconfigPath is an admin kubeconfig a person can use with kubectl.
	KubeconfigPath string
	// APIServerURL is https://127.0.0.1:<port>.
	APIServerURL string
	// CAPEM is the CA that signed the apiserver's serving certificate.
	CAPEM []byte
	// Timings records how long each step took to become ready, in start order.
	Timings []Timing

	opts       Options
	pki        *pki
	attached   *rest.Config // set by Attach: a cluster this package did not start
	mu         sync.Mutex
	processes  []*process.Process
	supervised []*process.Supervised
	stopped    bool // set by Stop: nothing is supervised afterwards
	stopFirst  []func()
	stopOnce   sync.Once
	ownRunDir  bool
}

// Timing is the time one step of Start took.
type Timing struct {
	Step     string
	Duration time.Duration
}

// Start runs the control plane and returns once kube-apiserver is ready,
// the scheduler and controller-manager answer /healthz and kwok runs. On
// error everything already started is stopped and the error names the
// process that failed, with the tail of its log.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	os.Setenv(WatchListEnv, "false") // for this process's clients too
	opts = opts.withDefaults()
	if missing := opts.Binaries.Missing(); len(missing) > 0 {
		return nil, fmt.Errorf("cannot start the local control plane, missing binaries: %s; run `make deps`",
			strings.Join(missing, ", "))
	}
	c = &Cluster{opts: opts, RunDir: opts.RunDir}
	if c.RunDir == "" {
		if c.RunDir, err = os.MkdirTemp("", "berth-cluster-"); err != nil {
			return nil, err
		}
		c.ownRunDir = true
	} else if err := os.MkdirAll(c.RunDir, 0o755); err != nil {
		return nil, err
	}
	// "return nil, err" clears the named result: stop through a copy.
	started := c
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	begin := time.Now()
	step := func(name string, since time.Time) {
		c.Timings = append(c.Timings, Timing{name, time.Since(since)})
		fmt.Fprintf(opts.Log, "berth: %-24s ready in %s\n", name, time.Since(since).Round(10*time.Millisecond))
	}

	var extraIPs []net.IP
	if opts.NodeIP != "" {
		ip := net.ParseIP(opts.NodeIP)
		if ip == nil {
			return nil, fmt.Errorf("cluster.Options.NodeIP %q is not an IP address", opts.NodeIP)
		}
		extraIPs = append(extraIPs, ip)
	}
	if c.pki, err = writePKI(c.RunDir, extraIPs...); err != nil {
		return nil, fmt.Errorf("write certificates: %w", err)
	}
	c.CAPEM = c.pki.CAPEM
	ports, err := FreePorts(6)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, schedPort, cmPort, kwokPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	c.APIServerURL = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	// etcd
	t := time.Now()
	etcd, err := c.start("etcd", opts.Binaries.Etcd, etcdArgs(filepath.Join(c.RunDir, "etcd"), etcdClient, etcdPeer))
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	if err := etcd.WaitReady(ctx, opts.Timeout, process.HTTPReady(http.DefaultClient, etcdURL+"/health", "")); err != nil {
		return nil, err
	}
	step("etcd", t)

	// kube-apiserver
	t = time.Now()
	api, err := c.start("kube-apiserver", opts.Binaries.APIServer, apiserverArgs(c.pki, etcdURL, apiPort, filepath.Join(c.RunDir, "apiserver-certs"), opts.NodeIP, opts.Profiling))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CAPEM)
	apiClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := api.WaitReady(ctx, opts.Timeout, process.HTTPReady(apiClient, c.APIServerURL+"/readyz", c.pki.AdminToken)); err != nil {
		return nil, err
	}
	step("kube-apiserver", t)

	// kubeconfigs: one for the person (admin), one per component identity.
	c.KubeconfigPath = filepath.Join(c.RunDir, "kubeconfig")
	kubeconfigs := map[string]string{
		c.KubeconfigPath: c.pki.AdminToken,
		filepath.Join(c.RunDir, "scheduler.kubeconfig"):          c.pki.SchedulerToken,
		filepath.Join(c.RunDir, "controller-manager.kubeconfig"): c.pki.ControllerManagerToken,
		filepath.Join(c.RunDir, "scheduler-plugins.kubeconfig"):  c.pki.SchedulerPluginsToken,
	}
	for path, token := range kubeconfigs {
		if err := WriteKubeconfig(path, c.APIServerURL, c.CAPEM, token); err != nil {
			return nil, err
		}
	}

	// The scheduler and the controller-manager serve /healthz on their own
	// self-signed certificates; only the loopback health probe skips
	// verification, never a client that carries credentials.
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe only
	t = time.Now()
	sched, err := c.start("kube-scheduler", opts.Binaries.Scheduler, schedulerArgs(filepath.Join(c.RunDir, "scheduler.kubeconfig"), schedPort, filepath.Join(c.RunDir, "scheduler-certs")))
	if err != nil {
		return nil, err
	}
	cm, err := c.start("kube-controller-manager", opts.Binaries.ControllerManager, controllerManagerArgs(filepath.Join(c.RunDir, "controller-manager.kubeconfig"), c.pki, cmPort, filepath.Join(c.RunDir, "controller-manager-certs")))
	if err != nil {
		return nil, err
	}
	if err := sched.WaitReady(ctx, opts.Timeout, process.HTTPReady(probe, "https://127.0.0.1:"+strconv.Itoa(schedPort)+"/healthz", "")); err != nil {
		return nil, err
	}
	step("kube-scheduler", t)
	if err := cm.WaitReady(ctx, opts.Timeout, process.HTTPReady(probe, "https://127.0.0.1:"+strconv.Itoa(cmPort)+"/healthz", "")); err != nil {
		return nil, err
	}
	step("kube-controller-manager", t)

	if opts.Stages != nil {
		t = time.Now()
		if err := c.startKwok(ctx, c.KubeconfigPath, kwokPort); err != nil {
			return nil, err
		}
		step("kwok", t)
	}
	step("control plane", begin)
	return c, nil
}

// Attach wraps a cluster started elsewhere (kind) given its admin
// kubeconfig: only kwok runs here, with the same flags and Stage files, so
// the fake fleet and the suite work the same way.
func Attach(ctx context.Context, kubeconfigPath string, opts Options) (c *Cluster, err error) {
	os.Setenv(WatchListEnv, "false")
	opts = opts.withDefaults()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig %s: %w", kubeconfigPath, err)
	}
	c = &Cluster{opts: opts, RunDir: opts.RunDir, KubeconfigPath: kubeconfigPath, APIServerURL: cfg.Host, CAPEM: cfg.CAData, attached: cfg}
	if c.RunDir == "" {
		if c.RunDir, err = os.MkdirTemp("", "berth-cluster-"); err != nil {
			return nil, err
		}
		c.ownRunDir = true
	}
	attached := c
	defer func() {
		if err != nil {
			attached.Stop()
		}
	}()
	if opts.Stages != nil {
		t := time.Now()
		ports, err := FreePorts(1)
		if err != nil {
			return nil, err
		}
		if err := c.startKwok(ctx, kubeconfigPath, ports[0]); err != nil {
			return nil, err
		}
		c.Timings = append(c.Timings, Timing{"kwok", time.Since(t)})
	}
	return c, nil
}

// startKwok writes the Stage files into the run folder and runs kwok
// against kubeconfig until its /healthz answers.
func (c *Cluster) startKwok(ctx context.Context, kubeconfig string, port int) error {
	stages, err := writeStages(c.opts.Stages, filepath.Join(c.RunDir, "kwok-stages"))
	if err != nil {
		return err
	}
	kwok, err := c.start("kwok", c.opts.Binaries.Kwok, kwokArgs(kubeconfig, stages, port))
	if err != nil {
		return err
	}
	return kwok.WaitReady(ctx, c.opts.Timeout, process.HTTPReady(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz", ""))
}

// writeStages copies every *.yaml at the root of stages into dir and
// returns the written paths, sorted.
func writeStages(stages fs.FS, dir string) ([]string, error) {
	names, err := fs.Glob(stages, "*.yaml")
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("no kwok Stage files (*.yaml) given (%v): kwok fakes nothing without them", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kwok Stage files: %w", err)
	}
	var paths []string
	for _, n := range names {
		data, err := fs.ReadFile(stages, n)
		if err != nil {
			return nil, fmt.Errorf("kwok Stage file %s: %w", n, err)
		}
		path := filepath.Join(dir, n)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, fmt.Errorf("kwok Stage file: %w", err)
		}
		paths = append(paths, path)
	}
	slices.Sort(paths)
	return paths, nil
}

// Supervise runs a berth component next to the control plane: with the
// cluster's environment, its log in the run folder (<name>.log), restarted
// with backoff when it dies (reported on Options.Events), and stopped with
// the cluster. It returns once ready answers nil (nil: once started).
func (c *Cluster) Supervise(ctx context.Context, name, bin string, args []string, ready process.ReadyFunc) (*process.Supervised, error) {
	s, err := process.Supervise(ctx, process.SupervisedSpec{
		Spec: process.Spec{Name: name, Bin: bin, Args: args, Env: []string{WatchListEnv + "=false"},
			LogPath: filepath.Join(c.RunDir, name+".log")},
		Ready:        ready,
		ReadyTimeout: c.opts.Timeout,
		Log:          c.opts.Events,
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	stopped := c.stopped
	if !stopped {
		c.supervised = append(c.supervised, s)
	}
	c.mu.Unlock()
	if stopped {
		s.Stop()
		return nil, fmt.Errorf("start %s: the local control plane was stopped meanwhile", name)
	}
	fmt.Fprintf(c.opts.Log, "berth: started %-22s pid %d, log %s (restarted if it dies)\n", name, s.Process().PID(), s.LogPath)
	return s, nil
}

func (c *Cluster) start(name, bin string, args []string) (*process.Process, error) {
	p, err := process.Start(process.Spec{Name: name, Bin: bin, Args: args, Env: []string{WatchListEnv + "=false"},
		LogPath: filepath.Join(c.RunDir, name+".log")})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.processes = append(c.processes, p)
	c.mu.Unlock()
	fmt.Fprintf(c.opts.Log, "berth: started %-22s pid %d, log %s\n", name, p.PID(), p.LogPath)
	return p, nil
}

// Processes returns the processes of the control plane (not the
// supervised components) in start order.
func (c *Cluster) Processes() []*process.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*process.Process(nil), c.processes...)
}

// Supervised returns the supervised components in start order.
func (c *Cluster) Supervised() []*process.Supervised {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*process.Supervised(nil), c.supervised...)
}

// Died returns the first process of the control plane that exited while
// the cluster runs, or nil. Supervised components are restarted instead:
// see Deaths.
func (c *Cluster) Died() *process.Process {
	for _, p := range c.Processes() {
		if exited, _ := p.Exited(); exited {
			return p
		}
	}
	return nil
}

// Deaths lists the deaths of every supervised component, oldest first.
func (c *Cluster) Deaths() []process.Death {
	var all []process.Death
	for _, s := range c.Supervised() {
		all = append(all, s.Deaths()...)
	}
	slices.SortStableFunc(all, func(a, b process.Death) int { return a.At.Compare(b.At) })
	return all
}

// Stop ends the supervised components, then every process in reverse start
// order (SIGTERM, then SIGKILL after 10s), and removes the run folder unless it was given or kept. It is
// safe to call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopped = true
		first := c.stopFirst
		c.mu.Unlock()
		for i := len(first) - 1; i >= 0; i-- {
			first[i]()
		}
		sup := c.Supervised()
		for i := len(sup) - 1; i >= 0; i-- {
			sup[i].Stop()
		}
		procs := c.Processes()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(10 * time.Second)
		}
		if c.ownRunDir && !c.opts.KeepRunDir {
			os.RemoveAll(c.RunDir)
		}
		if c.opts.OnStop != nil {
			if err := c.opts.OnStop(); err != nil {
				fmt.Fprintf(c.opts.Log, "berth: stopping: %v\n", err)
			}
		}
	})
}

// StopFirst registers f to run at the start of Stop, before any process
// is stopped (the latest first): a real node removes its pods while the
// apiserver still answers. Stop on a signal runs it too.
func (c *Cluster) StopFirst(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopFirst = append(c.stopFirst, f)
}

// StopOnSignal stops the cluster on SIGINT or SIGTERM and then exits with
// code 130, so Ctrl-C during a test run or the demo leaves nothing behind.
// The returned function uninstalls the handler.
func (c *Cluster) StopOnSignal() (release func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "berth: %v: stopping the local control plane\n", sig)
			c.Stop()
			os.Exit(130)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

// RESTConfig is an admin client configuration for the cluster.
func (c *Cluster) RESTConfig() *rest.Config {
	if c.attached != nil {
		return rest.CopyConfig(c.attached)
	}
	return &rest.Config{
		Host:            c.APIServerURL,
		BearerToken:     c.pki.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAPEM},
		QPS:             50,
		Burst:           100,
	}
}

// Clientset is an admin clientset for the cluster.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(c.RESTConfig())
}

// WriteKubeconfig writes a kubeconfig for server with a bearer token, so
// that `kubectl --kubeconfig path` works.
func WriteKubeconfig(path, server string, caPEM []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["berth"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["berth"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["berth"] = &clientcmdapi.Context{Cluster: "berth", AuthInfo: "berth"}
	cfg.CurrentContext = "berth"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1. The listeners
// are held until all are chosen so the kernel hands out n different ports.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// NodeCredentials are the identities of a real node's processes (package
// node): the kubelet's (system:node:NodeName), kube-proxy's and CoreDNS's
// tokens, with the CA and the apiserver's address. Empty on an attached
// cluster, whose nodes are its own.
type NodeCredentials struct {
	APIServerURL                           string
	CAFile                                 string
	CAPEM                                  []byte
	KubeletToken, ProxyToken, CoreDNSToken string
}

// NodeCredentials returns the real node's identities (see the type).
func (c *Cluster) NodeCredentials() NodeCredentials {
	if c.pki == nil {
		return NodeCredentials{}
	}
	return NodeCredentials{APIServerURL: c.APIServerURL, CAFile: c.pki.CAFile, CAPEM: c.CAPEM,
		KubeletToken: c.pki.NodeToken, ProxyToken: c.pki.KubeProxyToken, CoreDNSToken: c.pki.CoreDNSToken}
}
