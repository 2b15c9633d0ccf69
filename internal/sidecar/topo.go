package sidecar

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// Topology keeps one worker registered with a router while the sidecar
// runs: it registers once the engine is healthy, checks on every heartbeat
// that the router still lists the worker (a restarted router has
// forgotten it) and registers again when not, and unregisters on Stop.
type Topology struct {
	Router    Router
	Worker    Worker
	Engine    Engine
	Heartbeat time.Duration
	Log       *slog.Logger
	Metrics   *Metrics

	registered atomic.Bool
}

// Registered reports whether the worker was registered at the last check.
func (t *Topology) Registered() bool { return t.registered.Load() }

// Run keeps the worker registered until ctx ends. The engine must have
// been healthy once (WaitEngine).
func (t *Topology) Run(ctx context.Context) {
	t.sync(ctx)
	tick := time.NewTicker(t.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.sync(ctx)
		}
	}
}

// sync is one heartbeat: an unhealthy engine is taken out of the router;
// a healthy one the router does not list is registered.
func (t *Topology) sync(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, t.Heartbeat+2*time.Second)
	defer cancel()
	if err := t.Engine.Healthy(cctx); err != nil {
		if t.registered.Load() {
			t.Log.Warn("engine unhealthy: unregistering the worker until it is healthy again", "worker", t.Worker.URL, "reason", err)
			if uerr := t.Router.Unregister(cctx, t.Worker); uerr != nil {
				t.Log.Error("unregistering failed", "worker", t.Worker.URL, "reason", uerr)
			}
			t.set(false)
		}
		return
	}
	ok, err := t.Router.Registered(cctx, t.Worker)
	if err != nil {
		t.Log.Warn("router unreachable; retrying on the next heartbeat", "reason", err)
		t.Metrics.routerErrors.Inc()
		return
	}
	if ok {
		t.set(true)
		return
	}
	if t.registered.Load() {
		t.Log.Warn("the router lost the worker (restarted?): registering again", "worker", t.Worker.URL)
	}
	if err := t.Router.Register(cctx, t.Worker); err != nil {
		t.Log.Warn("registering failed; retrying on the next heartbeat", "worker", t.Worker.URL, "reason", err)
		t.Metrics.routerErrors.Inc()
		t.set(false)
		return
	}
	t.Metrics.registrations.Inc()
	t.Log.Info("worker registered", "worker", t.Worker.URL, "type", t.Worker.Type, "bootstrap_port", t.Worker.BootstrapPort)
	t.set(true)
}

func (t *Topology) set(v bool) {
	t.registered.Store(v)
	if v {
		t.Metrics.registered.Set(1)
	} else {
		t.Metrics.registered.Set(0)
	}
}

// Stop unregisters the worker within ctx (the pod's grace period).
func (t *Topology) Stop(ctx context.Context) error {
	t.set(false)
	if err := t.Router.Unregister(ctx, t.Worker); err != nil {
		return fmt.Errorf("unregistering %s: %w", t.Worker.URL, err)
	}
	t.Log.Info("worker unregistered", "worker", t.Worker.URL)
	return nil
}

// WaitEngine polls the engine's health endpoint with exponential backoff
// (from 200ms to 5s) until it answers 200 or timeout passes.
func WaitEngine(ctx context.Context, e Engine, timeout time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 200 * time.Millisecond
	start := time.Now()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = e.Healthy(cctx)
		ccancel()
		if last == nil {
			log.Info("engine healthy", "engine", e.Kind, "url", e.Base+e.HealthPath, "after", time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the engine at %s%s was not healthy within %s: %v", e.Base, e.HealthPath, timeout, last)
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}
