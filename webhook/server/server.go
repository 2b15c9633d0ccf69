// Package server wires the admission handlers, health probes and metrics
// into chi routers and runs them: admissions over TLS, probes and metrics
// on a plain port so kubelets and Prometheus need no client certificates.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/berthdev/berth/webhook/admission"
	"github.com/berthdev/berth/webhook/metrics"
)

// Paths of the admission handlers; deploy/base and the e2e harness register
// these exact paths.
const (
	PathMutateInferenceServices        = "/mutate/inferenceservices"
	PathMutatePods                     = "/mutate/pods"
	PathValidateInferenceServices      = "/validate/inferenceservices"
	PathValidateServingRuntimes        = "/validate/servingruntimes"
	PathValidateClusterServingRuntimes = "/validate/clusterservingruntimes"
	PathValidateAcceleratorClasses     = "/validate/acceleratorclasses"
	PathValidateProfiles               = "/validate/clusterengineruntimeprofiles"
	PathValidateBaseModels             = "/validate/basemodels"
	PathValidateClusterBaseModels      = "/validate/clusterbasemodels"
	PathValidateServingPolicies        = "/validate/servingpolicies"
)

// WebhookMutatePods is the name deploy/base registers PathMutatePods under:
// how the API server's metrics (the name label of
// apiserver_admission_webhook_admission_duration_seconds) and its errors
// name berth's pod webhook.
const WebhookMutatePods = "pods.mutate.ome.io"

// Route binds an admission decision to a path.
type Route struct {
	Path   string
	Name   string
	Decide admission.Func
}

// Readiness reports whether the caches have synced.
type Readiness func() bool

// Router builds the admission router. It also serves /healthz, /readyz and
// /metrics, so a single-port deployment works too.
func Router(routes []Route, ready Readiness, m *metrics.Metrics, log *slog.Logger) http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer) // belt and braces: handlers already recover
	for _, rt := range routes {
		r.Method(http.MethodPost, rt.Path, &admission.Handler{Name: rt.Name, Decide: rt.Decide, Log: log, Observer: m})
	}
	mountProbes(r, ready, m)
	return r
}

// ProbeRouter serves only /healthz, /readyz and /metrics.
func ProbeRouter(ready Readiness, m *metrics.Metrics) http.Handler {
	r := chi.NewRouter()
	mountProbes(r, ready, m)
	return r
}

func mountProbes(r chi.Router, ready Readiness, m *metrics.Metrics) {
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil && !ready() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	r.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
}

// Server runs the TLS admission listener and the optional plain probe listener.
type Server struct {
	Admission *http.Server
	Probes    *http.Server // nil: no separate probe port
	started   atomic.Bool
}

// New builds the servers. tlsConfig must serve certificates through
// GetCertificate so that rotation needs no restart.
func New(admissionAddr string, handler http.Handler, tlsConfig *tls.Config, probeAddr string, probes http.Handler) *Server {
	s := &Server{Admission: &http.Server{
		Addr:              admissionAddr,
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second, // slowloris; the apiserver sends headers at once
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
	}}
	if probeAddr != "" {
		s.Probes = &http.Server{Addr: probeAddr, Handler: probes, ReadHeaderTimeout: 10 * time.Second}
	}
	return s
}

// Run listens until ctx is cancelled, then shuts down gracefully, letting
// in-flight admissions finish for up to grace.
func (s *Server) Run(ctx context.Context, admissionLn, probeLn net.Listener, grace time.Duration) error {
	errs := make(chan error, 2)
	go func() { errs <- ignoreClosed(s.Admission.Serve(tls.NewListener(admissionLn, s.Admission.TLSConfig))) }()
	if s.Probes != nil && probeLn != nil {
		go func() { errs <- ignoreClosed(s.Probes.Serve(probeLn)) }()
	}
	s.started.Store(true)
	select {
	case <-ctx.Done():
	case err := <-errs:
		if err != nil {
			return err
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := s.Admission.Shutdown(shutdownCtx)
	if s.Probes != nil {
		err = errors.Join(err, s.Probes.Shutdown(shutdownCtx))
	}
	return err
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
