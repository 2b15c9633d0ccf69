package realnode

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/merge"
)

// admissionStream creates skeleton pods of a service with dry-run (the
// whole admission path, the pod webhook included, nothing stored) every
// interval until stop is closed, counting outcomes.
type admissionStream struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	errors     []string
}

func (s *admissionStream) run(isvc *v1beta1.InferenceService, interval time.Duration, stop <-chan struct{}) {
	pods := env.Kube.CoreV1().Pods(isvc.Namespace)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(interval):
		}
		pod := merge.SkeletonPod(isvc, v1beta1.ComponentEngine, merge.GroupIdentity{GroupIndex: 1000 + i})
		_, err := pods.Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			s.failed.Add(1)
			s.mu.Lock()
			s.errors = append(s.errors, time.Now().Format("15:04:05.000")+" "+err.Error())
			s.mu.Unlock()
			continue
		}
		s.ok.Add(1)
	}
}

// kubectl rollout restart of the webhook Deployment while pod creates
// stream through it: not one admission fails (two replicas, maxUnavailable
// 0, a PodDisruptionBudget, readiness on synced caches, preStop).
func TestWebhookRolloutRestartFailsNoAdmission(t *testing.T) {
	needNode(t)
	ns := newNamespace(t, "restart")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	newChatService(t, c, ns, "steady", 1)
	isvc := waitServiceReady(t, c, ns, "steady", 3*time.Minute)

	s := &admissionStream{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { s.run(isvc, 50*time.Millisecond, stop); close(done) }()
	time.Sleep(2 * time.Second)
	require.Positive(t, s.ok.Load(), "admissions go through before the restart: %v", s.errors)

	ctx := context.Background()
	start := time.Now()
	_, err := kubectl(ctx, env, "rollout", "restart", "deployment/berth-webhook", "-n", BerthNamespace)
	require.NoError(t, err)
	out, err := kubectl(ctx, env, "rollout", "status", "deployment/berth-webhook", "-n", BerthNamespace, "--timeout=3m")
	require.NoError(t, err, out)
	took := time.Since(start)
	time.Sleep(10 * time.Second) // the old pods' preStop and the endpoints' removal
	close(stop)
	<-done
	t.Logf("rollout restart of berth-webhook took %s; %d admissions ok, %d failed during it", took.Round(100*time.Millisecond), s.ok.Load(), s.failed.Load())
	assert.Zero(t, s.failed.Load(), "failed admissions:\n%s", strings.Join(s.errors, "\n"))
	assert.Greater(t, s.ok.Load(), int64(100))
}

// leaseHolder is the reconciler Lease's holder and how often it changed.
func leaseHolder(ctx context.Context) (string, int32, error) {
	l, err := env.Kube.CoordinationV1().Leases(BerthNamespace).Get(ctx, "berth-reconciler", metav1.GetOptions{})
	if err != nil {
		return "", 0, err
	}
	holder, transitions := "", int32(0)
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	return holder, transitions, nil
}

// Deleting the reconciler's leader pod in the middle of a rollout: the
// other replica takes the Lease within the lease duration (15s) plus its
// retry period, and the rollout completes.
func TestReconcilerLeaderFailoverMidRollout(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	ns := newNamespace(t, "failover")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	newChatService(t, c, ns, "roll", 3)
	waitServiceReady(t, c, ns, "roll", 3*time.Minute)
	holder, transitions, err := leaseHolder(ctx)
	require.NoError(t, err)
	leader := strings.SplitN(holder, "_", 2)[0] // <hostname>_<random>: the pod's name
	_, err = env.Kube.CoreV1().Pods(BerthNamespace).Get(ctx, leader, metav1.GetOptions{})
	require.NoError(t, err, "the Lease holder %q is a reconciler pod", holder)

	// Ready groups sampled through the rollout: never fewer than
	// replicas - maxUnavailable (1 by default).
	minReady, stopSampling := sampleMinReady(ns, "roll")
	// A new revision: every group rolls, one at a time.
	isvc, err := c.OmeV1beta1().InferenceServices(ns).Get(ctx, "roll", metav1.GetOptions{})
	require.NoError(t, err)
	if isvc.Spec.Engine.Runner == nil {
		isvc.Spec.Engine.Runner = &v1beta1.RunnerSpec{}
	}
	isvc.Spec.Engine.Runner.Env = append(isvc.Spec.Engine.Runner.Env, corev1.EnvVar{Name: "ROLL", Value: "1"})
	_, err = c.OmeV1beta1().InferenceServices(ns).Update(ctx, isvc, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitRolling(t, ns, "roll")

	killed := time.Now()
	require.NoError(t, env.Kube.CoreV1().Pods(BerthNamespace).Delete(ctx, leader, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}))
	var newHolder string
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		h, tr, err := leaseHolder(ctx)
		if err != nil {
			return false, nil
		}
		newHolder = h
		return h != holder && h != "" && tr > transitions, nil
	}), "the Lease moved from %s", holder)
	took := time.Since(killed)
	t.Logf("Lease moved from %s to %s %s after the leader was deleted", holder, newHolder, took.Round(100*time.Millisecond))
	assert.Less(t, took, 15*time.Second+2*time.Second+5*time.Second, "within the lease duration plus a retry period (and scheduling slack)")

	waitRolledOut(t, ns, "roll", 3*time.Minute)
	stopSampling()
	t.Logf("fewest Ready engine pods during the rollout: %d of 3", minReady.Load())
	assert.GreaterOrEqual(t, minReady.Load(), int64(2), "at most maxUnavailable (1) group down at any time")
}

// sampleMinReady records the fewest Ready pods of the service, every
// 100ms, until stop is called.
func sampleMinReady(ns, name string) (*atomic.Int64, func()) {
	var least atomic.Int64
	least.Store(1 << 30)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, ready, err := engineRevisions(ns, name); err == nil && int64(ready) < least.Load() {
				least.Store(int64(ready))
			}
		}
	}()
	return &least, func() { close(done); <-stopped }
}

// engineRevisions lists the revisions of the service's engine pods.
func engineRevisions(ns, name string) (map[string]int, int, error) {
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=" + name})
	if err != nil {
		return nil, 0, err
	}
	revs, ready := map[string]int{}, 0
	for _, p := range pods.Items {
		revs[p.Annotations[v1beta1.AnnotationRevision]]++
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return revs, ready, nil
}

// waitRolling waits until two revisions coexist: the rollout has begun.
func waitRolling(t *testing.T, ns, name string) {
	t.Helper()
	e2eutil.Poll(t, time.Minute, fmt.Sprintf("the rollout of %s/%s begun", ns, name),
		func(context.Context) (int, error) {
			revs, _, err := engineRevisions(ns, name)
			return len(revs), err
		}, func(revs int) bool { return revs > 1 }, nil)
}

// waitRolledOut waits until every pod is at one revision, Ready, and the
// service Ready.
func waitRolledOut(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	type rollout struct {
		revs  map[string]int
		ready int
	}
	e2eutil.Poll(t, timeout, fmt.Sprintf("the rollout of %s/%s complete", ns, name),
		func(context.Context) (rollout, error) {
			revs, ready, err := engineRevisions(ns, name)
			return rollout{revs, ready}, err
		}, func(r rollout) bool { return len(r.revs) == 1 && r.ready == 3 },
		func(r rollout) string { return fmt.Sprintf("revisions %v, %d ready", r.revs, r.ready) })
	waitServiceReady(t, berthClient(t), ns, name, time.Minute)
}
