// Package e2eutil holds the helpers the end-to-end suites (e2e and
// e2e/realnode) share: one polling loop that explains itself on timeout,
// and the namespace and pod steps built on it. Like package wrappers it is
// for tests only; production code never imports it (the test in package
// wrappers checks all of internal/testing).
package e2eutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PollInterval is how long Poll sleeps between two reads.
const PollInterval = 250 * time.Millisecond

// apiTimeout bounds one namespace create or delete.
const apiTimeout = 20 * time.Second

// Poll calls get until done answers true for what it returned, and
// returns that. An error from get counts as not yet. When timeout passes
// first, the test fails with what was awaited, the last error, and
// explain's account of the last value read (explain may be nil; it gets
// the zero T when get never succeeded).
func Poll[T any](t testing.TB, timeout time.Duration, what string, get func(context.Context) (T, error), done func(T) bool, explain func(last T) string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last T
	var lastErr error
	for {
		v, err := get(ctx)
		if err == nil {
			last = v
			if done(v) {
				return v
			}
		}
		if ctx.Err() == nil {
			lastErr = err // a read the deadline cut short says nothing
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s: not reached after %s", what, timeout)
			if lastErr != nil {
				msg += fmt.Sprintf(" (last error: %v)", lastErr)
			}
			if explain != nil {
				msg += "\n" + explain(last)
			}
			t.Fatal(msg)
			return last
		case <-time.After(PollInterval):
		}
	}
}

// Namespace creates a namespace named prefix-<5 random characters> for
// one test and deletes it when the test ends.
func Namespace(t testing.TB, kube kubernetes.Interface, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s-*: %v", prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		_ = kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// WaitPod polls pod ns/name until done answers true; on timeout the test
// fails with the pod's last phase, conditions and container states.
func WaitPod(t testing.TB, kube kubernetes.Interface, ns, name string, timeout time.Duration, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	return Poll(t, timeout, fmt.Sprintf("pod %s/%s", ns, name),
		func(ctx context.Context) (*corev1.Pod, error) {
			return kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		}, done, DescribePod)
}

// DescribePod is the pod's phase, node, conditions and waiting or
// terminated containers on one line.
func DescribePod(p *corev1.Pod) string {
	if p == nil {
		return "(never read)"
	}
	s := fmt.Sprintf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		s += fmt.Sprintf("; %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			s += fmt.Sprintf("; %s waiting %s: %s", cs.Name, w.Reason, w.Message)
		}
		if term := cs.State.Terminated; term != nil {
			s += fmt.Sprintf("; %s terminated %s (exit %d): %s", cs.Name, term.Reason, term.ExitCode, term.Message)
		}
	}
	return s
}
