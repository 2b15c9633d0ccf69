package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

// t0 is the fake clock's epoch.
var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// podName is the tests' naming: e-<group> for the only pod or the leader,
// e-<group>-<worker> for workers (as the caller's scheme, the role is not
// in the name).
func podName(g int32, w int32) string {
	if w == 0 {
		return fmt.Sprintf("e-%d", g)
	}
	return fmt.Sprintf("e-%d-%d", g, w)
}

// mkPod builds a Ready, Running pod.
func mkPod(g int32, role string, w int32, rev string, mods ...func(*Pod)) Pod {
	p := Pod{
		Name: podName(g, w), UID: "uid-" + podName(g, w), Group: g, Role: role, Worker: w,
		Revision: rev, Phase: corev1.PodRunning, Ready: true, ReadySince: t0.Add(-time.Hour),
	}
	for _, m := range mods {
		m(&p)
	}
	return p
}

func single(g int32, rev string, mods ...func(*Pod)) Pod { return mkPod(g, "", 0, rev, mods...) }
func leader(g int32, rev string, mods ...func(*Pod)) Pod {
	return mkPod(g, RoleLeader, 0, rev, mods...)
}
func worker(g, w int32, rev string, mods ...func(*Pod)) Pod {
	return mkPod(g, RoleWorker, w, rev, mods...)
}

// mnGroup builds a multi-node group: leader and workers 1..n, each
// carrying the group size n+1 as the reconciler's env does.
func mnGroup(g, n int32, rev string, mods ...func(*Pod)) []Pod {
	mods = append([]func(*Pod){func(p *Pod) { p.GroupSize = n + 1 }}, mods...)
	pods := []Pod{leader(g, rev, mods...)}
	for w := int32(1); w <= n; w++ {
		pods = append(pods, worker(g, w, rev, mods...))
	}
	return pods
}

// singles builds single-pod groups 0..n-1 at rev.
func singles(n int32, rev string, mods ...func(*Pod)) []Pod {
	var pods []Pod
	for g := range n {
		pods = append(pods, single(g, rev, mods...))
	}
	return pods
}

func notReady(p *Pod)    { p.Ready, p.ReadySince = false, time.Time{} }
func pending(p *Pod)     { notReady(p); p.Phase = corev1.PodPending }
func terminating(p *Pod) { p.Terminating = true }
func restarting(n int32, since time.Time) func(*Pod) {
	return func(p *Pod) { notReady(p); p.Restarts, p.FailingSince, p.Reason = n, since, "CrashLoopBackOff" }
}
func failedAt(since time.Time) func(*Pod) {
	return func(p *Pod) { notReady(p); p.Phase, p.FailingSince, p.Reason = corev1.PodFailed, since, "Error" }
}
func unsched(msg string) func(*Pod) {
	return func(p *Pod) { pending(p); p.Unschedulable = msg }
}
func recreated(n int32) func(*Pod)       { return func(p *Pod) { p.RecreateCount = n } }
func readySince(at time.Time) func(*Pod) { return func(p *Pod) { p.ReadySince = at } }
func named(name, uid string) func(*Pod) {
	return func(p *Pod) { p.Name, p.UID = name, uid }
}

func cat(parts ...[]Pod) []Pod {
	var out []Pod
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// mkSpec is a single-pod engine spec at revision "new".
func mkSpec(replicas int32, mods ...func(*Spec)) Spec {
	s := Spec{Component: "engine", Replicas: replicas, Revision: "new"}
	for _, m := range mods {
		m(&s)
	}
	return s
}

func multi(workers int32) func(*Spec) {
	return func(s *Spec) { s.MultiNode, s.Workers = true, workers }
}
func partition(v intstr.IntOrString) func(*Spec)      { return func(s *Spec) { s.Partition = v } }
func maxUnavailable(v intstr.IntOrString) func(*Spec) { return func(s *Spec) { s.MaxUnavailable = v } }
func policy(p v1beta1.RecoveryPolicy) func(*Spec)     { return func(s *Spec) { s.Recovery = p } }
func grace(d time.Duration) func(*Spec)               { return func(s *Spec) { s.RestartGrace = d } }

func del(p Pod, reason string) PodRef {
	return PodRef{Name: p.Name, UID: p.UID, Group: p.Group, Role: p.Role, Worker: p.Worker, Reason: reason}
}

func dels(pods []Pod, reason string) []PodRef {
	var out []PodRef
	for _, p := range pods {
		out = append(out, del(p, reason))
	}
	return out
}

func cr(g int32, role string, w int32) PodID { return PodID{Group: g, Role: role, Worker: w} }

// creates lists the creates of whole groups under spec.
func groupCreates(spec Spec, count int32, gs ...int32) []PodID {
	var out []PodID
	for _, g := range gs {
		for _, id := range expected(specShape(withDefaults(spec)), g) {
			out = append(out, PodID{Group: g, Role: id.role, Worker: id.worker, RecreateCount: count})
		}
	}
	return out
}

// actions is the part of a Step most tables compare.
type actions struct {
	Create  []PodID
	Delete  []PodRef
	Requeue time.Duration
}

func actionsOf(s Step) actions { return actions{s.Create, s.Delete, s.Requeue} }
