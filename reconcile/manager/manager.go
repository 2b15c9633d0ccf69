package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	"github.com/berthdev/berth/internal/strip"
	"github.com/berthdev/berth/reconcile/accelerators"
	"github.com/berthdev/berth/reconcile/adapters"
	"github.com/berthdev/berth/reconcile/classsync"
	"github.com/berthdev/berth/reconcile/models"
	"github.com/berthdev/berth/reconcile/policy"
	"github.com/berthdev/berth/reconcile/servinggroups"
)

// Config says how to run the reconciler process and which controllers
// run in it.
type Config struct {
	REST *rest.Config
	// Workers reconcile InferenceServices in parallel (servinggroups).
	Workers int
	// ProbeAddress serves /healthz, /readyz and /metrics ("" disables).
	ProbeAddress string
	// LeaderElect runs the controllers only while holding the Lease
	// LeaseNamespace/LeaseName, so several replicas can run.
	LeaderElect                               bool
	LeaseNamespace, LeaseName, Identity       string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Options configure the serving groups controller (package reconcile/servinggroups)
	// and the loop it still runs: gang PodGroups.
	Options servinggroups.Options
	// Models configures the model metadata controller (reconcile/models);
	// ModelWorkers read models in parallel (default 2). Controllers
	// selects it.
	Models       models.Options
	ModelWorkers int
	// AcceleratorStatus configures the AcceleratorClass status controller
	// (reconcile/accelerators). Controllers selects it; its Disabled
	// field is the older spelling of leaving it out.
	AcceleratorStatus accelerators.AcceleratorStatusOptions
	// AcceleratorSync configures AcceleratorClass discovery and the Kueue
	// sync (reconcile/classsync). Controllers selects it; nil Controllers
	// runs it only when it asks for discovery or the Kueue sync.
	AcceleratorSync classsync.Options
	// Policy configures the ServingPolicy controller (reconcile/policy).
	// Controllers selects it; its Disabled field is the older spelling of
	// leaving it out. Without it services carry no PolicyCompliant
	// condition; with it but without servinggroups, its verdicts reach no
	// service.
	Policy policy.Options
	// Controllers names the controllers to run (Names lists them); nil
	// runs every one, except accelerator-status when
	// AcceleratorStatus.Disabled, policy when Policy.Disabled, and accelerator-sync when AcceleratorSync
	// asks for neither discovery nor the Kueue sync.
	Controllers []string
	Log         *slog.Logger
}

// The controllers the manager runs, by the name --controllers uses.
const (
	ServingGroups     = "servinggroups"
	Models            = "models"
	AcceleratorStatus = "accelerator-status"
	AcceleratorSync   = "accelerator-sync"
	Policy            = "policy"
)

// Names are the controllers the manager knows, in the order it starts
// them.
var Names = []string{ServingGroups, Models, AcceleratorStatus, AcceleratorSync, Policy}

// controller is one loop the manager runs.
type controller struct {
	name   string
	run    func(ctx context.Context) error
	synced func() bool
}

// RunManager serves probes and runs the selected controllers (under
// leader election when asked) until ctx is done or one of them fails.
func RunManager(ctx context.Context, cfg Config) error {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	enabled, err := selected(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg.REST)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	berth, err := versioned.NewForConfig(cfg.REST)
	if err != nil {
		return fmt.Errorf("berth client: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts := cfg.Options
	if opts.Dynamic == nil && (enabled[ServingGroups] || enabled[AcceleratorSync] && cfg.AcceleratorSync.KueueSync) {
		if opts.Dynamic, err = dynamic.NewForConfig(cfg.REST); err != nil {
			return fmt.Errorf("dynamic client: %w", err)
		}
	}
	ctrls := build(kube, berth, reg, cfg, opts, enabled, log)
	ready := func() bool {
		for _, c := range ctrls {
			if !c.synced() {
				return false
			}
		}
		return true
	}
	return lead(ctx, cfg, kube, ctrls, ready, reg, log)
}

// selected is the set of controllers cfg asks for.
func selected(cfg Config) (map[string]bool, error) {
	enabled := map[string]bool{}
	if cfg.Controllers == nil {
		for _, n := range Names {
			enabled[n] = true
		}
		enabled[AcceleratorStatus] = !cfg.AcceleratorStatus.Disabled
		enabled[Policy] = !cfg.Policy.Disabled
		enabled[AcceleratorSync] = cfg.AcceleratorSync.Enabled()
		return enabled, nil
	}
	for _, n := range cfg.Controllers {
		if !slices.Contains(Names, n) {
			return nil, fmt.Errorf("unknown controller %q (known: %s)", n, strings.Join(Names, ", "))
		}
		enabled[n] = true
	}
	if len(enabled) == 0 {
		return nil, errors.New("no controller selected")
	}
	if enabled[AcceleratorSync] && !cfg.AcceleratorSync.Enabled() {
		return nil, errors.New("accelerator-sync asks for neither AcceleratorClass discovery nor the Kueue sync")
	}
	return enabled, nil
}

// build makes the enabled controllers, sharing one informer factory of
// berth's objects (each controller's Run starts the informers it asked
// for) and one metrics registry.
func build(kube kubernetes.Interface, berth versioned.Interface, reg *prometheus.Registry, cfg Config, opts servinggroups.Options,
	enabled map[string]bool, log *slog.Logger) []controller {
	if opts.Resync == 0 {
		opts.Resync = 10 * time.Minute
	}
	shared := berthinformers.NewSharedInformerFactoryWithOptions(berth, opts.Resync, berthinformers.WithTransform(strip.ManagedFields))
	opts.Log, opts.Metrics, opts.BerthInformers = log, servinggroups.NewMetrics(reg), shared
	var out []controller
	var owned kubeinformers.SharedInformerFactory // the serving groups controller's: its pods, Services, ...
	// ResourceQuotas (and namespaces), unfiltered: watched by both sides
	// of ServingPolicy.
	quotas := kubeinformers.NewSharedInformerFactoryWithOptions(kube, opts.Resync, kubeinformers.WithTransform(strip.ManagedFields))
	opts.Policy.Quotas = quotas
	var serving servingQueue
	if enabled[Policy] {
		pc := servingPolicies(kube, berth, cfg.Policy, opts, shared, quotas, log)
		if enabled[ServingGroups] {
			pc.Services = &serving
		}
		p := policy.New(kube, berth, pc)
		opts.Policy.Verdicts = p
		out = append(out, controller{Policy, p.Run, p.Synced})
	}
	if enabled[ServingGroups] {
		ctrl := servinggroups.New(kube, berth, opts)
		serving.c, owned = ctrl, ctrl.KubeInformers()
		out = append(out, controller{ServingGroups, func(ctx context.Context) error { return ctrl.Run(ctx, cfg.Workers) }, ctrl.Synced})
	}
	if enabled[Models] {
		mo := cfg.Models
		if mo.Log == nil {
			mo.Log = log
		}
		if mo.Resync == 0 {
			mo.Resync = opts.Resync
		}
		mo.Metrics, mo.Writes = models.NewMetrics(reg), opts.Metrics.CountWrite
		mc := models.New(kube, berth, shared, mo)
		out = append(out, controller{Models, func(ctx context.Context) error { return mc.Run(ctx, cfg.ModelWorkers) }, mc.Synced})
	}
	if enabled[AcceleratorStatus] {
		ao := cfg.AcceleratorStatus
		if ao.Log == nil {
			ao.Log = log
		}
		if ao.Resync == 0 {
			ao.Resync = opts.Resync
		}
		ao.BerthInformers = shared
		acc := accelerators.NewAcceleratorStatusController(kube, berth, ao)
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "berth_acceleratorclass_status_writes_total",
			Help: "AcceleratorClass status writes (at most one per class per --accelerator-status-interval)"},
			func() float64 { return float64(acc.Writes()) }))
		out = append(out, controller{AcceleratorStatus, acc.Run, func() bool { return true }})
	}
	if enabled[AcceleratorSync] {
		so := cfg.AcceleratorSync
		if so.Log == nil {
			so.Log = log
		}
		if so.Resync == 0 {
			so.Resync = opts.Resync
		}
		out = append(out, classSync(kube, berth, opts.Dynamic, shared, so))
	}
	if enabled[ServingGroups] { // the LoRA adapters of the serving groups' engine runtime sidecars
		ad := adapters.New(kube, berth, shared, adapters.Options{Log: log, Resync: opts.Resync, Pods: owned})
		out = append(out, controller{"adapters", ad.Run, ad.Synced})
	}
	return out
}

// servingPolicies are the ServingPolicy controller's options: the shared
// informers, the log, the resync and the write counter the serving groups
// controller has.
func servingPolicies(kube kubernetes.Interface, berth versioned.Interface, po policy.Options, opts servinggroups.Options,
	shared berthinformers.SharedInformerFactory, quotas kubeinformers.SharedInformerFactory, log *slog.Logger) policy.Options {
	if po.Log == nil {
		po.Log = log
	}
	if po.Resync == 0 {
		po.Resync = opts.Resync
	}
	po.Writes, po.BerthInformers, po.KubeInformers = opts.Metrics.CountWrite, shared, quotas
	return po
}

// servingQueue is the serving groups controller as the ServingPolicy
// controller sees it (policy.Services); c is set once it is built.
type servingQueue struct{ c *servinggroups.Controller }

func (s *servingQueue) Enqueue(key string) {
	if s.c != nil {
		s.c.Enqueue(key)
	}
}

// classSync is the AcceleratorClass discovery and Kueue sync controller;
// when New refuses its options, a controller whose Run returns that error.
func classSync(kube kubernetes.Interface, berth versioned.Interface, dyn dynamic.Interface,
	shared berthinformers.SharedInformerFactory, so classsync.Options) controller {
	cs, err := classsync.New(kube, berth, dyn, shared, so)
	if err != nil {
		return controller{AcceleratorSync, func(context.Context) error { return err }, func() bool { return true }}
	}
	return controller{AcceleratorSync, cs.Run, cs.Synced}
}

// runAll runs every controller until ctx is done; the first that fails
// stops the others, and its error is returned.
func runAll(ctx context.Context, ctrls []controller, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(ctrls))
	for _, c := range ctrls {
		go func() {
			err := c.run(ctx)
			if err != nil && ctx.Err() == nil {
				log.Error("controller stopped", "controller", c.name, "err", err)
				err = fmt.Errorf("controller %s: %w", c.name, err)
			} else {
				err = nil
			}
			errs <- err
		}()
	}
	var first error
	for range ctrls {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// lead serves probes and runs the controllers, under leader election when
// asked: ready when the caches synced, or standing by as a non-leader.
func lead(ctx context.Context, cfg Config, kube kubernetes.Interface, ctrls []controller, synced func() bool,
	reg *prometheus.Registry, log *slog.Logger) error {
	var leading atomic.Bool
	ready := func() bool {
		return !cfg.LeaderElect && synced() || cfg.LeaderElect && (!leading.Load() || synced())
	}
	if cfg.ProbeAddress != "" {
		if err := serveProbes(ctx, cfg.ProbeAddress, reg, ready, log); err != nil {
			return err
		}
	}
	run := func(ctx context.Context) error { return runAll(ctx, ctrls, log) }
	if !cfg.LeaderElect {
		return run(ctx)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.LeaseNamespace, cfg.LeaseName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: cfg.Identity})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	var runErr error
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true, Name: cfg.LeaseName,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leading.Store(true)
				log.Info("leading", "lease", cfg.LeaseNamespace+"/"+cfg.LeaseName, "identity", cfg.Identity)
				runErr = run(ctx)
			},
			OnStoppedLeading: func() {
				leading.Store(false)
				log.Info("stopped leading", "identity", cfg.Identity)
			},
			OnNewLeader: func(id string) {
				if id != cfg.Identity {
					log.Info("another replica leads", "leader", id)
				}
			},
		},
	})
	if ctx.Err() == nil && runErr == nil {
		// Lost the lease while the process should go on: exit, so the
		// process supervisor restarts it with clean caches.
		return errors.New("lost the leader election lease")
	}
	return runErr
}

// serveProbes serves /healthz (alive), /readyz (caches synced, or standing
// by as a non-leader) and /metrics.
func serveProbes(ctx context.Context, addr string, reg *prometheus.Registry, ready func() bool, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("probe server stopped", "err", err)
		}
	}()
	log.Info("probes serving", "address", ln.Addr().String())
	return nil
}
