// Command berth-reconciler runs the serving groups of InferenceServices:
// it creates skeleton pods (completed by berth's pod webhook), headless and
// ClusterIP Services and HPAs, rolls groups to new revisions by partition,
// recovers failed groups with backoff, and writes status. It never decides
// placement: that is the webhook's pinned decision.
//
// It also reads models' metadata from their files (hf://, s3://, and
// pvc:// through an inspector Job) into BaseModel and ClusterBaseModel
// status (package reconcile/models), and nudges services waiting for it
// (package reconcile/servinggroups, "Services waiting for their model"); it writes
// AcceleratorClass status (reconcile/accelerators) and, when asked,
// discovers classes and syncs them with Kueue (reconcile/classsync). The manager
// (reconcile/manager) runs the controllers --controllers names. Run with
// -h for the flags. Unless GOGC is set in its environment it runs with
// GOGC=50 (gc.go).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berthdev/berth/internal/gcdefault"
	"github.com/berthdev/berth/internal/pprofserver"
	"github.com/berthdev/berth/reconcile/accelerators"
	"github.com/berthdev/berth/reconcile/classsync"
	"github.com/berthdev/berth/reconcile/manager"
	"github.com/berthdev/berth/reconcile/models"
	"github.com/berthdev/berth/reconcile/policy"
	"github.com/berthdev/berth/reconcile/servinggroups"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "berth-reconciler:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := newFlags()
	if err := fs.parse(args); err != nil {
		return err
	}
	gcdefault.Set(defaultGOGC, os.Getenv)
	gcdefault.SetMemoryLimit(os.Getenv)
	var level slog.Level
	if err := level.UnmarshalText([]byte(fs.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := restConfig(fs.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(fs.qps), fs.burst
	cfg.UserAgent = "berth-reconciler"
	identity := fs.identity
	if identity == "" {
		host, _ := os.Hostname()
		identity = host + "_" + string(uuid.NewUUID())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if fs.pprofAddress != "" {
		if err := pprofserver.Serve(ctx, fs.pprofAddress, "--pprof-address", log); err != nil {
			return err
		}
	}
	return manager.RunManager(ctx, manager.Config{
		REST: cfg, Workers: fs.workers, ProbeAddress: fs.probes, Controllers: fs.controllers,
		LeaderElect: fs.leaderElect, LeaseNamespace: fs.leaseNamespace, LeaseName: fs.leaseName, Identity: identity,
		LeaseDuration: fs.leaseDuration, RenewDeadline: fs.renewDeadline, RetryPeriod: fs.retryPeriod,
		Options: servinggroups.Options{Resync: fs.resync, BackoffBase: fs.backoffBase, BackoffMax: fs.backoffMax,
			CoschedulingScheduler: fs.coschedulingScheduler,
			Policy:                servinggroups.PolicyOptions{QuotaRetryBase: fs.quotaRetryBase, QuotaRetryMax: fs.quotaRetryMax}},
		Policy: policy.Options{Namespace: fs.namespace},
		Models: models.Options{HFEndpoint: fs.hfEndpoint, CredentialsNamespace: fs.credentialsNamespace,
			InspectorImage: fs.inspectorImage, DiscoveryTimeout: fs.discoveryTimeout,
			RetryBase: fs.modelRetryBase, RetryMax: fs.modelRetryMax, NamespacedEndpoints: fs.namespacedEndpoints},
		ModelWorkers:      fs.modelWorkers,
		AcceleratorStatus: accelerators.AcceleratorStatusOptions{Interval: fs.acceleratorStatusInterval},
		AcceleratorSync: classsync.Options{Discovery: fs.acceleratorDiscovery, KueueSync: fs.kueueSync,
			NodeSelector: fs.acceleratorNodeSelector},
		Log: log,
	})
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", kubeconfig, err)
	}
	return cfg, nil
}
