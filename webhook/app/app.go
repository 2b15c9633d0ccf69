// Package app assembles the berth webhook: caches, handlers, routes,
// certificates and servers. cmd/berth-webhook calls it with flags; the e2e
// suite and the demo run that binary as a process next to the local
// control plane (internal/devenv).
package app

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/certs"
	"github.com/berthdev/berth/webhook/cabundle"
	"github.com/berthdev/berth/webhook/cache"
	"github.com/berthdev/berth/webhook/handlers"
	"github.com/berthdev/berth/webhook/metrics"
	"github.com/berthdev/berth/webhook/server"
)

// Config says how to run the webhook.
type Config struct {
	REST *rest.Config
	// CertDir holds tls.crt and tls.key (and ca.crt), watched for rotation.
	CertDir string
	// SelfSigned generates a CA and serving certificate into CertDir at start
	// (for users without cert-manager, the demo and the e2e suite) and
	// injects the CA into the named webhook configurations.
	SelfSigned  bool
	DNSNames    []string
	IPAddresses []net.IP
	// CertSecret, with SelfSigned, keeps the CA and serving certificate in
	// one Secret shared by every replica (deploy/overlays/self-managed), so
	// all replicas serve certificates of the CA in caBundle. Empty: each
	// process generates its own (the demo and the e2e suite run one).
	CertSecret          string
	CertSecretNamespace string
	MutatingConfig      string
	ValidatingConfig    string
	ListenAddress       string // TLS admissions, e.g. ":9443"
	ProbeAddress        string // plain /healthz /readyz /metrics, "" to disable
	Resync              time.Duration
	CertCheckInterval   time.Duration
	// ModelDownloaderImage is pinned on services whose model is downloaded
	// into their pods (annotation ome.io/model-downloader-image); its
	// container runs with args <storageUri> <dest>. Empty:
	// handlers.DefaultModelDownloaderImage.
	ModelDownloaderImage string
	// Namespace is berth's own namespace: no ServingPolicy applies to it
	// (nor to kube-system), so a policy never locks admins out.
	Namespace string
	Log       *slog.Logger
	// Ready, when set, receives the bound admission address once the caches
	// have synced and the server is serving.
	Ready chan<- net.Addr
}

// Unlimited is a copy of cfg whose clients have no client-side rate
// limit (client-go builds no token bucket for a negative QPS).
func Unlimited(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst, c.RateLimiter = -1, 0, nil
	return c
}

// DefaultNamespace is berth's namespace when Config.Namespace is empty.
const DefaultNamespace = "berth-system"

// DefaultGOGC is berth-webhook's GOGC when its environment sets none
// (internal/gcdefault). Its live heap is small (10–20 MB with 5,000 nodes
// cached) and every admission allocates, so Go's default goal (GOGC=100)
// collects several times a second under load, and the admissions that
// meet a collection wait for it. At 1,000 pod admissions/s the pod
// handler's p99 was 3.5–4.2 ms with GOGC=100 and 2.2–2.7 ms with 800, RSS
// 45 MiB against about 140 MiB (docs/performance.md, "The p99 tail and the
// garbage collector"). The runtime's soft memory limit is 90 % of the
// container's (internal/gcdefault), so it collects harder before the
// container reaches its limit.
const DefaultGOGC = 800

// Live is what handlers read from the API server instead of the cache:
// rare reads where the cache's lag would decide wrongly. Nil fields: the
// cache only.
type Live struct {
	Service  handlers.ServiceGetter
	Runtimes *handlers.RuntimeLister
}

// LiveFrom reads through berth's clientset.
func LiveFrom(berth versioned.Interface) Live {
	ome := berth.OmeV1beta1()
	return Live{
		Service: func(ctx context.Context, ns, name string) (*v1beta1.InferenceService, error) {
			return ome.InferenceServices(ns).Get(ctx, name, metav1.GetOptions{})
		},
		Runtimes: &handlers.RuntimeLister{
			Namespaced: func(ctx context.Context, ns string) ([]v1beta1.ServingRuntime, error) {
				l, err := ome.ServingRuntimes(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, err
				}
				return l.Items, nil
			},
			Cluster: func(ctx context.Context) ([]v1beta1.ClusterServingRuntime, error) {
				l, err := ome.ClusterServingRuntimes().List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, err
				}
				return l.Items, nil
			},
		},
	}
}

// Routes returns the admission routes over a cache; obs (may be nil)
// counts selection's decisions and denials; downloader is the model
// downloader image pinned on services (see Config.ModelDownloaderImage).
func Routes(c *cache.Cache, live Live, obs handlers.DecisionObserver, downloader string) []server.Route {
	var violations handlers.ViolationObserver
	if v, ok := obs.(handlers.ViolationObserver); ok {
		violations = v
	}
	policies := &handlers.PolicySource{Set: c.Policies.Set, NamespaceLabels: c.Policies.NamespaceLabels, Observer: violations}
	isvc := &handlers.InferenceServices{Index: c.Index, Profiles: c.Profiles, Retry: handlers.DefaultRetry, Observer: obs, DownloaderImage: downloader,
		Policies: policies, Services: c.InferenceService, ServicesVersion: c.ServicesVersion}
	if c.Secrets != nil {
		isvc.Secrets = c.Secrets.Has
	}
	if c.Claims != nil {
		isvc.Claims = c.Claims.Has
	}
	runtimes := &handlers.Runtimes{Index: c.Index, Profiles: c.Profiles, Retry: handlers.DefaultRetry, Live: live.Runtimes, Policies: policies}
	pods := &handlers.Pods{Index: c.Index, Services: c.InferenceService, Profiles: c.Profiles, Live: live.Service, Policies: policies}
	return []server.Route{
		{Path: server.PathMutateInferenceServices, Name: "mutate-inferenceservices", Decide: isvc.Mutate},
		{Path: server.PathValidateInferenceServices, Name: "validate-inferenceservices", Decide: isvc.Validate},
		{Path: server.PathValidateServingRuntimes, Name: "validate-servingruntimes", Decide: runtimes.ValidateNamespaced},
		{Path: server.PathValidateClusterServingRuntimes, Name: "validate-clusterservingruntimes", Decide: runtimes.ValidateCluster},
		{Path: server.PathValidateAcceleratorClasses, Name: "validate-acceleratorclasses", Decide: handlers.ValidateAcceleratorClass},
		{Path: server.PathValidateProfiles, Name: "validate-clusterengineruntimeprofiles", Decide: handlers.ValidateProfile},
		{Path: server.PathValidateBaseModels, Name: "validate-basemodels", Decide: handlers.ValidateBaseModel},
		{Path: server.PathValidateClusterBaseModels, Name: "validate-clusterbasemodels", Decide: handlers.ValidateClusterBaseModel},
		{Path: server.PathMutatePods, Name: "mutate-pods", Decide: pods.Mutate},
		{Path: server.PathValidateServingPolicies, Name: "validate-servingpolicies", Decide: handlers.ValidateServingPolicy},
	}
}

// Run serves until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	if cfg.Resync == 0 {
		cfg.Resync = 10 * time.Minute
	}
	if cfg.CertCheckInterval == 0 {
		cfg.CertCheckInterval = 10 * time.Second
	}
	if cfg.ModelDownloaderImage == "" {
		cfg.ModelDownloaderImage = handlers.DefaultModelDownloaderImage
	}
	// No client of the webhook waits on a client-side rate limit: a read
	// an admission makes (see Live, and the Secret checks of
	// webhook/cache) would queue behind it, and the queue becomes
	// admission latency, then the API server's timeout and the webhook's
	// failurePolicy. client-go's default (5 requests/s) made each Secret
	// check wait about 200 ms under a stream of creates. The API server's
	// priority and fairness still applies.
	rc := Unlimited(cfg.REST)
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	berth, err := versioned.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("berth client: %w", err)
	}
	meta, err := metadata.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	switch {
	case cfg.SelfSigned && cfg.CertSecret != "":
		sm := &cabundle.SelfManaged{
			Client: kube, Namespace: cfg.CertSecretNamespace, SecretName: cfg.CertSecret,
			DNSNames: cfg.DNSNames, IPs: cfg.IPAddresses,
			MutatingName: cfg.MutatingConfig, ValidatingName: cfg.ValidatingConfig,
			CertDir: cfg.CertDir, Log: log,
		}
		if err := sm.Sync(ctx); err != nil { // the files must exist before the reloader
			return fmt.Errorf("self-managed certificates: %w", err)
		}
		go sm.Run(ctx)
	case cfg.SelfSigned:
		if err := selfSign(ctx, cfg, kube, log); err != nil {
			return err
		}
	}
	reloader, err := certs.NewReloader(filepath.Join(cfg.CertDir, "tls.crt"), filepath.Join(cfg.CertDir, "tls.key"), cfg.CertCheckInterval, log)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	m := metrics.New()
	m.CertificateLoaded()
	reloader.OnReload(func(*x509.Certificate) { m.CertificateLoaded() })
	reloader.Start(ctx)

	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	c, err := cache.New(berth, kube, meta, cfg.Resync, cache.ExemptNamespaces(cfg.Namespace))
	if err != nil {
		return err
	}
	c.Start(ctx)
	go reportCacheSizes(ctx, c, m)

	router := server.Router(Routes(c, LiveFrom(berth), m, cfg.ModelDownloaderImage), c.Synced, m, log)
	srv := server.New(cfg.ListenAddress, router, reloader.TLSConfig(), cfg.ProbeAddress, server.ProbeRouter(c.Synced, m))
	ln, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.ListenAddress, err)
	}
	var probeLn net.Listener
	if cfg.ProbeAddress != "" {
		if probeLn, err = net.Listen("tcp", cfg.ProbeAddress); err != nil {
			ln.Close()
			return fmt.Errorf("listen %s: %w", cfg.ProbeAddress, err)
		}
	}
	log.Info("berth webhook serving", "admissions", ln.Addr().String(), "probes", cfg.ProbeAddress)
	go func() {
		if !c.WaitForSync(ctx) {
			return
		}
		log.Info("caches synced", "stats", fmt.Sprintf("%+v", c.Index.Stats()))
		if cfg.Ready != nil {
			cfg.Ready <- ln.Addr()
		}
	}()
	err = srv.Run(ctx, ln, probeLn, 10*time.Second)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// selfSign writes a fresh CA and serving certificate unless a valid pair is
// already there, and injects the CA into the webhook configurations.
func selfSign(ctx context.Context, cfg Config, kube kubernetes.Interface, log *slog.Logger) error {
	if err := os.MkdirAll(cfg.CertDir, 0o700); err != nil {
		return fmt.Errorf("cert dir: %w", err)
	}
	b, err := certs.Generate(cfg.DNSNames, cfg.IPAddresses, 365*24*time.Hour, time.Now())
	if err != nil {
		return fmt.Errorf("self-signed certificate: %w", err)
	}
	if err := b.WriteFiles(cfg.CertDir); err != nil {
		return fmt.Errorf("write certificates: %w", err)
	}
	if cfg.MutatingConfig != "" || cfg.ValidatingConfig != "" {
		if err := cabundle.Inject(ctx, kube, cfg.MutatingConfig, cfg.ValidatingConfig, b.CACert); err != nil {
			return fmt.Errorf("inject caBundle: %w", err)
		}
	}
	log.Info("self-signed certificates written", "dir", cfg.CertDir, "dnsNames", cfg.DNSNames)
	return nil
}

func reportCacheSizes(ctx context.Context, c *cache.Cache, m *metrics.Metrics) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		s := c.Index.Stats()
		m.SetCacheSize("runtimes", s.Runtimes)
		m.SetCacheSize("acceleratorclasses", s.Classes)
		m.SetCacheSize("nodes", s.Nodes)
		m.SetCacheSize("models", s.Models)
		m.SetCacheSize("servingpolicies", c.Policies.Set().Len())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
