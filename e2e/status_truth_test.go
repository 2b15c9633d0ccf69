package e2e

// Status that never lies (issue 21): a stuck rollout says so
// (progressDeadlineSeconds), a write the apiserver refuses reaches the
// service's status and one event, an object of the expected name the
// service does not control is never adopted, and ServingGroupRecreate
// recreates the whole group when one of its pods is deleted.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ProgressDeadline sets spec.progressDeadlineSeconds.
func (w *ServiceWrapper) ProgressDeadline(seconds int32) *ServiceWrapper {
	w.isvc.Spec.ProgressDeadlineSeconds = &seconds
	return w
}

// conditionWith: the condition has the status and reason, for the
// service's current generation.
func conditionWith(typ string, status metav1.ConditionStatus, reason string) func(*v1beta1.InferenceService) bool {
	return func(s *v1beta1.InferenceService) bool {
		c := condition(s, typ)
		return conditionIs(s, typ, status) && c.Reason == reason
	}
}

// getColumns is `kubectl get isvc <name>`'s READY and STATUS columns.
func getColumns(t *testing.T, ns, name string) (ready, status string) {
	t.Helper()
	out, err := kubectl(t, "", "get", "isvc", name, "-n", ns, "--no-headers",
		"-o", "custom-columns=READY:.status.ready,STATUS:.status.conditions[?(@.type==\"Ready\")].reason")
	require.NoError(t, err, out)
	f := strings.Fields(out)
	require.Len(t, f, 2, "kubectl get isvc %s: %q", name, out)
	return f[0], f[1]
}

// A roll to a revision whose pods can never be placed (a nodeSelector no
// node has) stops after maxUnavailable groups. Within the deadline the
// service serves on the old group and is Ready (RollingUpdate); once
// progressDeadlineSeconds pass without progress it is Progressing=False
// and Ready=False, both ProgressDeadlineExceeded, and `kubectl get isvc`
// says so. Fixing the spec rolls on and clears both.
func TestStuckRolloutExceedsProgressDeadline(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-stuck")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-stuck")).Obj())
	createService(t, MakeService(ns, "stuck").Runtime(rt.Name).MinMax(2, 2).Replicas(2).
		MaxUnavailable(intstr.FromInt32(1)).ProgressDeadline(15).Obj())
	waitService(t, ns, "stuck", "Ready=True with 2 groups", func(s *v1beta1.InferenceService) bool {
		return serviceReady(s) && s.Status.Components[v1beta1.ComponentEngine].ReadyReplicas == 2
	})

	updateService(t, ns, "stuck", func(s *v1beta1.InferenceService) {
		s.Spec.Engine.NodeSelector = map[string]string{"berth.dev/e2e-nowhere": "true"}
	})
	isvc := waitService(t, ns, "stuck", "Progressing=False reason ProgressDeadlineExceeded",
		conditionWith(v1beta1.ConditionProgressing, metav1.ConditionFalse, "ProgressDeadlineExceeded"))
	ready := condition(isvc, v1beta1.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status, "Ready once the deadline passed: %s", ready.Message)
	assert.Equal(t, "ProgressDeadlineExceeded", ready.Reason, "Ready reason: %s", ready.Message)
	assert.Equal(t, "1/2", isvc.Status.Ready)
	assert.Contains(t, condition(isvc, v1beta1.ConditionProgressing).Message, "15s", "the message names the deadline")
	col, st := getColumns(t, ns, "stuck")
	assert.Equal(t, "1/2", col, "READY column")
	assert.Equal(t, "ProgressDeadlineExceeded", st, "STATUS column")
	waitEvents(t, ns, "stuck", "a ProgressDeadlineExceeded Warning event", func(evs []corev1.Event) bool {
		return hasEvent(evs, corev1.EventTypeWarning, "ProgressDeadlineExceeded", "")
	})

	updateService(t, ns, "stuck", func(s *v1beta1.InferenceService) { s.Spec.Engine.NodeSelector = nil })
	isvc = waitService(t, ns, "stuck", "Ready=True AllGroupsReady after the fix",
		conditionWith(v1beta1.ConditionReady, metav1.ConditionTrue, "AllGroupsReady"))
	assert.NotEqual(t, "ProgressDeadlineExceeded", condition(isvc, v1beta1.ConditionProgressing).Reason)
	assert.Equal(t, "2/2", isvc.Status.Ready)
}

// Pod Security admission ("restricted", on the namespace) refuses every
// pod of the service (no securityContext): the service is Degraded=True
// reason FailedCreate quoting the apiserver, Ready=False with the same
// reason, `kubectl get isvc` shows READY and STATUS, and the retries make
// one event, not one per attempt. Without the label the service runs.
func TestRefusedCreateReachesStatus(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-refused")
	const enforce = "pod-security.kubernetes.io/enforce"
	out, err := kubectl(t, "", "label", "namespace", ns, enforce+"=restricted")
	require.NoError(t, err, out)
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-refused")).Obj())
	createService(t, MakeService(ns, "refused").Runtime(rt.Name).Obj())

	isvc := waitService(t, ns, "refused", "Degraded=True reason FailedCreate",
		conditionWith(v1beta1.ConditionDegraded, metav1.ConditionTrue, "FailedCreate"))
	deg := condition(isvc, v1beta1.ConditionDegraded)
	assert.Contains(t, deg.Message, "refused-engine-0", "names the pod")
	assert.Contains(t, deg.Message, `violates PodSecurity "restricted:latest"`, "quotes the apiserver")
	ready := condition(isvc, v1beta1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, "FailedCreate", ready.Reason)
	col, st := getColumns(t, ns, "refused")
	assert.Equal(t, "0/1", col, "READY column")
	assert.Equal(t, "FailedCreate", st, "STATUS column")

	time.Sleep(10 * time.Second) // several retries with backoff
	var n int32
	for _, e := range serviceEvents(t, ns, "refused") {
		if e.Reason == "FailedCreate" {
			n += max(e.Count, 1)
		}
	}
	assert.Equal(t, int32(1), n, "one FailedCreate event for one change of reason, not one per retry")

	out, err = kubectl(t, "", "label", "namespace", ns, enforce+"-")
	require.NoError(t, err, out)
	isvc = waitService(t, ns, "refused", "Ready=True once the namespace admits the pods", serviceReady)
	assert.Equal(t, metav1.ConditionFalse, condition(isvc, v1beta1.ConditionDegraded).Status)
}

// `kubectl delete isvc --cascade=orphan` leaves the pod and the Service
// behind, owned by nobody. The same service applied again does not adopt
// or count them: it is Degraded=True reason NameConflict naming them, its
// READY column is 0/1, and it does not announce creating a group it never
// creates. Once the leftovers are deleted it makes its own and is Ready.
func TestOrphanedObjectsAreNotAdopted(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-orphan")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-orphan")).Obj())
	svc := MakeService(ns, "orphan").Runtime(rt.Name).Obj()
	createService(t, svc)
	waitService(t, ns, "orphan", "Ready=True", serviceReady)
	before := waitPods(t, ns, "orphan", "one pod serving", podsNamed("orphan-engine-0"))

	out, err := kubectl(t, "", "delete", "isvc", "orphan", "-n", ns, "--cascade=orphan", "--wait=false")
	require.NoError(t, err, out)
	waitPods(t, ns, "orphan", "the pod orphaned (no owner)", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && pods[0].UID == before[0].UID && len(pods[0].OwnerReferences) == 0
	})
	waitFor(t, ns, "the Service orphaned (no owner)", func() bool {
		s, err := env.Kube.CoreV1().Services(ns).Get(ctxT(t, apiTimeout), "orphan", metav1.GetOptions{})
		return err == nil && len(s.OwnerReferences) == 0
	})
	waitServiceGone(t, ns, "orphan")
	crs, err := env.Kube.AppsV1().ControllerRevisions(ns).List(ctxT(t, apiTimeout), metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=orphan"})
	require.NoError(t, err)
	require.NotEmpty(t, crs.Items, "the service's recorded revisions")
	for _, cr := range crs.Items {
		assert.Empty(t, cr.OwnerReferences, "ControllerRevision %s orphaned", cr.Name)
	}

	createService(t, svc)
	isvc := waitService(t, ns, "orphan", "Degraded=True reason NameConflict",
		conditionWith(v1beta1.ConditionDegraded, metav1.ConditionTrue, "NameConflict"))
	deg := condition(isvc, v1beta1.ConditionDegraded)
	assert.Contains(t, deg.Message, "pod orphan-engine-0", "names the pod")
	assert.Contains(t, deg.Message, "Service orphan", "names the Service")
	assert.Equal(t, "0/1", isvc.Status.Ready, "a pod the service does not control is not counted")
	assert.Equal(t, metav1.ConditionFalse, condition(isvc, v1beta1.ConditionReady).Status)

	time.Sleep(5 * time.Second)
	pods := servicePods(t, ns, "orphan")
	require.Len(t, pods, 1)
	assert.Equal(t, before[0].UID, pods[0].UID, "the orphan was left alone")
	assert.Empty(t, pods[0].OwnerReferences, "the orphan was not adopted")
	for _, e := range serviceEvents(t, ns, "orphan") {
		if e.InvolvedObject.UID == isvc.UID {
			assert.NotEqual(t, "CreatingGroup", e.Reason, "the service never creates a group in an occupied name: %s (x%d)", e.Message, e.Count)
		}
	}

	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(ctxT(t, apiTimeout), "orphan-engine-0", metav1.DeleteOptions{}))
	err = env.Kube.CoreV1().Services(ns).Delete(ctxT(t, apiTimeout), "orphan", metav1.DeleteOptions{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
	isvc = waitService(t, ns, "orphan", "Ready=True with pods of its own", serviceReady)
	assert.Equal(t, metav1.ConditionFalse, condition(isvc, v1beta1.ConditionDegraded).Status)
	pods = waitPods(t, ns, "orphan", "its own pod serving", podsNamed("orphan-engine-0"))
	assert.True(t, metav1.IsControlledBy(&pods[0], isvc), "the new pod is the service's")
}

// waitServiceGone waits for an InferenceService deleted with
// --cascade=orphan to be gone. The garbage collector removes the orphan
// finalizer only once it orphaned every dependent; when one dependent
// cannot be orphaned (a ControllerRevision whose data the apiserver
// re-encodes on the GC's patch and then refuses as immutable), the
// service would stay for ever, so after a while the test says so in its
// log and removes the finalizer itself: the pods and Services, which this
// test is about, were orphaned already.
func waitServiceGone(t *testing.T, ns, name string) {
	t.Helper()
	bc := berthClient(t)
	waitFor(t, ns, "the service gone (the garbage collector orphaned its dependents, its ControllerRevisions included)", func() bool {
		_, err := bc.OmeV1beta1().InferenceServices(ns).Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// A worker of a leader+2-workers group is deleted: under
// ServingGroupRecreate the whole group is recreated (LeaderWorkerSet's
// RecreateGroupOnPodRestart), under RoleRecreate only the worker.
func TestDeletedPodRecreatesGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy    v1beta1.RecoveryPolicy
		recreated []string
	}{
		{v1beta1.RoleRecreate, []string{"del-engine-0-1"}},
		{v1beta1.ServingGroupRecreate, []string{"del-engine-0-0", "del-engine-0-1", "del-engine-0-2"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			ns := lifecycleNamespace(t, "e2e-delpod")
			rt := createRuntime(t, MakeRuntime(uniqueName("e2e-delpod")).MultiNode(2).Obj())
			createService(t, MakeService(ns, "del").Runtime(rt.Name).Recovery(tc.policy).Obj())
			waitService(t, ns, "del", "Ready=True", serviceReady)
			names := []string{"del-engine-0-0", "del-engine-0-1", "del-engine-0-2"}
			before := waitPods(t, ns, "del", "leader and workers serving", podsNamed(names...))
			w := startPodWatch(t, ns)

			require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(ctxT(t, apiTimeout), "del-engine-0-1", metav1.DeleteOptions{}))
			after := waitPods(t, ns, "del", "the group serving again", func(pods []corev1.Pod) bool {
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
			waitService(t, ns, "del", "Ready=True again", serviceReady)
			time.Sleep(3 * time.Second) // a wrong extra recreate would show now
			after = waitPods(t, ns, "del", "the group serving", podsNamed(names...))
			_, events, err := w.snapshot()
			require.NoError(t, err)
			var gone []string
			for _, p := range goneInOrder(events, uidSet(before)) {
				gone = append(gone, p.Name)
			}
			assert.ElementsMatch(t, tc.recreated, gone, "pods of the group deleted or recreated under %s", tc.policy)
			for _, n := range names {
				changed := podByName(after, n).UID != podByName(before, n).UID
				assert.Equal(t, contains(tc.recreated, n), changed, "pod %s recreated under %s", n, tc.policy)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A ResourceQuota that admits no pod: the service says QuotaExceeded (its
// own condition, retried on the quota's backoff) and, never seen before,
// still shows READY and a STATUS, not an empty status.
func TestQuotaRefusedServiceShowsStatus(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-noquota")
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
	_, err := env.Kube.CoreV1().ResourceQuotas(ns).Create(ctxT(t, apiTimeout), q, metav1.CreateOptions{})
	require.NoError(t, err)
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-noquota")).Obj())
	createService(t, MakeService(ns, "blocked").Runtime(rt.Name).Obj())
	isvc := waitService(t, ns, "blocked", "QuotaExceeded=True and a Ready condition", func(s *v1beta1.InferenceService) bool {
		return conditionIs(s, "QuotaExceeded", metav1.ConditionTrue) && condition(s, v1beta1.ConditionReady) != nil
	})
	assert.Equal(t, metav1.ConditionFalse, condition(isvc, v1beta1.ConditionReady).Status)
	col, st := getColumns(t, ns, "blocked")
	assert.Equal(t, "0/1", col, "READY column")
	assert.NotEmpty(t, st, "STATUS column")
}
