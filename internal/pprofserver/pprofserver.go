// Package pprofserver serves Go's runtime profiles (net/http/pprof) for
// the --pprof-address flag of berth-reconciler and berth-webhook: off by
// default, on a listener and mux of its own, so nothing is added to
// http.DefaultServeMux or to the probe and admission servers.
package pprofserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Mux serves the profiles under /debug/pprof/ (heap, goroutine, profile,
// trace, ...).
func Mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Serve serves Mux on addr until ctx ends; flag names the flag in errors.
func Serve(ctx context.Context, addr, flag string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen %s: %w", flag, addr, err)
	}
	srv := &http.Server{Handler: Mux(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof server stopped", "err", err)
		}
	}()
	log.Info("pprof serving", "address", ln.Addr().String())
	return nil
}
