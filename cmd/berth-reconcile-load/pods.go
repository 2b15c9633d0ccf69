package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podTracker watches the pods of one namespace and records when each was
// first seen and when it was first seen Running. Both paths of a
// comparison are observed the same way, through the same watch.
type podTracker struct {
	mu      sync.Mutex
	pods    map[types.UID]*podRecord
	created []time.Time // in the order seen
	running []time.Time
	wake    chan struct{}
	cancel  context.CancelFunc
}

type podRecord struct {
	name             string
	created, running time.Time
}

// trackPods starts the watch and returns once it has listed ns.
func trackPods(ctx context.Context, kube kubernetes.Interface, ns string) (*podTracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &podTracker{pods: map[types.UID]*podRecord{}, wake: make(chan struct{}, 1), cancel: cancel}
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	// Keep only what is counted: 10,000 full pods would cost this process
	// memory and CPU next to the processes it measures.
	if err := inf.SetTransform(slimPod); err != nil {
		cancel()
		return nil, err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.observe,
		UpdateFunc: func(_, obj any) { t.observe(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("watch pods of %s: the informer did not sync: %w", ns, context.Cause(ctx))
	}
	return t, nil
}

func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Status:     corev1.PodStatus{Phase: p.Status.Phase},
	}, nil
}

func (t *podTracker) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	r := t.pods[p.UID]
	if r == nil {
		r = &podRecord{name: p.Name, created: now}
		t.pods[p.UID] = r
		t.created = append(t.created, now)
	}
	if r.running.IsZero() && p.Status.Phase == corev1.PodRunning {
		r.running = now
		t.running = append(t.running, now)
	}
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *podTracker) stop() { t.cancel() }

// counts is how many pods were seen, and seen Running.
func (t *podTracker) counts() (created, running int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.created), len(t.running)
}

// nthCreated and nthRunning are when the n-th pod (from 1) was seen, and
// seen Running.
func (t *podTracker) nthCreated(n int) time.Time { return t.nth(&t.created, n) }
func (t *podTracker) nthRunning(n int) time.Time { return t.nth(&t.running, n) }

func (t *podTracker) nth(list *[]time.Time, n int) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < 1 || n > len(*list) {
		return time.Time{}
	}
	return (*list)[n-1]
}

// runningAt maps pod names to when each was first seen Running.
func (t *podTracker) runningAt() map[string]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Time, len(t.pods))
	for _, r := range t.pods {
		if !r.running.IsZero() {
			out[r.name] = r.running
		}
	}
	return out
}

// waitFor waits until done(created, running), printing progress every
// 10s; it gives up after timeout, saying how far it got.
func (t *podTracker) waitFor(ctx context.Context, what string, timeout time.Duration, done func(created, running int) bool) error {
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		c, r := t.counts()
		if done(c, r) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (%d pods seen, %d Running)", what, ctx.Err(), c, r)
		case <-deadline.C:
			return fmt.Errorf("%s: not done after %s (%d pods seen, %d Running)", what, timeout, c, r)
		case <-tick.C:
			progress("  %s: %d pods seen, %d Running (%s)", what, c, r, since(start))
		case <-t.wake:
		}
	}
}
