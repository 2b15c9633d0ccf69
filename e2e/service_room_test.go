package e2e

// Room for the whole service (issue 21, item 7): a class "has room" when
// its free accelerators cover the service's groups × pods per group ×
// accelerators per pod, not one pod. Two kwok nodes of the test's own,
// each the only node of a class of the test's own (no product label, so
// no shipped class matches them and no other test's GPU pod lands there):
// "small" has 4 nvidia.com/gpu, "big" 8.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/fleet"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

// roomNodeLabel marks the nodes of one room test (value: <set>-<class>).
const roomNodeLabel = "e2e.berth.dev/room"

// createRoomClass creates a kwok node with gpus nvidia.com/gpu labelled
// roomNodeLabel=value and an AcceleratorClass of that node alone; both are
// deleted when the test ends.
func createRoomClass(t *testing.T, value string, gpus int) string {
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	pool := fleet.Pool{Name: "e2e-room-" + value, Count: 1, Labels: map[string]string{roomNodeLabel: value},
		Allocatable: map[string]string{"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": itoaE2E(gpus)}}
	n := (&fleet.Fleet{Pools: []fleet.Pool{pool}}).Nodes()[0]
	n.Name, n.Labels["kubernetes.io/hostname"] = "e2e-room-"+value, "e2e-room-"+value
	_, err := env.Kube.CoreV1().Nodes().Create(ctx, &n, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		assert.NoError(t, env.Kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}), "delete node %s", n.Name)
	})
	require.NoError(t, fleet.WaitReady(ctx, env.Kube, []string{n.Name}, time.Minute))

	cl := wrappers.MakeAcceleratorClass("e2e-room-"+value).Vendor("nvidia").NodeSelector(roomNodeLabel, value).
		Memory("80Gi").ResourceQuantity("nvidia.com/gpu", "1").Obj()
	bc := berthClient(t)
	require.NoError(t, retryWebhook(ctx, func() error {
		_, err := bc.OmeV1beta1().AcceleratorClasses().Create(ctx, cl, metav1.CreateOptions{})
		return err
	}), "create AcceleratorClass %s", cl.Name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		_ = bc.OmeV1beta1().AcceleratorClasses().Delete(ctx, cl.Name, metav1.DeleteOptions{})
	})
	return cl.Name
}

func itoaE2E(n int) string { return resource.NewQuantity(int64(n), resource.DecimalSI).String() }

// A service of 6 one-GPU groups that prefers "small" (4 GPUs free) gets
// "big" (8 free), and all 6 engine pods are bound there. A service pinned
// to "small" by ome.io/accelerator-class is admitted with a warning that
// gives the numbers, and its decision says the class has no room now.
func TestServiceRoomCountsEveryGroup(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-room")
	set := rand.String(5)
	small := createRoomClass(t, set+"-small", 4)
	big := createRoomClass(t, set+"-big", 8)
	rt := MakeRuntime(uniqueName("e2e-room")).GPUs(1).Obj()
	rt.Spec.AcceleratorRequirements = &v1beta1.AcceleratorRequirements{SupportedClasses: []string{small, big}}
	rt = createRuntime(t, rt)

	// Preferring small: small has room for 4 of the 6 pods, big for all.
	svc := MakeService(ns, "six").Runtime(rt.Name).Replicas(6).Obj()
	svc.Spec.AcceleratorSelector = &v1beta1.AcceleratorSelector{PreferredClasses: []string{small, big}}
	// The webhook's informers may not have both nodes yet: wait until a
	// dry run sees big with room.
	admittedDryRun(t, svc, func(s *v1beta1.InferenceService) bool {
		return strings.Contains(s.Annotations[v1beta1.AnnotationDecision], "(has room now)")
	})
	got, err, warnings := createUntil(t, svc, false, admitted)
	require.NoError(t, err)
	decision := got.Annotations[v1beta1.AnnotationDecision]
	t.Logf("decision:\n%s\nwarnings: %q", decision, warnings)
	require.Equal(t, big, classOf(got), "6 groups × 1 pod × 1 GPU fit only on %s", big)
	assert.Contains(t, decision, "AcceleratorClass "+big+" (has room now)")
	assert.Contains(t, decision, "AcceleratorClass/"+small+": fits, but its ready nodes lack 6 group(s) × 1 pod(s) × 1 nvidia.com/gpu (4 of 4 nvidia.com/gpu free on 1 Ready node); "+big+" has room")

	// Every group is scheduled: 6 engine pods bound to big's node.
	waitFor(t, ns, "6 engine pods bound to e2e-room-"+set+"-big", func() bool {
		pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=six"})
		if err != nil {
			return false
		}
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "e2e-room-"+set+"-big" && p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 6
	})

	// Pinned to small: admitted, with the numbers.
	pinned := MakeService(ns, "pinned").Runtime(rt.Name).Replicas(6).Obj()
	pinned.Annotations = map[string]string{v1beta1.AnnotationAcceleratorClass: small}
	got, err, warnings = createUntil(t, pinned, false, admitted)
	require.NoError(t, err)
	t.Logf("pinned decision:\n%s\nwarnings: %q", got.Annotations[v1beta1.AnnotationDecision], warnings)
	assert.Equal(t, small, classOf(got))
	assert.Contains(t, got.Annotations[v1beta1.AnnotationDecision], "AcceleratorClass "+small+" (no room now)")
	assert.Contains(t, strings.Join(warnings, "\n"),
		"AcceleratorClass "+small+" currently has no room: its ready nodes lack 6 group(s) × 1 pod(s) × 1 nvidia.com/gpu (4 of 4 nvidia.com/gpu free on 1 Ready node); the service will wait for capacity")
}
