package testengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment the test engine reads besides the engines' own.
const (
	EnvDelay     = "BERTH_TEST_ENGINE_DELAY"      // added to every generation, a Go duration
	EnvLoadDelay = "BERTH_TEST_ENGINE_LOAD_DELAY" // /health answers 503 this long after start
	EnvKVWait    = "BERTH_TEST_ENGINE_KV_WAIT"    // how long a decode waits for a room's KV (10s)
)

// drainTimeout bounds a graceful stop.
const drainTimeout = 5 * time.Second

// Env reads environment variables; os.Getenv in production.
type Env func(string) string

// Run is the whole program: it parses argv, serves until ctx ends (the
// main cancels it on SIGTERM), drains, and returns the exit code: 0 after
// a graceful stop or -h, 1 when it cannot start, 2 for a bad command line.
func Run(ctx context.Context, argv []string, env Env, stdout, stderr io.Writer) int {
	if len(argv) > 1 && argv[1] == "chat" {
		return RunChat(ctx, argv[2:], stdout, stderr)
	}
	cfg, err := Parse(argv)
	if errors.Is(err, ErrHelp) {
		_, _ = io.WriteString(stdout, Usage)
		return 0
	}
	name := "berth-test-engine"
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	msg := map[Mode]string{
		ModeSGLang: "a stand-in for SGLang, NOT an inference engine: it runs no model and answers every request with a fixed text naming itself",
		ModeVLLM:   "a stand-in for vLLM, NOT an inference engine: it runs no model and answers every request with a fixed text naming itself",
		ModeRouter: "a stand-in for the SGLang router, NOT the router itself: a round-robin proxy to berth-test-engine workers",
		ModeRay:    "a stand-in for ray start, NOT Ray: it starts no cluster",
	}[cfg.Mode]
	log.Info("berth-test-engine starting: "+msg, "mode", cfg.Mode, "command", strings.Join(argv, " "))
	for _, line := range cfg.Ignored {
		log.Info(line)
	}
	if cfg.Mode == ModeRay {
		if cfg.RayBlock {
			log.Info("ray start --block: waiting for SIGTERM")
			<-ctx.Done()
			log.Info("stopped")
		}
		return 0
	}
	if err := serve(ctx, cfg, env, log); err != nil {
		log.Error("berth-test-engine cannot start", "error", err)
		return 1
	}
	return 0
}

// serve builds the servers for cfg and runs them until ctx ends.
func serve(ctx context.Context, cfg Config, env Env, log *slog.Logger) error {
	durations := map[string]time.Duration{}
	for _, k := range []string{EnvDelay, EnvLoadDelay, EnvKVWait} {
		if v := env(k); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s=%q is not a duration (e.g. 200ms): %w", k, v, err)
			}
			durations[k] = d
		}
	}
	servers := map[string]http.Handler{}
	var onListening func()
	switch cfg.Mode {
	case ModeRouter:
		h, err := startRouter(ctx, cfg, env, log)
		if err != nil {
			return err
		}
		servers[hostPort(cfg.Host, cfg.Port)] = h
		onListening = func() { log.Info("router ready", "address", hostPort(cfg.Host, cfg.Port)) }
	default:
		model, err := LoadModel(cfg.ModelPath)
		if err != nil {
			return err
		}
		log.Info("model read (config.json only: no weights are loaded)", "path", model.Path,
			"architecture", model.Architecture, "tokenizer", tokenizerNote(model))
		e, err := NewEngine(cfg, model, EngineOptions{Log: log, Pod: podName(env), Delay: durations[EnvDelay],
			KVWait: durations[EnvKVWait], RuntimeLoRA: truthy(env("VLLM_ALLOW_RUNTIME_LORA_UPDATING"))})
		if err != nil {
			return err
		}
		servers[hostPort(cfg.Host, cfg.Port)] = e.Handler()
		if cfg.Disaggregation == "prefill" {
			servers[hostPort(cfg.Host, cfg.BootstrapPort)] = e.BootstrapHandler()
		}
		var rv *rendezvous
		if mn := cfg.MultiNode; mn.enabled() && mn.NodeRank == 0 {
			rv = newRendezvous(mn.NNodes)
			_, port, _ := net.SplitHostPort(mn.DistInitAddr)
			servers[net.JoinHostPort(cfg.Host, port)] = rv.Handler(log)
		}
		onListening = func() {
			go func() {
				if waitGroup(ctx, cfg, rv, podName(env), log) {
					markReady(ctx, e, durations[EnvLoadDelay], log, cfg)
				}
			}()
		}
	}
	return listenAndServe(ctx, servers, onListening, log)
}

// waitGroup holds readiness for a multi-node group: the leader until every
// rank joined, a worker until it joined the leader. false when ctx ended.
func waitGroup(ctx context.Context, cfg Config, rv *rendezvous, pod string, log *slog.Logger) bool {
	mn := cfg.MultiNode
	switch {
	case !mn.enabled():
		return true
	case rv != nil:
		log.Info("leader: waiting for every rank", "nnodes", mn.NNodes)
		select {
		case <-rv.all:
			return true
		case <-ctx.Done():
			return false
		}
	default:
		addrs, err := joinLeader(ctx, mn, pod, log)
		if err != nil {
			log.Error("cannot join the leader", "error", err)
			return false
		}
		log.Info("joined the leader", "rank", mn.NodeRank, "dist_init_addr", mn.DistInitAddr, "resolved", addrs)
		return true
	}
}

func markReady(ctx context.Context, e *Engine, delay time.Duration, log *slog.Logger, cfg Config) {
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return
	}
	e.SetReady()
	log.Info("ready: /health answers 200", "address", hostPort(cfg.Host, cfg.Port), "served_model_name",
		e.servedNames()[0], "disaggregation", cmpOr(cfg.Disaggregation, "none"), "pod", e.opts.Pod)
}

func startRouter(ctx context.Context, cfg Config, env Env, log *slog.Logger) (http.Handler, error) {
	if cfg.Router.ServiceDiscovery && cfg.Router.Namespace == "" {
		cfg.Router.Namespace = ownNamespace(env)
		if cfg.Router.Namespace == "" {
			return nil, errors.New("--service-discovery needs --service-discovery-namespace (no POD_NAMESPACE and no ServiceAccount namespace file)")
		}
	}
	r, err := NewRouter(cfg, log)
	if err != nil {
		return nil, err
	}
	if cfg.Router.ServiceDiscovery {
		rc, err := restConfig(cfg.Router.Kubeconfig)
		if err != nil {
			return nil, err
		}
		rc.UserAgent = "berth-test-engine-router"
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("service discovery: %w", err)
		}
		r.StartDiscovery(ctx, client)
	}
	return r.Handler(), nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("service discovery needs the pod's ServiceAccount (or --kubeconfig): %w", err)
	}
	return c, nil
}

// listenAndServe binds every address first (so a taken port fails the
// start), serves, and on ctx's end stops accepting and drains.
func listenAndServe(ctx context.Context, handlers map[string]http.Handler, onListening func(), log *slog.Logger) error {
	var servers []*http.Server
	errs := make(chan error, len(handlers))
	var listeners []net.Listener
	for addr, h := range handlers {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range listeners {
				_ = l.Close()
			}
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		listeners = append(listeners, l)
		servers = append(servers, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second})
		log.Info("listening", "address", l.Addr().String())
	}
	for i, s := range servers {
		go func() {
			if err := s.Serve(listeners[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- err
			}
		}()
	}
	onListening()
	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping: no new connections, draining requests in flight", "timeout", drainTimeout)
	case serveErr = <-errs:
	}
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil {
			log.Warn("drain cut short", "error", err)
			_ = s.Close()
		}
	}
	if serveErr != nil {
		return serveErr
	}
	log.Info("stopped")
	return nil
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func podName(env Env) string {
	if p := env("POD_NAME"); p != "" {
		return p
	}
	return PodName()
}

func ownNamespace(env Env) string {
	if ns := env("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func tokenizerNote(m Model) string {
	if len(m.Tokenizer) == 0 {
		return "none (tokens are counted as whitespace-separated words anyway)"
	}
	return strings.Join(m.Tokenizer, ",")
}

func truthy(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}
