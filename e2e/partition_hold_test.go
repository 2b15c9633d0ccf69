package e2e

// Partitions hold: a group below the partition that loses its pod (deleted,
// or failed and recovered) comes back at the revision it ran, from the
// template the reconciler recorded in a ControllerRevision, not at the new
// revision of the canary. When that record is gone, the group comes back
// at the new revision and an Event says why.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// replaced waits until the pod name is serving under another UID than
// old's, with every group's pod serving, and returns it.
func replaced(t *testing.T, ns, svc string, groups int, old *corev1.Pod) *corev1.Pod {
	t.Helper()
	pods := waitPods(t, ns, svc, fmt.Sprintf("%s recreated and serving", old.Name), func(pods []corev1.Pod) bool {
		p := podByName(pods, old.Name)
		return p != nil && p.UID != old.UID && podsNamed(groupNames(svc, groups)...)(pods)
	})
	return podByName(pods, old.Name)
}

// assertSameComposition: what the webhook composed for was, and what the
// reconciler restored into got, run the same containers.
func assertSameComposition(t *testing.T, was, got *corev1.Pod) {
	t.Helper()
	require.Len(t, got.Spec.Containers, len(was.Spec.Containers), "containers of %s", got.Name)
	for i, w := range was.Spec.Containers {
		g := got.Spec.Containers[i]
		assert.Equal(t, w.Name, g.Name)
		assert.Equal(t, w.Image, g.Image, "container %s image", w.Name)
		assert.Equal(t, w.Command, g.Command, "container %s command", w.Name)
		assert.Equal(t, w.Args, g.Args, "container %s args", w.Name)
		assert.Equal(t, w.Env, g.Env, "container %s env", w.Name)
		assert.Equal(t, w.Resources, g.Resources, "container %s resources", w.Name)
	}
	assert.Equal(t, was.Spec.NodeSelector, got.Spec.NodeSelector, "nodeSelector")
	assert.Equal(t, was.Labels[v1beta1.LabelGroupIndex], got.Labels[v1beta1.LabelGroupIndex], "group index")
}

func TestPartitionHolds(t *testing.T) {
	t.Parallel()
	const groups = 3
	ns := lifecycleNamespace(t, "e2e-hold")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-hold")).Obj())
	createService(t, MakeService(ns, "hold").Runtime(rt.Name).MinMax(groups, groups).Replicas(groups).
		Partition(intstr.FromInt32(2)).Obj())
	isvc := waitService(t, ns, "hold", "Ready=True with 3 groups", func(s *v1beta1.InferenceService) bool {
		return serviceReady(s) && s.Status.Components[v1beta1.ComponentEngine].ReadyReplicas == groups
	})
	oldRev := isvc.Status.Components[v1beta1.ComponentEngine].Revision
	before := waitPods(t, ns, "hold", "3 groups serving", podsNamed(groupNames("hold", groups)...))

	// The canary: group 2 rolls to the new image, groups 0 and 1 hold.
	updateRuntime(t, rt.Name, setRuntimeImage(e2eImageV2))
	isvc = waitService(t, ns, "hold", "group 2 at the new revision, all Ready", rolloutDone(oldRev, groups, 1))
	newRev := isvc.Status.Components[v1beta1.ComponentEngine].Revision

	// A protected group whose pod is deleted (a drain, a person) comes back
	// at its own revision.
	victim := podByName(before, "hold-engine-0")
	require.NotNil(t, victim)
	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(ctxT(t, apiTimeout), victim.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}}))
	back := replaced(t, ns, "hold", groups, victim)
	assert.Equal(t, oldRev, back.Annotations[v1beta1.AnnotationRevision], "group 0 is below the partition: it comes back at its revision")
	assert.Equal(t, e2eImage, back.Spec.Containers[0].Image, "group 0 keeps the old image")
	assertSameComposition(t, victim, back)

	// Each revision's templates are recorded, owned by the service.
	for _, rev := range []string{oldRev, newRev} {
		name := fmt.Sprintf("hold-engine-%s", rev)
		cr, err := env.Kube.AppsV1().ControllerRevisions(ns).Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
		require.NoError(t, err, "ControllerRevision %s of revision %s", name, rev)
		assert.True(t, metav1.IsControlledBy(cr, isvc), "ControllerRevision %s is controlled by the service", name)
	}

	// A protected group whose pod fails is recovered (RoleRecreate) at its
	// own revision too.
	failing := podByName(before, "hold-engine-1")
	require.NotNil(t, failing)
	out, err := kubectl(t, "", "annotate", "pod", failing.Name, "-n", ns, failAnnot+"=true")
	require.NoError(t, err, out)
	back = replaced(t, ns, "hold", groups, failing)
	assert.Equal(t, oldRev, back.Annotations[v1beta1.AnnotationRevision], "group 1 is recovered at its revision")
	assert.Equal(t, e2eImage, back.Spec.Containers[0].Image, "group 1 keeps the old image")
	assertSameComposition(t, failing, back)

	// The service is still mid-canary: one group updated, nothing rolled.
	isvc = waitService(t, ns, "hold", "still one group updated", rolloutDone(oldRev, groups, 1))
	assert.Equal(t, newRev, isvc.Status.Components[v1beta1.ComponentEngine].Revision)

	// Without its record (deleted by hand here; the history limit does the
	// same) a protected group comes back at the new revision, and an Event
	// says so, naming the revision.
	crName := fmt.Sprintf("hold-engine-%s", oldRev)
	require.NoError(t, env.Kube.AppsV1().ControllerRevisions(ns).Delete(ctxT(t, apiTimeout), crName, metav1.DeleteOptions{}))
	victim = podByName(servicePods(t, ns, "hold"), "hold-engine-0")
	require.NotNil(t, victim)
	uid := types.UID(victim.UID)
	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(ctxT(t, apiTimeout), victim.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
	back = replaced(t, ns, "hold", groups, victim)
	assert.Equal(t, newRev, back.Annotations[v1beta1.AnnotationRevision], "without a record, today's behaviour: the current revision")
	waitEvents(t, ns, "hold", "a Warning naming the missing revision", func(evs []corev1.Event) bool {
		for _, e := range evs {
			if e.Type == corev1.EventTypeWarning && e.Reason == "RevisionNotRecorded" && strings.Contains(e.Message, oldRev) {
				return true
			}
		}
		return false
	})
}

// A protected multi-node group that loses a worker mid-canary gets it back
// at the group's revision, with its own identity: name, hostname, labels
// and the group env (leader address, group size, worker index) of that
// worker, as the webhook composed it before.
func TestPartitionHoldsMultiNode(t *testing.T) {
	t.Parallel()
	const groups = 2
	ns := lifecycleNamespace(t, "e2e-holdmn")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-holdmn")).MultiNode(2).Obj())
	createService(t, MakeService(ns, "mn").Runtime(rt.Name).MinMax(groups, groups).Replicas(groups).
		Partition(intstr.FromInt32(1)).Obj())
	names := []string{"mn-engine-0-0", "mn-engine-0-1", "mn-engine-0-2", "mn-engine-1-0", "mn-engine-1-1", "mn-engine-1-2"}
	isvc := waitService(t, ns, "mn", "Ready=True with 2 groups", func(s *v1beta1.InferenceService) bool {
		return serviceReady(s) && s.Status.Components[v1beta1.ComponentEngine].ReadyReplicas == groups
	})
	oldRev := isvc.Status.Components[v1beta1.ComponentEngine].Revision
	before := waitPods(t, ns, "mn", "2 groups of 3 serving", podsNamed(names...))

	updateRuntime(t, rt.Name, setRuntimeImage(e2eImageV2))
	waitService(t, ns, "mn", "group 1 at the new revision, all Ready", rolloutDone(oldRev, groups, 1))

	victim := podByName(before, "mn-engine-0-2")
	require.NotNil(t, victim)
	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(ctxT(t, apiTimeout), victim.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}}))
	pods := waitPods(t, ns, "mn", "worker 2 of group 0 recreated, all serving", func(pods []corev1.Pod) bool {
		p := podByName(pods, victim.Name)
		return p != nil && p.UID != victim.UID && podsNamed(names...)(pods)
	})
	back := podByName(pods, victim.Name)
	assert.Equal(t, oldRev, back.Annotations[v1beta1.AnnotationRevision], "the worker comes back at its group's revision")
	assertSameComposition(t, victim, back)
	assert.Equal(t, victim.Spec.Hostname, back.Spec.Hostname)
	assert.Equal(t, victim.Spec.Subdomain, back.Spec.Subdomain)
	for _, k := range []string{v1beta1.LabelRole, v1beta1.LabelWorkerIndex, "component", "leaderworkerset.sigs.k8s.io/worker-index"} {
		assert.Equal(t, victim.Labels[k], back.Labels[k], "label %s", k)
	}
	for _, name := range names[:2] {
		p, old := podByName(pods, name), podByName(before, name)
		assert.Equal(t, old.UID, p.UID, "%s of the protected group is kept", name)
	}
}
