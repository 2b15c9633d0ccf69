package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berthdev/berth/reconcile/accelerators"
	"github.com/berthdev/berth/reconcile/manager"
	"github.com/berthdev/berth/reconcile/servinggroups"
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
	// Gang scheduling: the coscheduling scheduler's name.
	coschedulingScheduler string
	// ServingPolicy: the reconciler's own namespace (exempt), whether
	// policies are watched, the retry backoff of services a quota refuses.
	namespace                     string
	servingPolicies               bool
	quotaRetryBase, quotaRetryMax time.Duration
	// The model metadata controller.
	hfEndpoint, credentialsNamespace, inspectorImage string
	namespacedEndpoints                              []string
	modelWorkers                                     int
	discoveryTimeout, modelRetryBase, modelRetryMax  time.Duration
	// AcceleratorClass discovery and the Kueue ResourceFlavor sync.
	acceleratorDiscovery, kueueSync bool
	acceleratorNodeSelector         string
	// AcceleratorClass status.
	acceleratorStatus         bool
	acceleratorStatusInterval time.Duration
	// controllersFlag is --controllers as given; controllers what parse
	// made of it (and of --accelerator-status and --serving-policies).
	controllersFlag string
	controllers     []string
	// pprofAddress serves net/http/pprof; empty (the default) serves nothing.
	pprofAddress string
}

func newFlags() *flags {
	f := &flags{set: flag.NewFlagSet("berth-reconciler", flag.ContinueOnError)}
	s := f.set
	s.StringVar(&f.controllersFlag, "controllers", "",
		"comma-separated controllers to run: "+strings.Join(manager.Names, ", ")+"; empty runs all of them (accelerator-status only while --accelerator-status is true, policy only while --serving-policies is true, accelerator-sync only with --accelerator-discovery or --kueue-sync)")
	s.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; in-cluster configuration when empty")
	s.StringVar(&f.probes, "probe-listen", ":8081", "address of /healthz, /readyz and /metrics; empty to disable")
	s.StringVar(&f.pprofAddress, "pprof-address", "", "address of Go's /debug/pprof/ profiles (e.g. 127.0.0.1:6060); empty, the default, serves none. Profiles show internals: bind it to localhost")
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
	s.StringVar(&f.coschedulingScheduler, "coscheduling-scheduler-name", servinggroups.DefaultCoschedulingScheduler,
		"schedulerName of the scheduler-plugins scheduler running the coscheduling plugin: pods using it are gang-scheduled with scheduling.x-k8s.io PodGroups (pods using volcano with Volcano's)")
	s.StringVar(&f.namespace, "namespace", envOr("POD_NAMESPACE", "berth-system"),
		"the reconciler's own namespace, never subject to a ServingPolicy (kube-system never is either); defaults to $POD_NAMESPACE")
	s.BoolVar(&f.servingPolicies, "serving-policies", true,
		"run the policy controller: ServingPolicies' ResourceQuotas (namespace budgets) and status, and the PolicyCompliant condition of services; false (the older spelling of leaving policy out of --controllers) when the policy.berth.dev CRD is not installed")
	s.DurationVar(&f.quotaRetryBase, "quota-retry-base", 5*time.Second, "delay before retrying a service whose pods a ResourceQuota refused; doubles after each refusal (a quota freeing room retries at once)")
	s.DurationVar(&f.quotaRetryMax, "quota-retry-max", 5*time.Minute, "longest delay between retries of a service whose pods a ResourceQuota refuses")

	s.StringVar(&f.hfEndpoint, "hf-endpoint", "https://huggingface.co", "Hugging Face Hub (or mirror) that hf:// models' metadata is read from; a model's storage.parameters.endpoint overrides it")
	s.StringVar(&f.credentialsNamespace, "model-credentials-namespace", envOr("POD_NAMESPACE", "berth-system"),
		"namespace of the Secrets (storage.key) and inspector Jobs of ClusterBaseModels (a BaseModel's are in its own namespace); defaults to $POD_NAMESPACE, the reconciler's own")
	s.StringVar(&f.inspectorImage, "model-inspector-image", "",
		"image whose entrypoint is berth, run as \"berth model inspect pvc://claim/path --root /mnt/models\" in a Job that mounts a pvc:// model's claim read-only at /mnt/models; empty: pvc:// models without declared metadata are MetadataResolved=False reason Unsupported")
	s.Func("model-namespaced-endpoints", "comma-separated base URLs a namespaced BaseModel's storage.parameters.endpoint may name (a ClusterBaseModel's may name any): the reconciler sends the model's Secret token there", func(v string) error {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%q is not an http(s) URL", e)
			}
			f.namespacedEndpoints = append(f.namespacedEndpoints, e)
		}
		return nil
	})
	s.IntVar(&f.modelWorkers, "model-workers", 2, "models whose metadata is read in parallel")
	s.DurationVar(&f.discoveryTimeout, "model-discovery-timeout", 2*time.Minute, "how long reading one model's metadata (or its inspector Job) may take")
	s.DurationVar(&f.modelRetryBase, "model-retry-base", 5*time.Second, "delay before retrying a failed metadata discovery; doubles after each failure")
	s.DurationVar(&f.modelRetryMax, "model-retry-max", 10*time.Minute, "longest delay between retries of a failed metadata discovery")
	s.BoolVar(&f.acceleratorDiscovery, "accelerator-discovery", false,
		"create an AcceleratorClass (labelled ome.io/auto-discovered=true) per GPU product that GPU feature discovery labels on nodes, update it when the labels change and mark it Stale when its last node is gone; classes without the label are never written, and one that already covers a product's nodes suppresses its discovered duplicate")
	s.StringVar(&f.acceleratorNodeSelector, "accelerator-discovery-node-selector", "",
		"label selector (kubectl syntax, e.g. node-role.kubernetes.io/gpu,pool!=test) of the nodes accelerator discovery and the Kueue sync read; empty: every node")
	s.BoolVar(&f.kueueSync, "kueue-sync", false,
		"keep Kueue ResourceFlavors (kueue.x-k8s.io/v1beta1) and AcceleratorClasses in sync both ways: a flavor named gpu-* or annotated ome.io/accelerator-class makes a class, a class with spec.integration.kueueResourceFlavor gets a flavor; needs Kueue's CRD")
	s.BoolVar(&f.acceleratorStatus, "accelerator-status", true,
		"write AcceleratorClass status: the Ready, schedulable nodes each class's discovery matches, their total and free accelerators (as the webhook counts them), and the conditions Ready and SelectorTooBroad")
	s.DurationVar(&f.acceleratorStatusInterval, "accelerator-status-interval", accelerators.DefaultAcceleratorStatusInterval,
		"least time between two status writes of one AcceleratorClass; changes within it are written together when it ends, and nothing is written without a change")
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
	if f.modelWorkers < 1 {
		return fmt.Errorf("--model-workers must be at least 1, got %d", f.modelWorkers)
	}
	if f.discoveryTimeout <= 0 || f.modelRetryBase <= 0 || f.modelRetryMax < f.modelRetryBase {
		return fmt.Errorf("--model-discovery-timeout and --model-retry-base must be positive and --model-retry-max at least --model-retry-base")
	}
	if u, err := url.Parse(f.hfEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--hf-endpoint %q is not an http(s) URL", f.hfEndpoint)
	}
	if f.coschedulingScheduler == "" || f.coschedulingScheduler == "volcano" {
		return fmt.Errorf("--coscheduling-scheduler-name must name the coscheduling scheduler (not empty, not volcano), got %q", f.coschedulingScheduler)
	}
	if f.quotaRetryBase <= 0 || f.quotaRetryMax < f.quotaRetryBase {
		return fmt.Errorf("--quota-retry-base must be positive and --quota-retry-max at least --quota-retry-base")
	}
	if f.credentialsNamespace == "" {
		return fmt.Errorf("--model-credentials-namespace must not be empty")
	}
	if _, err := labels.Parse(f.acceleratorNodeSelector); err != nil {
		return fmt.Errorf("--accelerator-discovery-node-selector %q: %w", f.acceleratorNodeSelector, err)
	}
	if f.acceleratorStatusInterval <= 0 {
		return fmt.Errorf("--accelerator-status-interval must be positive, got %s", f.acceleratorStatusInterval)
	}
	if err := f.parseControllers(); err != nil {
		return err
	}
	if f.leaderElect && (f.leaseNamespace == "" || f.leaseName == "") {
		return fmt.Errorf("--leader-elect needs --leader-elect-namespace and --leader-elect-name")
	}
	return nil
}

// parseControllers resolves --controllers: the named controllers, known
// and each once, or (empty) all of them, leaving out accelerator-status
// when --accelerator-status=false, policy when --serving-policies=false
// and accelerator-sync without
// --accelerator-discovery or --kueue-sync. Both flags given and
// disagreeing is an error, never a silent choice.
func (f *flags) parseControllers() error {
	syncOn := f.acceleratorDiscovery || f.kueueSync
	if strings.TrimSpace(f.controllersFlag) == "" {
		for _, n := range manager.Names {
			if (n != manager.AcceleratorStatus || f.acceleratorStatus) && (n != manager.AcceleratorSync || syncOn) &&
				(n != manager.Policy || f.servingPolicies) {
				f.controllers = append(f.controllers, n)
			}
		}
		return nil
	}
	f.controllers = nil
	for _, n := range strings.Split(f.controllersFlag, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case !slices.Contains(manager.Names, n):
			return fmt.Errorf("--controllers: unknown controller %q (known: %s)", n, strings.Join(manager.Names, ", "))
		case !slices.Contains(f.controllers, n):
			f.controllers = append(f.controllers, n)
		}
	}
	if len(f.controllers) == 0 {
		return fmt.Errorf("--controllers=%s names no controller (known: %s)", f.controllersFlag, strings.Join(manager.Names, ", "))
	}
	statusSet, policiesSet := false, false
	f.set.Visit(func(fl *flag.Flag) {
		statusSet = statusSet || fl.Name == "accelerator-status"
		policiesSet = policiesSet || fl.Name == "serving-policies"
	})
	if statusSet && f.acceleratorStatus != slices.Contains(f.controllers, manager.AcceleratorStatus) {
		return fmt.Errorf("--accelerator-status=%t disagrees with --controllers=%s; give one of them", f.acceleratorStatus, f.controllersFlag)
	}
	if policiesSet && f.servingPolicies != slices.Contains(f.controllers, manager.Policy) {
		return fmt.Errorf("--serving-policies=%t disagrees with --controllers=%s; give one of them", f.servingPolicies, f.controllersFlag)
	}
	return f.checkAcceleratorSync()
}

// checkAcceleratorSync: a --controllers list runs accelerator-sync exactly
// when --accelerator-discovery or --kueue-sync asks for its work.
func (f *flags) checkAcceleratorSync() error {
	named := slices.Contains(f.controllers, manager.AcceleratorSync)
	switch {
	case named && !f.acceleratorDiscovery && !f.kueueSync:
		return fmt.Errorf("--controllers=%s names %s, which needs --accelerator-discovery or --kueue-sync", f.controllersFlag, manager.AcceleratorSync)
	case !named && f.acceleratorDiscovery:
		return fmt.Errorf("--accelerator-discovery needs %s in --controllers=%s", manager.AcceleratorSync, f.controllersFlag)
	case !named && f.kueueSync:
		return fmt.Errorf("--kueue-sync needs %s in --controllers=%s", manager.AcceleratorSync, f.controllersFlag)
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
