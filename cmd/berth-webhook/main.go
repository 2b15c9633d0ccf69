// Command berth-webhook serves berth's admission webhooks: it resolves
// runtimes and AcceleratorClasses for InferenceServices, validates runtimes,
// classes and profiles, and completes InferenceService pods.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berthdev/berth/internal/gcdefault"
	"github.com/berthdev/berth/internal/pprofserver"
	"github.com/berthdev/berth/webhook/app"
	"github.com/berthdev/berth/webhook/handlers"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "berth-webhook:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		kubeconfig = flag.String("kubeconfig", "", "kubeconfig file; in-cluster configuration when empty")
		certDir    = flag.String("cert-dir", "/certs", "directory with tls.crt and tls.key, watched for rotation")
		selfSigned = flag.Bool("self-signed", false, "generate a CA and serving certificate into --cert-dir at start and inject the CA into the webhook configurations")
		dnsNames   = flag.String("dns-names", "berth-webhook.berth-system.svc,berth-webhook.berth-system.svc.cluster.local", "comma-separated DNS names of the self-signed serving certificate")
		ips        = flag.String("ip-addresses", "", "comma-separated IP addresses of the self-signed serving certificate")
		certSecret = flag.String("cert-secret", "", "with --self-signed: Secret holding the CA and serving certificate shared by all replicas")
		namespace  = flag.String("namespace", envOr("POD_NAMESPACE", app.DefaultNamespace), "berth's own namespace: no ServingPolicy applies to it nor to kube-system, so a policy never locks admins out")
		secretNS   = flag.String("cert-secret-namespace", envOr("POD_NAMESPACE", app.DefaultNamespace), "namespace of --cert-secret")
		mutating   = flag.String("mutating-config", "berth-mutating", "MutatingWebhookConfiguration to inject the CA into (--self-signed)")
		validating = flag.String("validating-config", "berth-validating", "ValidatingWebhookConfiguration to inject the CA into (--self-signed)")
		listen     = flag.String("listen", ":9443", "address of the TLS admission server")
		probes     = flag.String("probe-listen", ":8081", "address of the plain /healthz, /readyz and /metrics server; empty to disable")
		pprofAddr  = flag.String("pprof-address", "", "address of Go's /debug/pprof/ profiles (e.g. 127.0.0.1:6060); empty, the default, serves none. Profiles show internals: bind it to localhost")
		certCheck  = flag.Duration("cert-check-interval", 10*time.Second, "how often the serving certificate files are checked for rotation")
		resync     = flag.Duration("resync", 10*time.Minute, "informer resync period")
		logLevel   = flag.String("log-level", "info", "debug, info, warn or error")
		downloader = flag.String("model-downloader-image", handlers.DefaultModelDownloaderImage,
			"image of the init container that downloads a model (hf://, s3://, gs://, oci://) into its pods, run with args <storageUri> <dest>: berth's own downloader by default, or KServe's storage initializer (same args and variables); "+
				"pinned on each InferenceService when berth decides it, so changing it moves only services decided afterwards")
	)
	flag.Parse()
	gcdefault.Set(app.DefaultGOGC, os.Getenv)
	gcdefault.SetMemoryLimit(os.Getenv)

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	var ipList []net.IP
	for _, s := range splitList(*ips) {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("--ip-addresses: %q is not an IP address", s)
		}
		ipList = append(ipList, ip)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *pprofAddr != "" {
		if err := pprofserver.Serve(ctx, *pprofAddr, "--pprof-address", log); err != nil {
			return err
		}
	}
	return app.Run(ctx, app.Config{
		REST: cfg, CertDir: *certDir, SelfSigned: *selfSigned,
		DNSNames: splitList(*dnsNames), IPAddresses: ipList,
		CertSecret: *certSecret, CertSecretNamespace: *secretNS,
		MutatingConfig: *mutating, ValidatingConfig: *validating,
		ListenAddress: *listen, ProbeAddress: *probes, Resync: *resync, CertCheckInterval: *certCheck, Log: log,
		ModelDownloaderImage: *downloader, Namespace: *namespace,
	})
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration (pass --kubeconfig outside a cluster): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
