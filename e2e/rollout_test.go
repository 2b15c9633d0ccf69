package e2e

// Rolling updates (seed 003, ServingGroupRollingUpdate): a runtime edit
// changes the revision, and the reconciler rolls groups from the highest
// ordinal down, honouring partition and maxUnavailable. A pod watch runs
// throughout each roll, from the list's resourceVersion, and the checks
// are made over every moment it saw.

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

const e2eImageV2 = "registry.berth.dev/e2e/engine:v2"

// groupNames are <isvc>-engine-0 .. -(n-1).
func groupNames(isvc string, n int) []string {
	var out []string
	for g := 0; g < n; g++ {
		out = append(out, fmt.Sprintf("%s-engine-%d", isvc, g))
	}
	return out
}

// rolloutDone: the status is at a revision other than old, with updated
// groups updated, every group Ready, and nothing in progress.
func rolloutDone(old string, groups, updated int32) func(*v1beta1.InferenceService) bool {
	return func(s *v1beta1.InferenceService) bool {
		e, ok := s.Status.Components[v1beta1.ComponentEngine]
		return ok && e.Revision != "" && e.Revision != old && e.UpdatedReplicas == updated && e.ReadyReplicas == groups &&
			e.Replicas == groups && serviceReady(s) && conditionIs(s, v1beta1.ConditionProgressing, metav1.ConditionFalse)
	}
}

// groupsOf returns the group ordinals of pods, in their order.
func groupsOf(pods []*corev1.Pod) []int {
	var out []int
	for _, p := range pods {
		id, _ := identity(p)
		out = append(out, id.group)
	}
	return out
}

// assertHighestFirst: a group deleted at least maxUnavailable places
// before another has the higher ordinal (with maxUnavailable 1: strictly
// descending; groups deleted in one step may come in either order).
func assertHighestFirst(t *testing.T, order []int, maxUnavailable int) {
	t.Helper()
	for i := range order {
		for j := i + maxUnavailable; j < len(order); j++ {
			assert.Greater(t, order[i], order[j], "deletion order %v: group %d went before group %d", order, order[i], order[j])
		}
	}
}

// Editing the runtime's image rolls every group to the new revision,
// highest ordinal first, never more than maxUnavailable groups down; with
// partition 2 of 4 only groups 2 and 3 change.
func TestRollingUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		maxUnavailable int
		partition      int
		rolled         []int // groups that change, highest first
	}{
		{"maxUnavailable 1", 1, 0, []int{3, 2, 1, 0}},
		{"maxUnavailable 2", 2, 0, []int{3, 2, 1, 0}},
		{"partition 2 of 4", 1, 2, []int{3, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const groups = 4
			ns := lifecycleNamespace(t, "e2e-roll")
			rt := createRuntime(t, MakeRuntime(uniqueName("e2e-roll")).Obj())
			svc := MakeService(ns, "roll").Runtime(rt.Name).MinMax(groups, groups).Replicas(groups).
				MaxUnavailable(intstr.FromInt32(int32(tc.maxUnavailable)))
			if tc.partition > 0 {
				svc.Partition(intstr.FromInt32(int32(tc.partition)))
			}
			createService(t, svc.Obj())
			isvc := waitService(t, ns, "roll", "Ready=True with 4 groups", func(s *v1beta1.InferenceService) bool {
				return serviceReady(s) && s.Status.Components[v1beta1.ComponentEngine].ReadyReplicas == groups
			})
			oldRev := isvc.Status.Components[v1beta1.ComponentEngine].Revision
			before := waitPods(t, ns, "roll", "4 groups serving", podsNamed(groupNames("roll", groups)...))
			oldUIDs := map[string]bool{}
			for _, p := range before {
				assert.Equal(t, oldRev, p.Annotations[v1beta1.AnnotationRevision], "pod %s before the roll", p.Name)
				oldUIDs[string(p.UID)] = true
			}

			shape := groupShape{component: v1beta1.ComponentEngine, groups: groups, size: 1}
			w := startPodWatch(t, ns)
			updateRuntime(t, rt.Name, setRuntimeImage(e2eImageV2))
			isvc = waitService(t, ns, "roll", fmt.Sprintf("rolled: %d groups at a new revision, all Ready, not Progressing", len(tc.rolled)),
				rolloutDone(oldRev, groups, int32(len(tc.rolled))))
			newRev := isvc.Status.Components[v1beta1.ComponentEngine].Revision
			after := waitPods(t, ns, "roll", "4 groups serving", podsNamed(groupNames("roll", groups)...))

			// The pods: rolled groups new, the others untouched.
			rolled := map[int]bool{}
			for _, g := range tc.rolled {
				rolled[g] = true
			}
			for g, name := range groupNames("roll", groups) {
				p, old := podByName(after, name), podByName(before, name)
				if rolled[g] {
					assert.NotEqual(t, old.UID, p.UID, "group %d was recreated", g)
					assert.Equal(t, newRev, p.Annotations[v1beta1.AnnotationRevision], "group %d revision", g)
					assert.Equal(t, e2eImageV2, p.Spec.Containers[0].Image, "group %d image", g)
				} else {
					assert.Equal(t, old.UID, p.UID, "group %d is below the partition and kept", g)
					assert.Equal(t, oldRev, p.Annotations[v1beta1.AnnotationRevision], "group %d revision", g)
					assert.Equal(t, e2eImage, p.Spec.Containers[0].Image, "group %d image", g)
				}
			}

			// What the watch saw: which groups went and in what order,
			// what was created, and the most groups down at once.
			_, events, err := w.snapshot()
			require.NoError(t, err)
			order := groupsOf(goneInOrder(events, oldUIDs))
			got := append([]int(nil), order...)
			sort.Sort(sort.Reverse(sort.IntSlice(got)))
			assert.Equal(t, tc.rolled, got, "groups deleted (in watch order: %v)", order)
			assertHighestFirst(t, order, tc.maxUnavailable)
			var created []string
			for _, p := range added(events) {
				created = append(created, p.Name)
				assert.Equal(t, newRev, p.Annotations[v1beta1.AnnotationRevision], "pod %s created during the roll", p.Name)
			}
			sort.Strings(created)
			var want []string
			for _, g := range tc.rolled {
				want = append(want, fmt.Sprintf("roll-engine-%d", g))
			}
			sort.Strings(want)
			assert.Equal(t, want, created, "pods created during the roll, once each")
			most, at := w.maxUnavailable(t, shape)
			assert.LessOrEqual(t, most, tc.maxUnavailable, "at most maxUnavailable groups unavailable at any moment; worst: %s", at)
			assert.GreaterOrEqual(t, most, 1, "a roll deletes before it creates, so the watch must have seen a group down (is it blind?)")
			t.Logf("deletion order %v, at most %d group(s) unavailable (%s)", order, most, strings.TrimSpace(at))
		})
	}
}
