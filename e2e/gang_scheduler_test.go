package e2e

// The local control plane's second scheduler (internal/devenv/gang:
// scheduler-plugins with Coscheduling) places a PodGroup all or nothing.
// No berth component is involved: plain pods, a PodGroup and kwok nodes.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"

	"github.com/berthdev/berth/internal/devenv/gang"
	"github.com/berthdev/berth/internal/fleet"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

const (
	// gangNodeLabel marks the nodes of one gang test (value: a random
	// suffix); the test's pods select it and tolerate gangNodeTaint, so no
	// other test's pod lands on these nodes and no gang pod elsewhere.
	gangNodeLabel = "berth.dev/e2e-gang"
	gangNodeTaint = "berth.dev/e2e-gang"
	// gangSettle is how long nothing of a gang that does not fit may bind:
	// longer than Coscheduling's Permit wait, so the members that fit have
	// been held and then rejected at least once.
	gangSettle = 15 * time.Second
	// gangBind is how long a gang that fits may take to bind, including
	// the members' backoff after their rejections.
	gangBind = 60 * time.Second
)

// Four pods that each need a whole 8-GPU node, on three such nodes: the
// default scheduler binds three and leaves one Pending (the control, which
// proves only three fit); as a Coscheduling PodGroup of minMember 4 under
// the second scheduler none binds, until a fourth node comes and all four
// bind. Without the second scheduler running, its pods are never looked at
// (no PodScheduled condition) and never bind; without Coscheduling, three
// would bind before the fourth node.
func TestGangScheduler(t *testing.T) {
	t.Parallel()
	t.Run("default scheduler binds the three that fit", func(t *testing.T) {
		t.Parallel()
		set := createGangNodes(t, 3)
		ns := e2eutil.Namespace(t, env.Kube, "e2e-gang-control")
		pods := createGangPods(t, ns, func(i int) *corev1.Pod { return gangPod(ns, fmt.Sprintf("w-%d", i), set).Obj() })
		bound := waitBound(t, ns, pods, 3, gangBind)
		assert.Len(t, bound, 3)
		// The fourth stays Pending, Unschedulable, while the three run.
		time.Sleep(3 * time.Second)
		bound, last := boundPods(t, ns, pods)
		assert.Len(t, bound, 3, "exactly three of four 8-GPU pods fit on three 8-GPU nodes")
		for _, p := range last {
			if p.Spec.NodeName == "" {
				assert.True(t, unschedulable(p), "pod %s: Pending without PodScheduled=False/Unschedulable: %v", p.Name, p.Status.Conditions)
			}
		}
	})
	t.Run("coscheduling binds the PodGroup all or nothing", func(t *testing.T) {
		t.Parallel()
		set := createGangNodes(t, 3)
		ns := e2eutil.Namespace(t, env.Kube, "e2e-gang")
		group := "gang-" + set
		createCoschedulingPodGroup(t, ns, group, 4)
		pods := createGangPods(t, ns, func(i int) *corev1.Pod {
			return gangPod(ns, fmt.Sprintf("w-%d", i), set).Scheduler(gang.SchedulerName).Label(gang.PodGroupLabel, group).Obj()
		})

		// Nothing binds while only three fit; the scheduler did look at
		// them (a scheduler that is not running sets no condition).
		deadline := time.Now().Add(gangSettle)
		var last []*corev1.Pod
		for time.Now().Before(deadline) {
			var bound []string
			bound, last = boundPods(t, ns, pods)
			require.Empty(t, bound, "members of a PodGroup of minMember 4 were bound while only 3 of them fit")
			time.Sleep(500 * time.Millisecond)
		}
		require.True(t, slices.ContainsFunc(last, unschedulable),
			"after %s no pod has PodScheduled=False/Unschedulable: is %s running? %s", gangSettle, gang.SchedulerName, podConditions(last))

		createGangNodes(t, 1, set)
		bound := waitBound(t, ns, pods, 4, gangBind)
		assert.Len(t, bound, 4)
		nodes := map[string]bool{}
		for _, n := range bound {
			nodes[n] = true
		}
		assert.Len(t, nodes, 4, "each member needs a whole node: %v", bound)
		// The PodGroup controller counts the members kwok runs.
		waitPodGroupPhase(t, ns, group, "Running", gangBind)
	})
}

// ---------------------------------------------------------------------------
// Builders

// gangPod is a pod that needs a whole 8-GPU node of one gang test's node
// set (nodeSelector and toleration), under the default scheduler unless
// told otherwise.
func gangPod(ns, name, set string) *wrappers.PodWrapper {
	return wrappers.MakePod(ns, name).Container("worker", e2eImage).GPUs("nvidia.com/gpu", 8).NodeSelector(gangNodeLabel, set).
		Toleration(corev1.Toleration{Key: gangNodeTaint, Operator: corev1.TolerationOpEqual, Value: set, Effect: corev1.TaintEffectNoSchedule})
}

// gangNode is a kwok H100 node with 8 free nvidia.com/gpu, as the fleet's
// h100 pool makes one, in node set set: labelled and tainted so only the
// set's pods land on it.
func gangNode(name, set string) *corev1.Node {
	pool := fleet.Pool{Name: name, Count: 1, Labels: map[string]string{
		"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.count": "8",
		"nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.family": "hopper",
		gangNodeLabel: set,
	}, Allocatable: map[string]string{"cpu": "208", "memory": "2Ti", "pods": "110", "nvidia.com/gpu": "8"}}
	n := (&fleet.Fleet{Pools: []fleet.Pool{pool}}).Nodes()[0]
	n.Name, n.Labels["kubernetes.io/hostname"] = name, name
	n.Spec.Taints = []corev1.Taint{{Key: gangNodeTaint, Value: set, Effect: corev1.TaintEffectNoSchedule}}
	return &n
}

// ---------------------------------------------------------------------------
// Steps

// createGangNodes creates n Ready gang nodes in node set set (a new one
// when set is not given) and deletes them when the test ends; it returns
// the set.
func createGangNodes(t *testing.T, n int, set ...string) string {
	t.Helper()
	s := rand.String(5)
	if len(set) > 0 {
		s = set[0]
	}
	ctx := ctxT(t, 2*time.Minute)
	var names []string
	for range n {
		node := gangNode("e2e-gang-"+s+"-"+rand.String(4), s)
		_, err := env.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		require.NoError(t, err)
		names = append(names, node.Name)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
			defer cancel()
			assert.NoError(t, env.Kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}), "delete node %s", node.Name)
		})
	}
	require.NoError(t, fleet.WaitReady(ctx, env.Kube, names, time.Minute))
	return s
}

// createGangPods creates the four pods build returns and their names.
func createGangPods(t *testing.T, ns string, build func(i int) *corev1.Pod) []string {
	t.Helper()
	ctx := ctxT(t, apiTimeout)
	var names []string
	for i := range 4 {
		p, err := env.Kube.CoreV1().Pods(ns).Create(ctx, build(i), metav1.CreateOptions{})
		require.NoError(t, err)
		names = append(names, p.Name)
	}
	return names
}

// createCoschedulingPodGroup creates a scheduling.x-k8s.io PodGroup.
func createCoschedulingPodGroup(t *testing.T, ns, name string, minMember int64) {
	t.Helper()
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gang.CoschedulingPodGroupGVR.GroupVersion().String(),
		"kind":       "PodGroup",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"minMember": minMember},
	}}
	_, err := gangDynamic(t).Resource(gang.CoschedulingPodGroupGVR).Namespace(ns).Create(ctxT(t, apiTimeout), pg, metav1.CreateOptions{})
	require.NoError(t, err)
}

func gangDynamic(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(env.Cluster.RESTConfig())
	require.NoError(t, err)
	return d
}

// boundPods returns the nodes of the named pods that are bound, and every
// named pod as last read.
func boundPods(t *testing.T, ns string, names []string) (nodes []string, pods []*corev1.Pod) {
	t.Helper()
	ctx := ctxT(t, apiTimeout)
	for _, n := range names {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err)
		pods = append(pods, p)
		if p.Spec.NodeName != "" {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	return nodes, pods
}

// waitBound polls until want of the named pods are bound and returns their
// nodes; on timeout it fails with every pod's conditions.
func waitBound(t *testing.T, ns string, names []string, want int, timeout time.Duration) []string {
	t.Helper()
	var pods []*corev1.Pod
	return e2eutil.Poll(t, timeout, fmt.Sprintf("%d of the %d pods bound", want, len(names)),
		func(context.Context) ([]string, error) {
			var nodes []string
			nodes, pods = boundPods(t, ns, names)
			return nodes, nil
		}, func(nodes []string) bool { return len(nodes) >= want },
		func(nodes []string) string { return fmt.Sprintf("%d bound: %s", len(nodes), podConditions(pods)) })
}

// waitPodGroupPhase polls the Coscheduling PodGroup until status.phase is
// phase.
func waitPodGroupPhase(t *testing.T, ns, name, phase string, timeout time.Duration) {
	t.Helper()
	ctx := ctxT(t, timeout+apiTimeout)
	deadline := time.Now().Add(timeout)
	var got string
	for time.Now().Before(deadline) {
		pg, err := gangDynamic(t).Resource(gang.CoschedulingPodGroupGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		got, _, _ = unstructured.NestedString(pg.Object, "status", "phase")
		if got == phase {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	assert.Failf(t, "PodGroup phase", "PodGroup %s/%s: status.phase %q after %s, want %q (is scheduler-plugins-controller running?)", ns, name, got, timeout, phase)
}

// unschedulable: a scheduler tried the pod and found no room (or held it
// and gave up): PodScheduled=False, reason Unschedulable.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

func podConditions(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		var conds []string
		for _, c := range p.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
		out = append(out, fmt.Sprintf("%s on %q [%s]", p.Name, p.Spec.NodeName, strings.Join(conds, "; ")))
	}
	return strings.Join(out, "\n")
}
