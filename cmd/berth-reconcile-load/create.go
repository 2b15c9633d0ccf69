package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Paths of the creation phase.
const (
	pathReconciler = "reconciler+webhook"
	pathRaw        = "raw loop, no webhook"
)

// createRun is one path of the creation phase at N pods. Durations count
// from the apply of the service (reconciler) or the first create (raw).
type createRun struct {
	path    string
	n       int
	first   time.Duration // until the first pod was seen
	created time.Duration // until the N-th pod was seen
	running time.Duration // until the N-th pod was seen Running
	writes  float64       // pod creates the reconciler counted (reconciler path)
	// writesErr is why writes could not be read (reconciler path).
	writesErr error
	// webhook is the apiserver's mean round trip to the pod webhook during
	// the run (reconciler path); 0 when it made no call or was not read.
	webhook time.Duration
}

// rate is pods created per second over the whole run.
func (r createRun) rate() float64 { return float64(r.n) / r.created.Seconds() }

// spanRate is pods created per second from the first pod to the N-th,
// without the time until the first (the service's admission and the
// reconciler noticing it).
func (r createRun) spanRate() float64 {
	if r.n < 2 || r.created <= r.first {
		return 0
	}
	return float64(r.n-1) / (r.created - r.first).Seconds()
}

// warmUp sends a few pods down both paths before anything is measured, so
// that neither the first measured run pays for cold connections and caches
// (the webhook's TLS connections from the apiserver, the reconciler's first
// syncs, the raw client's handshake).
func (l *load) warmUp(ctx context.Context) error {
	const ns, n = "load-warmup", 20
	progress("warm-up: %d pods through each path in namespace %s (not measured)", n, ns)
	if err := l.namespace(ctx, ns); err != nil {
		return err
	}
	tr, err := trackPods(ctx, l.kube, ns)
	if err != nil {
		return err
	}
	defer tr.stop()
	if err := l.apply(ctx, service(ns, "warmup", n)); err != nil {
		return err
	}
	if err := l.rawLoop(ctx, ns, n); err != nil {
		return err
	}
	if err := tr.waitFor(ctx, "warm-up pods Running", l.cfg.wait, func(_, run int) bool { return run >= 2*n }); err != nil {
		return err
	}
	return l.deleteNamespace(ctx, ns)
}

// createPair runs the reconciler path and then the raw path at n pods,
// each in its own namespace, deleted and waited for before the next.
func (l *load) createPair(ctx context.Context, n int) ([]createRun, error) {
	var out []createRun
	for _, path := range []string{pathReconciler, pathRaw} {
		ns := fmt.Sprintf("load-reconciler-%d", n)
		if path == pathRaw {
			ns = fmt.Sprintf("load-raw-%d", n)
		}
		progress("creation, %s: %d pods in namespace %s", path, n, ns)
		r, err := l.createRun(ctx, path, ns, n)
		if err != nil {
			return out, fmt.Errorf("creation phase, %s, %d pods: %w", path, n, err)
		}
		progress("  %d pods created in %s (%.1f/s), all Running after %s", n, r.created.Round(10*time.Millisecond), r.rate(), r.running.Round(10*time.Millisecond))
		out = append(out, r)
		if err := l.deleteNamespace(ctx, ns); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (l *load) createRun(ctx context.Context, path, ns string, n int) (createRun, error) {
	r := createRun{path: path, n: n}
	if err := l.namespace(ctx, ns); err != nil {
		return r, err
	}
	tr, err := trackPods(ctx, l.kube, ns)
	if err != nil {
		return r, err
	}
	defer tr.stop()
	// A figure is reported only when both its reads succeed: one from a
	// failed first read would count from the cluster's start.
	before, recErr := l.recMetrics(ctx)
	calls0, secs0, callsErr := l.webhookCalls(ctx)
	start := time.Now()
	if path == pathRaw {
		err = l.rawLoop(ctx, ns, n)
	} else {
		err = l.apply(ctx, service(ns, "load", n))
	}
	if err != nil {
		return r, err
	}
	if err := tr.waitFor(ctx, "pods created", l.cfg.wait, func(c, _ int) bool { return c >= n }); err != nil {
		return r, err
	}
	if err := tr.waitFor(ctx, "pods Running", l.cfg.wait, func(_, run int) bool { return run >= n }); err != nil {
		return r, err
	}
	r.first, r.created, r.running = tr.nthCreated(1).Sub(start), tr.nthCreated(n).Sub(start), tr.nthRunning(n).Sub(start)
	if path == pathReconciler {
		after, err := l.recMetrics(ctx)
		switch {
		case recErr != nil:
			r.writesErr = fmt.Errorf("before the run: %w", recErr)
		case err != nil:
			r.writesErr = fmt.Errorf("after the run: %w", err)
		default:
			r.writes = after.writes["create pods"] - before.writes["create pods"]
		}
	}
	if calls1, secs1, err := l.webhookCalls(ctx); err == nil && callsErr == nil && calls1 > calls0 {
		r.webhook = time.Duration((secs1 - secs0) / (calls1 - calls0) * float64(time.Second))
	}
	return r, nil
}

// rawLoop creates n plain pods one after another, as the reconciler
// creates a service's pods in one sync, with the reconciler's client QPS
// and burst. They have no ome.io/inferenceservice label: the webhook is
// never called and the reconciler never sees them.
func (l *load) rawLoop(ctx context.Context, ns string, n int) error {
	kube, err := l.rawClient()
	if err != nil {
		return err
	}
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("raw-%d", i), Namespace: ns, Labels: map[string]string{loadLabel: "raw"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "engine", Image: engineImage,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}}},
		}
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", ns, pod.Name, err)
		}
	}
	return nil
}

// applyRun is the apply phase: n one-group services.
type applyRun struct {
	n       int
	applied time.Duration   // until the last apply returned
	running time.Duration   // until every pod was seen Running
	each    []time.Duration // per service: its apply to its pod Running, sorted
}

// applyPhase applies n one-group services one after another, as kubectl
// apply does with a file of n objects, and waits until every pod is
// Running.
func (l *load) applyPhase(ctx context.Context, n int) (*applyRun, error) {
	const ns = "load-apply"
	progress("apply: %d one-group InferenceServices in namespace %s", n, ns)
	if err := l.namespace(ctx, ns); err != nil {
		return nil, err
	}
	tr, err := trackPods(ctx, l.kube, ns)
	if err != nil {
		return nil, err
	}
	defer tr.stop()
	r := &applyRun{n: n}
	start := time.Now()
	applied := make([]time.Time, n)
	for i := range n {
		applied[i] = time.Now()
		if err := l.apply(ctx, service(ns, svcName(i), 1)); err != nil {
			return r, fmt.Errorf("apply phase: %w", err)
		}
	}
	r.applied = time.Since(start)
	if err := tr.waitFor(ctx, "pods Running", l.cfg.wait, func(_, run int) bool { return run >= n }); err != nil {
		return r, fmt.Errorf("apply phase: %w", err)
	}
	r.running = tr.nthRunning(n).Sub(start)
	at := tr.runningAt()
	for i := range n {
		if t, ok := at[svcName(i)+"-engine-0"]; ok {
			r.each = append(r.each, t.Sub(applied[i]))
		}
	}
	slices.Sort(r.each)
	progress("  applied in %s, all Running after %s", r.applied.Round(10*time.Millisecond), r.running.Round(10*time.Millisecond))
	return r, l.deleteNamespace(ctx, ns)
}

func svcName(i int) string { return fmt.Sprintf("svc-%04d", i) }

// quantile of sorted durations.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[int(q*float64(len(d)-1))]
}
