package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

type flags struct {
	set                                       *flag.FlagSet
	kubeconfig, probes, logLevel              string
	workers, burst                            int
	qps                                       float64
	leaderElect                               bool
	leaseNamespace, leaseName, identity       string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	resync, backoffBase, backoffMax           time.Duration
}

func newFlags() *flags {
	f := &flags{set: flag.NewFlagSet("berth-reconciler", flag.ContinueOnError)}
	s := f.set
	s.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; in-cluster configuration when empty")
	s.StringVar(&f.probes, "probe-listen", ":8081", "address of /healthz, /readyz and /metrics; empty to disable")
	s.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	s.IntVar(&f.workers, "workers", 4, "InferenceServices reconciled in parallel")
	s.Float64Var(&f.qps, "kube-api-qps", 50, "client-side rate limit of API requests per second")
	s.IntVar(&f.burst, "kube-api-burst", 100, "client-side burst of API requests")
	s.BoolVar(&f.leaderElect, "leader-elect", true, "run only while holding a Lease, so several replicas can run")
	s.StringVar(&f.leaseNamespace, "leader-elect-namespace", envOr("POD_NAMESPACE", "berth-system"), "namespace of the leader election Lease")
	s.StringVar(&f.leaseName, "leader-elect-name", "berth-reconciler", "name of the leader election Lease")
	s.StringVar(&f.identity, "leader-elect-identity", "", "identity in the Lease; default <hostname>_<random>. A restarted process with the same identity takes the lease over at once")
	s.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a lease holds without renewal")
	s.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before giving up")
	s.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try to acquire or renew")
	s.DurationVar(&f.resync, "resync", 10*time.Minute, "informer resync period")
	s.DurationVar(&f.backoffBase, "recreate-backoff-base", 10*time.Second, "delay before the second consecutive recreate of a failed group; doubles after each")
	s.DurationVar(&f.backoffMax, "recreate-backoff-max", 5*time.Minute, "longest delay between recreates of a failed group")
	return f
}

func (f *flags) parse(args []string) error {
	if err := f.set.Parse(args); err != nil {
		return err
	}
	if f.set.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", f.set.Args())
	}
	if f.workers < 1 {
		return fmt.Errorf("--workers must be at least 1, got %d", f.workers)
	}
	if f.qps <= 0 || f.burst < 1 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive")
	}
	if f.leaderElect && (f.leaseNamespace == "" || f.leaseName == "") {
		return fmt.Errorf("--leader-elect needs --leader-elect-namespace and --leader-elect-name")
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
