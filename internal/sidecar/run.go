package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/berthdev/berth/version"
)

// Sidecar is one running engine runtime sidecar.
type Sidecar struct {
	Config   Config
	Log      *slog.Logger
	Metrics  *Metrics
	Topology *Topology
	LoRA     *LoRA // nil without an adapters file
}

// New builds the sidecar's parts from a checked configuration.
func New(cfg Config, log *slog.Logger) *Sidecar {
	client := &http.Client{Timeout: 10 * time.Second}
	m := NewMetrics()
	eng := Engine{Kind: cfg.Engine, Base: cfg.EngineURL, HealthPath: cfg.EngineHealth, Client: client}
	var router Router = noRouter{}
	if cfg.Topo == TopoSGLang {
		router = SGLangRouter{Base: cfg.RouterURL, Client: client}
	}
	s := &Sidecar{Config: cfg, Log: log, Metrics: m, Topology: &Topology{Router: router, Engine: eng,
		Worker:    Worker{URL: cfg.WorkerURL(), Type: cfg.Instance.WorkerType, BootstrapPort: cfg.Instance.BootstrapPort},
		Heartbeat: cfg.Heartbeat, Log: log, Metrics: m}}
	if cfg.AdaptersFile != "" {
		s.LoRA = &LoRA{File: cfg.AdaptersFile, Engine: eng, Interval: cfg.AdaptersRefresh, Log: log, Metrics: m}
	}
	return s
}

// Handler serves /healthz (the process runs), /readyz (ready only while
// the router lists the worker), /metrics and /adapters (the LoRA state).
func (s *Sidecar) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.Topology.Registered() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not registered with the router\n")
			return
		}
		_, _ = io.WriteString(w, "registered\n")
	})
	mux.Handle("GET /metrics", s.Metrics.Handler())
	mux.HandleFunc("GET /adapters", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if s.LoRA == nil {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "no LoRA management: --adapters-file (LORA_ADAPTERS_FILE) is not set"})
			return
		}
		_ = json.NewEncoder(w).Encode(s.LoRA.State())
	})
	return mux
}

// Serve runs the sidecar until stop is closed (SIGTERM), then unregisters
// within the configured timeout. It returns an error when the engine never
// became healthy or the listener failed.
func (s *Sidecar) Serve(ln net.Listener, stop <-chan struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := WaitEngine(ctx, s.Topology.Engine, s.Config.EngineTimeout, s.Log); err != nil {
		if ctx.Err() != nil && isClosed(stop) {
			return nil // stopped while waiting: nothing was registered
		}
		return err
	}
	done := make(chan struct{})
	go func() { s.Topology.Run(ctx); close(done) }()
	if s.LoRA != nil {
		go s.LoRA.Run(ctx)
	}
	select {
	case <-ctx.Done():
	case err := <-srvErr:
		cancel()
		<-done
		return err
	}
	<-done
	uctx, ucancel := context.WithTimeout(context.Background(), s.Config.UnregisterWait)
	defer ucancel()
	return s.Topology.Stop(uctx)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Main is the program: it parses args over the environment, listens and
// serves until SIGTERM or SIGINT arrives on sigs. Exit codes: 0 stopped
// (and unregistered), 1 failed, 2 bad configuration.
func Main(args []string, getenv func(string) string, stderr io.Writer, sigs <-chan os.Signal) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	cfg, err := ParseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		log.Error("bad configuration", "error", err.Error())
		return 2
	}
	s := New(cfg, log)
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("cannot listen", "address", cfg.Listen, "error", err.Error())
		return 1
	}
	log.Info("berth-engine-sidecar starting", "version", version.Version, "engine", cfg.Engine, "engine_url", cfg.EngineURL,
		"topo", cfg.Topo, "router", cfg.RouterURL, "worker", cfg.WorkerURL(), "worker_type", cfg.Instance.WorkerType,
		"listen", ln.Addr().String(), "adapters_file", cfg.AdaptersFile)
	stop := make(chan struct{})
	go func() {
		sig := <-sigs
		log.Info("stopping: unregistering the worker", "signal", sig.String(), "timeout", cfg.UnregisterWait)
		close(stop)
	}()
	if err := s.Serve(ln, stop); err != nil {
		log.Error("berth-engine-sidecar failed", "error", err.Error())
		return 1
	}
	log.Info("berth-engine-sidecar stopped")
	return 0
}
