package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/berthdev/berth/api/client/clientset/versioned"
)

// ManagerConfig says how to run the reconciler process.
type ManagerConfig struct {
	REST    *rest.Config
	Workers int
	// ProbeAddress serves /healthz, /readyz and /metrics ("" disables).
	ProbeAddress string
	// LeaderElect runs the controller only while holding the Lease
	// LeaseNamespace/LeaseName, so several replicas can run.
	LeaderElect                               bool
	LeaseNamespace, LeaseName, Identity       string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Options                                   Options
	// AcceleratorStatus configures the AcceleratorClass status controller
	// (accelerator.go), run next to the controller (and only while leading).
	AcceleratorStatus AcceleratorStatusOptions
	Log               *slog.Logger
}

// RunManager serves probes and runs the controller (under leader election
// when asked) until ctx is done.
func RunManager(ctx context.Context, cfg ManagerConfig) error {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
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
	opts.Log, opts.Metrics = log, NewMetrics(reg)
	if opts.Dynamic == nil {
		if opts.Dynamic, err = dynamic.NewForConfig(cfg.REST); err != nil {
			return fmt.Errorf("dynamic client: %w", err)
		}
	}
	ctrl := New(kube, berth, opts)
	run := func(ctx context.Context) error { return ctrl.Run(ctx, cfg.Workers) }
	if !cfg.AcceleratorStatus.Disabled {
		ao := cfg.AcceleratorStatus
		if ao.Log == nil {
			ao.Log = log
		}
		if ao.Resync == 0 {
			ao.Resync = opts.Resync
		}
		acc := NewAcceleratorStatusController(kube, berth, ao)
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "berth_acceleratorclass_status_writes_total",
			Help: "AcceleratorClass status writes (at most one per class per --accelerator-status-interval)"},
			func() float64 { return float64(acc.Writes()) }))
		run = func(ctx context.Context) error {
			go func() {
				if err := acc.Run(ctx); err != nil && ctx.Err() == nil {
					log.Error("accelerator status controller stopped", "err", err)
				}
			}()
			return ctrl.Run(ctx, cfg.Workers)
		}
	}

	var leading atomic.Bool
	ready := func() bool {
		return !cfg.LeaderElect && ctrl.Synced() || cfg.LeaderElect && (!leading.Load() || ctrl.Synced())
	}
	if cfg.ProbeAddress != "" {
		if err := serveProbes(ctx, cfg.ProbeAddress, reg, ready, log); err != nil {
			return err
		}
	}
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
