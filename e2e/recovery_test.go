package e2e

// Failures: of the reconciler itself (SIGKILL in the middle of a roll), and
// of serving pods (kwok's pod-fail stage turns a Running pod annotated
// kwok.berth.dev/fail=true into a Failed one about a second later), under
// each recovery policy, with backoff.

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// liveDuplicates replays the watch keyed by UID and returns every moment a
// pod was added while another live pod (not terminating) had the same
// name or the same identity (component, group, worker index).
func liveDuplicates(initial []*corev1.Pod, events []podEvent) []string {
	state := map[types.UID]*corev1.Pod{}
	for _, p := range initial {
		state[p.UID] = p
	}
	var dups []string
	for _, ev := range events {
		p := ev.Pod
		switch ev.Type {
		case watch.Deleted:
			delete(state, p.UID)
			continue
		case watch.Added:
			id, hasID := identity(p)
			for uid, o := range state {
				if uid == p.UID || o.DeletionTimestamp != nil {
					continue
				}
				oid, ok := identity(o)
				if o.Name == p.Name || (hasID && ok && oid == id) {
					dups = append(dups, "pod "+p.Name+" ("+string(p.UID)+") added while "+o.Name+" ("+string(uid)+") was live with identity "+oid.String())
				}
			}
		}
		state[p.UID] = p
	}
	return dups
}

// SIGKILL of the reconciler in the middle of a roll of 6 groups: the
// supervisor restarts it, the roll completes, and the watch shows no group
// created twice, no two live pods of one identity, no group lost, and
// never more than maxUnavailable (1) groups down.
//
// Not parallel: the reconciler is shared by every test.
func TestReconcilerKilledMidRollout(t *testing.T) {
	r := reconcilerComponent(t)
	const groups = 6
	ns := lifecycleNamespace(t, "e2e-kill")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-kill")).Obj())
	createService(t, MakeService(ns, "kill").Runtime(rt.Name).MinMax(groups, groups).Replicas(groups).
		MaxUnavailable(intstr.FromInt32(1)).Obj())
	isvc := waitService(t, ns, "kill", "Ready=True with 6 groups", func(s *v1beta1.InferenceService) bool {
		return serviceReady(s) && s.Status.Components[v1beta1.ComponentEngine].ReadyReplicas == groups
	})
	oldRev := isvc.Status.Components[v1beta1.ComponentEngine].Revision
	before := waitPods(t, ns, "kill", "6 groups serving", podsNamed(groupNames("kill", groups)...))
	oldUIDs := map[string]bool{}
	for _, p := range before {
		oldUIDs[string(p.UID)] = true
	}

	w := startPodWatch(t, ns)
	updateRuntime(t, rt.Name, setRuntimeImage(e2eImageV2))
	w.waitFor(t, "the roll deleting its first group", func(evs []podEvent) bool { return len(goneInOrder(evs, oldUIDs)) > 0 })
	pid, restarts, deaths := r.Process().PID(), r.Restarts(), len(r.Deaths())
	require.NoError(t, r.Kill(), "SIGKILL %s", reconcilerCmp)
	_, evs, err := w.snapshot()
	require.NoError(t, err)
	require.Less(t, len(added(evs)), groups, "the roll had finished before the kill; the test showed nothing")
	t.Logf("killed %s (pid %d) with %d group(s) gone and %d created", reconcilerCmp, pid, len(goneInOrder(evs, oldUIDs)), len(added(evs)))

	waitFor(t, ns, reconcilerCmp+" restarted by its supervisor and ready", func() bool { return r.Restarts() > restarts && r.Ready() })
	assert.NotEqual(t, pid, r.Process().PID(), "a new process")
	if d := r.Deaths(); assert.Greater(t, len(d), deaths, "the kill is recorded as a death") {
		assert.Contains(t, d[len(d)-1].Err.Error(), "killed")
	}

	isvc = waitService(t, ns, "kill", "rolled: 6 groups at the new revision, all Ready", rolloutDone(oldRev, groups, groups))
	newRev := isvc.Status.Components[v1beta1.ComponentEngine].Revision
	after := waitPods(t, ns, "kill", "6 groups serving", podsNamed(groupNames("kill", groups)...))
	for _, p := range after {
		assert.Equal(t, newRev, p.Annotations[v1beta1.AnnotationRevision], "pod %s", p.Name)
		assert.False(t, oldUIDs[string(p.UID)], "pod %s was rolled", p.Name)
	}

	initial, events, err := w.snapshot()
	require.NoError(t, err)
	assert.Empty(t, liveDuplicates(initial, events), "two live pods of one identity")
	perGroup := map[int]int{}
	for _, p := range added(events) {
		id, ok := identity(p)
		require.True(t, ok, "pod %s has no group", p.Name)
		perGroup[id.group]++
	}
	want := map[int]int{}
	for g := 0; g < groups; g++ {
		want[g] = 1
	}
	assert.Equal(t, want, perGroup, "pods created per group during the roll: each group exactly once")
	assert.Len(t, goneInOrder(events, oldUIDs), groups, "each old pod deleted once")
	most, at := w.maxUnavailable(t, groupShape{component: v1beta1.ComponentEngine, groups: groups, size: 1})
	assert.LessOrEqual(t, most, 1, "maxUnavailable 1 held across the restart; worst: %s", at)
}

// A pod of a multi-node group fails: under RoleRecreate only that pod is
// recreated, under ServingGroupRecreate the whole group. The recreated
// pods carry ome.io/recreate-count, are at the service's revision, and the
// service is Ready again; the recovery is explained in events, with the
// backoff that follows.
//
// Only the one pod is annotated for kwok to fail (kubectl annotate), so
// the difference between the policies shows; a service-wide annotation
// fails every pod of the group (TestRecoveryBackoffGrows).
func TestRecoveryPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy    v1beta1.RecoveryPolicy
		recreated []string // pods that get new UIDs
	}{
		{v1beta1.RoleRecreate, []string{"rec-engine-0-1"}},
		{v1beta1.ServingGroupRecreate, []string{"rec-engine-0-0", "rec-engine-0-1", "rec-engine-0-2"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			ns := lifecycleNamespace(t, "e2e-recover")
			rt := createRuntime(t, MakeRuntime(uniqueName("e2e-recover")).MultiNode(2).Obj())
			createService(t, MakeService(ns, "rec").Runtime(rt.Name).Recovery(tc.policy).Obj())
			waitService(t, ns, "rec", "Ready=True", serviceReady)
			names := []string{"rec-engine-0-0", "rec-engine-0-1", "rec-engine-0-2"}
			before := waitPods(t, ns, "rec", "leader and workers serving", podsNamed(names...))
			w := startPodWatch(t, ns)

			out, err := kubectl(t, "", "annotate", "pod", "rec-engine-0-1", "-n", ns, failAnnot+"=true")
			require.NoError(t, err, out)
			failed := podByName(before, "rec-engine-0-1").UID
			w.waitFor(t, "kwok failing rec-engine-0-1", func(evs []podEvent) bool {
				for _, ev := range evs {
					if ev.Pod.UID == failed && ev.Pod.Status.Phase == corev1.PodFailed {
						return true
					}
				}
				return false
			})

			recreated := map[string]bool{}
			for _, n := range tc.recreated {
				recreated[n] = true
			}
			after := waitPods(t, ns, "rec", "the group serving again with "+strconv.Itoa(len(tc.recreated))+" pod(s) recreated", func(pods []corev1.Pod) bool {
				if !podsNamed(names...)(pods) {
					return false
				}
				for _, n := range tc.recreated {
					if podByName(pods, n).UID == podByName(before, n).UID {
						return false
					}
				}
				return true
			})
			isvc := waitService(t, ns, "rec", "Ready=True again", serviceReady)
			rev := isvc.Status.Components[v1beta1.ComponentEngine].Revision
			for _, n := range names {
				p, old := podByName(after, n), podByName(before, n)
				if recreated[n] {
					assert.NotEqual(t, old.UID, p.UID, "pod %s recreated", n)
					assert.Equal(t, "1", p.Annotations[v1beta1.AnnotationRecreateCount], "pod %s %s", n, v1beta1.AnnotationRecreateCount)
				} else {
					assert.Equal(t, old.UID, p.UID, "pod %s kept under %s", n, tc.policy)
					assert.Empty(t, p.Annotations[v1beta1.AnnotationRecreateCount], "pod %s was never recreated", n)
				}
				assert.Equal(t, rev, p.Annotations[v1beta1.AnnotationRevision], "pod %s is at the service's revision (a recreated pod must not look outdated)", n)
			}
			_, events, err := w.snapshot()
			require.NoError(t, err)
			var gone []string
			for _, p := range goneInOrder(events, uidSet(before)) {
				gone = append(gone, p.Name)
			}
			assert.ElementsMatch(t, tc.recreated, gone, "pods deleted by the recovery")

			evs := serviceEvents(t, ns, "rec")
			assert.True(t, hasEvent(evs, corev1.EventTypeWarning, "", "rec-engine-0-1"), "a Warning event names the failed pod")
			assert.True(t, hasEvent(evs, "", "BackOff", ""), "a BackOff event says when the next recreate may happen")
		})
	}
}

func uidSet(pods []corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		out[string(p.UID)] = true
	}
	return out
}

// hasEvent: an event of the type and reason ("" matches any) whose
// message contains msg.
func hasEvent(evs []corev1.Event, typ, reason, msg string) bool {
	for _, e := range evs {
		if (typ == "" || e.Type == typ) && (reason == "" || e.Reason == reason) && strings.Contains(e.Message, msg) {
			return true
		}
	}
	return false
}

var nextRecreate = regexp.MustCompile(`next recreate in ([0-9][0-9a-zµ.]*)`)

// With spec.engine.annotations {"kwok.berth.dev/fail": "true"} every pod
// of the service fails a second after it runs. The reconciler keeps
// recreating it with growing delays, visible as BackOff events on the
// service; each new pod carries the count so far in ome.io/recreate-count;
// the service is Degraded and not Ready.
func TestRecoveryBackoffGrows(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-backoff")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-backoff")).Obj())
	w := startPodWatch(t, ns)
	createService(t, MakeService(ns, "crash").Runtime(rt.Name).EngineAnnotations(map[string]string{failAnnot: "true"}).Obj())

	var delays []time.Duration
	waitEvents(t, ns, "crash", "three BackOff events", func(evs []corev1.Event) bool {
		delays = delays[:0]
		for _, e := range evs {
			if e.Reason != "BackOff" {
				continue
			}
			m := nextRecreate.FindStringSubmatch(e.Message)
			require.NotNil(t, m, "BackOff event without a delay: %q", e.Message)
			d, err := time.ParseDuration(m[1])
			require.NoError(t, err, "BackOff event %q", e.Message)
			delays = append(delays, d)
		}
		return len(delays) >= 3
	})
	for i := 1; i < len(delays); i++ {
		assert.GreaterOrEqual(t, delays[i], delays[i-1], "BackOff delays %v never shrink", delays)
	}
	assert.Greater(t, delays[len(delays)-1], delays[0], "BackOff delays %v grow", delays)

	waitService(t, ns, "crash", "Degraded=True and Ready=False", func(s *v1beta1.InferenceService) bool {
		return conditionIs(s, v1beta1.ConditionDegraded, metav1.ConditionTrue) && conditionIs(s, v1beta1.ConditionReady, metav1.ConditionFalse)
	})

	_, events, err := w.snapshot()
	require.NoError(t, err)
	var counts []string
	for _, p := range added(events) {
		assert.Equal(t, "crash-engine-0", p.Name, "only the one group's pod is ever created")
		assert.Equal(t, "true", p.Annotations[failAnnot], "pod %s carries spec.engine.annotations", p.Name)
		counts = append(counts, p.Annotations[v1beta1.AnnotationRecreateCount])
	}
	require.GreaterOrEqual(t, len(counts), 3, "pods created: %v", counts)
	assert.Equal(t, []string{"", "1", "2"}, counts[:3], "ome.io/recreate-count of the successive pods")
}
