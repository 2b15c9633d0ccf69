package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// idleRun is the idle phase.
type idleRun struct {
	services, replicas int
	applied            time.Duration // until the last service was applied
	created, running   time.Duration // until every pod was seen, seen Running
	settled            time.Duration // until every service was Ready at its generation (or gave up)
	ready              int           // services Ready at their generation
	notReady           string        // one service that is not, and why
	quiet              time.Duration // until the reconciler had sent no write for -settle; 0: it never was quiet
	buildCPU           float64       // reconciler CPU seconds from the first apply to the window
	buildWrites        map[string]float64
	buildErrors        float64
	window             time.Duration
	win                procSample // the window: end minus start, RSS at the end
	writes             map[string]float64
	syncs, errors      float64
	pid                int
	restarted          bool      // the reconciler died or restarted during the window
	resyncAt           time.Time // a resync of the reconciler's informers expected in the window; zero: none
	// heapInuse, goSys: the Go runtime's heap in use and memory from the
	// OS at the end of the window (go_memstats_* of its /metrics)
	heapInuse, goSys float64
}

// idlePhase creates the services, waits for everything to settle and
// measures the reconciler over the window. The namespace is left for the
// environment's Stop.
func (l *load) idlePhase(ctx context.Context) (*idleRun, error) {
	const ns = "load-idle"
	s, rep := l.cfg.idleServices, l.cfg.idleReplicas
	r := &idleRun{services: s, replicas: rep}
	if s > serviceIPs() {
		progress("WARNING: %d services need %d ClusterIPs; the local control plane's Service CIDR %s holds %d: the others never get their front Service and never settle",
			s, s, clusterServiceCIDR(), serviceIPs())
	}
	progress("idle: %d InferenceServices × %d groups = %d pods in namespace %s", s, rep, s*rep, ns)
	if err := l.namespace(ctx, ns); err != nil {
		return r, err
	}
	tr, err := trackPods(ctx, l.kube, ns)
	if err != nil {
		return r, err
	}
	defer tr.stop()
	pid := l.rec.Process.Process().PID()
	cpu0, _ := readProc(pid)
	m0, err := l.recMetrics(ctx)
	if err != nil {
		return r, err
	}
	start := time.Now()
	for i := range s {
		if err := l.apply(ctx, service(ns, svcName(i), rep)); err != nil {
			return r, fmt.Errorf("idle phase: %w", err)
		}
		if (i+1)%100 == 0 {
			c, run := tr.counts()
			progress("  %d services applied; %d pods seen, %d Running (%s)", i+1, c, run, since(start))
		}
	}
	r.applied = time.Since(start)
	if err := l.idleSettle(ctx, r, tr, ns, start); err != nil {
		return r, err
	}
	cpu1, _ := readProc(pid)
	r.buildCPU = cpu1.cpu - cpu0.cpu
	if m1, err := l.recMetrics(ctx); err == nil {
		r.buildWrites, r.buildErrors = diff(m1.writes, m0.writes), m1.errors-m0.errors
	}
	return r, l.idleWindow(ctx, r)
}

// idleSettle waits until every pod was seen and Running, the services
// settled (or stopped changing) and the reconciler is quiet.
func (l *load) idleSettle(ctx context.Context, r *idleRun, tr *podTracker, ns string, start time.Time) error {
	n := r.services * r.replicas
	if err := tr.waitFor(ctx, "pods created", l.cfg.wait, func(c, _ int) bool { return c >= n }); err != nil {
		return fmt.Errorf("idle phase: %w", err)
	}
	r.created = tr.nthCreated(n).Sub(start)
	if err := tr.waitFor(ctx, "pods Running", l.cfg.wait, func(_, run int) bool { return run >= n }); err != nil {
		return fmt.Errorf("idle phase: %w", err)
	}
	r.running = tr.nthRunning(n).Sub(start)
	progress("  %d pods created after %s, all Running after %s", n, r.created.Round(time.Second), r.running.Round(time.Second))
	if err := l.waitServices(ctx, r, ns); err != nil {
		return err
	}
	r.settled = time.Since(start)
	quiet, err := l.waitQuiet(ctx)
	if err != nil {
		return err
	}
	if quiet {
		r.quiet = time.Since(start)
	}
	return nil
}

// waitServices waits until every service is Ready=True at its current
// generation. When the count has not changed for a minute it stops
// waiting and records one service that is not Ready, and why: the idle
// window then measures what a stuck reconciler costs.
func (l *load) waitServices(ctx context.Context, r *idleRun, ns string) error {
	start, changed := time.Now(), time.Now()
	last := -1
	for {
		list, err := l.berth.OmeV1beta1().InferenceServices(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready, notReady := 0, ""
		for i := range list.Items {
			if settled(&list.Items[i]) {
				ready++
			} else if notReady == "" {
				notReady = describe(&list.Items[i])
			}
		}
		r.ready, r.notReady = ready, notReady
		if ready != last {
			last, changed = ready, time.Now()
			progress("  %d of %d services Ready (%s)", ready, r.services, since(start))
		}
		switch {
		case ready == r.services:
			return nil
		case time.Since(changed) > time.Minute || time.Since(start) > l.cfg.wait:
			progress("  %d services are not Ready and stopped changing; e.g. %s", r.services-ready, notReady)
			return nil
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return err
		}
	}
}

func settled(s *v1beta1.InferenceService) bool {
	return s.Status.ObservedGeneration == s.Generation && meta.IsStatusConditionTrue(s.Status.Conditions, v1beta1.ConditionReady)
}

func describe(s *v1beta1.InferenceService) string {
	c := meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionReady)
	if c == nil {
		return fmt.Sprintf("%s: no Ready condition (observedGeneration %d, generation %d)", s.Name, s.Status.ObservedGeneration, s.Generation)
	}
	return fmt.Sprintf("%s: Ready=%s %s: %s", s.Name, c.Status, c.Reason, c.Message)
}

// waitQuiet waits until the reconciler's write counters have not changed
// for -settle, at most -wait. false: they never stopped changing.
func (l *load) waitQuiet(ctx context.Context) (bool, error) {
	start, changed := time.Now(), time.Now()
	last, err := l.recMetrics(ctx)
	if err != nil {
		return false, err
	}
	for time.Since(changed) < l.cfg.settle {
		if time.Since(start) > l.cfg.wait {
			progress("  the reconciler kept writing for %s; measuring anyway", l.cfg.wait)
			return false, nil
		}
		if err := sleep(ctx, time.Second); err != nil {
			return false, err
		}
		now, err := l.recMetrics(ctx)
		if err != nil {
			return false, err
		}
		if total(now.writes) != total(last.writes) {
			last, changed = now, time.Now()
		}
	}
	progress("  the reconciler sent no write for %s", l.cfg.settle)
	return true, nil
}

// idleWindow measures the reconciler's process over -idle-window.
func (l *load) idleWindow(ctx context.Context, r *idleRun) error {
	p := l.rec.Process
	r.pid, r.window = p.Process().PID(), l.cfg.idleWindow
	restarts := p.Restarts()
	m0, err := l.recMetrics(ctx)
	if err != nil {
		return err
	}
	s0, err := readProc(r.pid)
	if err != nil {
		return err
	}
	progress("idle window: measuring berth-reconciler (pid %d) for %s", r.pid, r.window)
	r.resyncAt = resyncIn(p.Process().Started(), l.cfg.resync, time.Now(), r.window)
	if err := sleep(ctx, r.window); err != nil {
		return err
	}
	s1, err := readProc(r.pid)
	m1, merr := l.recMetrics(ctx)
	r.restarted = err != nil || p.Restarts() != restarts || p.Process().PID() != r.pid
	if err != nil || merr != nil {
		return fmt.Errorf("idle window: the reconciler (pid %d) cannot be read at the end: %v %v", r.pid, err, merr)
	}
	r.win = procSample{cpu: s1.cpu - s0.cpu, rssKiB: s1.rssKiB, hwmKiB: s1.hwmKiB}
	r.heapInuse, r.goSys = m1.heapInuse, m1.goSys
	if l.cfg.heapProfile != "" {
		if err := saveHeapProfile(l.cfg.pprofAddress, l.cfg.heapProfile); err != nil {
			return fmt.Errorf("-heap-profile: %w", err)
		}
		progress("heap profile of berth-reconciler written to %s", l.cfg.heapProfile)
	}
	r.writes = diff(m1.writes, m0.writes)
	r.syncs = m1.syncs - m0.syncs
	r.errors = m1.errors - m0.errors
	return nil
}

// resyncIn is the first informer resync of a process started at started
// (every period, counted from about its start: the informers start within
// a second or two) that falls in [from, from+window], or zero.
func resyncIn(started time.Time, period time.Duration, from time.Time, window time.Duration) time.Time {
	k := from.Sub(started)/period + 1
	at := started.Add(k * period)
	if at.After(from.Add(window)) {
		return time.Time{}
	}
	return at
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
