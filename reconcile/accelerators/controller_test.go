package accelerators

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

var accT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// accClass builds an AcceleratorClass for the status tests.
type accClass struct{ c *v1beta1.AcceleratorClass }

func makeAccClass(name string) accClass {
	return accClass{&v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 3},
		Spec: v1beta1.AcceleratorClassSpec{Vendor: "nvidia", Discovery: v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{"pool": name}}}}}
}
func (b accClass) model(m string) accClass { b.c.Spec.Model = m; return b }
func (b accClass) selector(k, v string) accClass {
	b.c.Spec.Discovery.NodeSelector = map[string]string{k: v}
	return b
}
func (b accClass) Obj() *v1beta1.AcceleratorClass { return b.c }

// accNode builds a kwok-like node.
type accNode struct{ n *corev1.Node }

func makeAccNode(name string) accNode {
	return accNode{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}}
}
func (b accNode) label(k, v string) accNode { b.n.Labels[k] = v; return b }
func (b accNode) gpus(r string, n int64) accNode {
	b.n.Status.Allocatable[corev1.ResourceName(r)] = *resource.NewQuantity(n, resource.DecimalSI)
	return b
}
func (b accNode) cordoned() accNode        { b.n.Spec.Unschedulable = true; return b }
func (b accNode) Obj() *corev1.Node        { return b.n }
func (b accNode) Info() selection.NodeInfo { return selection.NodeInfoOf(b.n) }
func gpuPod(name, node string, n int64) *corev1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": q}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func cond(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(accT0)}
}

func TestClassStatus(t *testing.T) {
	h100 := "NVIDIA-H100-80GB-HBM3"
	tests := []struct {
		name  string
		class *v1beta1.AcceleratorClass
		avail selection.ClassAvailability
		want  v1beta1.AcceleratorClassStatus
	}{
		{
			name:  "ready nodes of the model",
			class: makeAccClass("h100").model("h100").Obj(),
			avail: selection.ClassAvailability{Resource: "nvidia.com/gpu", Nodes: []string{"h1", "h2"}, Total: 16, Available: 10, Matching: 3, Products: map[string]int{h100: 3}},
			want: v1beta1.AcceleratorClassStatus{Nodes: []string{"h1", "h2"}, AvailableNodes: 2, TotalAccelerators: 16, AvailableAccelerators: 10,
				Conditions: []metav1.Condition{
					cond(ClassReady, metav1.ConditionTrue, ReasonNodesReady, "2 Ready node(s) with 16 nvidia.com/gpu, 10 free"),
					cond(ClassSelectorTooBroad, metav1.ConditionFalse, ReasonOneProduct, "matching nodes are model h100: NVIDIA-H100-80GB-HBM3 (3 node(s))"),
				}},
		},
		{
			name:  "matching nodes, none Ready; another model among them",
			class: makeAccClass("a10").model("a10").Obj(),
			avail: selection.ClassAvailability{Resource: "nvidia.com/gpu", Matching: 2, Products: map[string]int{"NVIDIA-A10": 1, "NVIDIA-A100-PCIE-40GB": 1}},
			want: v1beta1.AcceleratorClassStatus{Conditions: []metav1.Condition{
				cond(ClassReady, metav1.ConditionFalse, ReasonNoReadyNodes, "discovery matches 2 node(s), none Ready and schedulable"),
				cond(ClassSelectorTooBroad, metav1.ConditionTrue, ReasonOtherModel, "discovery matches nodes of another model than spec.model a10: NVIDIA-A100-PCIE-40GB (1 node(s)); narrow spec.discovery.nodeSelector, e.g. to its product label"),
			}},
		},
		{
			name:  "no model and two products",
			class: makeAccClass("large").Obj(),
			avail: selection.ClassAvailability{Resource: "nvidia.com/gpu", Nodes: []string{"a", "b"}, Total: 16, Available: 16, Matching: 2, Products: map[string]int{h100: 1, "NVIDIA-H200": 1}},
			want: v1beta1.AcceleratorClassStatus{Nodes: []string{"a", "b"}, AvailableNodes: 2, TotalAccelerators: 16, AvailableAccelerators: 16, Conditions: []metav1.Condition{
				cond(ClassReady, metav1.ConditionTrue, ReasonNodesReady, "2 Ready node(s) with 16 nvidia.com/gpu, 16 free"),
				cond(ClassSelectorTooBroad, metav1.ConditionTrue, ReasonMixedProducts, "discovery matches nodes of 2 products: NVIDIA-H100-80GB-HBM3 (1 node(s)), NVIDIA-H200 (1 node(s)); the class's capabilities cannot describe them all"),
			}},
		},
		{
			name:  "no node at all",
			class: makeAccClass("none").Obj(),
			avail: selection.ClassAvailability{Resource: "amd.com/gpu", Products: map[string]int{}},
			want: v1beta1.AcceleratorClassStatus{Conditions: []metav1.Condition{
				cond(ClassReady, metav1.ConditionFalse, ReasonNoMatchingNodes, "discovery (spec.discovery and spec.nodeSelector) matches no node"),
				cond(ClassSelectorTooBroad, metav1.ConditionFalse, ReasonNoProductLabels, "no matching node carries a product label (nvidia.com/gpu.product, amd.com/gpu.product, gpu.intel.com/product)"),
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := classStatus(tt.class, tt.avail, accT0)
			require.True(t, changed)
			tt.want.LastUpdated = ptrTime(accT0)
			assert.Equal(t, tt.want, got)

			// The same counts later: nothing to write, lastUpdated stays.
			c := tt.class.DeepCopy()
			c.Status = got
			again, changed := classStatus(c, tt.avail, accT0.Add(time.Hour))
			assert.False(t, changed)
			assert.Equal(t, got, again)
		})
	}
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func TestClassStatusKeepsOtherConditionsAndTransitionTimes(t *testing.T) {
	c := makeAccClass("h100").model("h100").Obj()
	stale := metav1.Condition{Type: "Stale", Status: metav1.ConditionFalse, Reason: "NodesPresent", LastTransitionTime: metav1.NewTime(accT0.Add(-time.Hour))}
	c.Status.Conditions = []metav1.Condition{stale}
	a := selection.ClassAvailability{Resource: "nvidia.com/gpu", Nodes: []string{"h1"}, Total: 8, Available: 8, Matching: 1, Products: map[string]int{"NVIDIA-H100-80GB-HBM3": 1}}
	st, _ := classStatus(c, a, accT0)
	c.Status = st

	// A pod takes 6: counts and the Ready message change, not its status.
	a.Available = 2
	later := accT0.Add(time.Minute)
	st, changed := classStatus(c, a, later)
	require.True(t, changed)
	assert.Equal(t, int32(2), st.AvailableAccelerators)
	assert.Equal(t, &metav1.Time{Time: later}, st.LastUpdated)
	assert.Equal(t, stale, st.Conditions[0])
	ready := st.Conditions[1]
	assert.Equal(t, metav1.Condition{Type: ClassReady, Status: metav1.ConditionTrue, Reason: ReasonNodesReady,
		Message: "1 Ready node(s) with 8 nvidia.com/gpu, 2 free", ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(accT0)}, ready)
}

func TestProductIsModel(t *testing.T) {
	for _, tt := range []struct {
		product, model string
		want           bool
	}{
		{"NVIDIA-H100-80GB-HBM3", "h100", true},
		{"NVIDIA-H100-80GB-HBM3", "H100-80GB", true},
		{"AMD-Instinct-MI300X", "mi300x", true},
		{"NVIDIA-GeForce-RTX-4090", "rtx4090", true},
		{"NVIDIA-A100-PCIE-40GB", "a10", false},
		{"NVIDIA-H200", "h100", false},
		{"max-1550", "max-1550", true},
		{"MI250X", "mi250", false},
		{"anything", "", true},
	} {
		assert.Equal(t, tt.want, productIsModel(tt.product, tt.model), "%s ~ %s", tt.product, tt.model)
	}
}

func TestCoalescer(t *testing.T) {
	co := newCoalescer(10 * time.Second)
	assert.Zero(t, co.wait("a", accT0), "never written: write now")
	co.wrote("a", accT0)
	assert.Equal(t, 10*time.Second, co.wait("a", accT0))
	assert.Equal(t, 7*time.Second, co.wait("a", accT0.Add(3*time.Second)))
	assert.Zero(t, co.wait("b", accT0), "per class")
	assert.Zero(t, co.wait("a", accT0.Add(10*time.Second)))
	co.forget("a")
	assert.Zero(t, co.wait("a", accT0.Add(time.Second)))
}

// The controller on fake clients with a fake clock: the first change is
// written at once, a second one within the interval waits for it, and a
// sync with nothing changed writes nothing.
func TestAcceleratorStatusControllerCoalesces(t *testing.T) {
	class := makeAccClass("h100").model("h100").selector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj()
	bc := berthfake.NewSimpleClientset(class)
	kc := kubefake.NewSimpleClientset(
		makeAccNode("h1").label("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").gpus("nvidia.com/gpu", 8).Obj(),
		makeAccNode("h2").label("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").gpus("nvidia.com/gpu", 8).cordoned().Obj(),
		makeAccNode("a1").label("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").gpus("nvidia.com/gpu", 8).Obj(),
	)
	now := accT0
	a := NewAcceleratorStatusController(kc, bc, AcceleratorStatusOptions{Interval: 10 * time.Second, Now: func() time.Time { return now }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.kube.Start(ctx.Done())
	a.pods.Start(ctx.Done())
	a.berthInf.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), a.synced...))

	status := func() v1beta1.AcceleratorClassStatus {
		c, err := bc.OmeV1beta1().AcceleratorClasses().Get(ctx, "h100", metav1.GetOptions{})
		require.NoError(t, err)
		return c.Status
	}
	require.NoError(t, a.sync(ctx, "h100"))
	assert.Equal(t, int64(1), a.Writes())
	st := status()
	assert.Equal(t, []string{"h1"}, st.Nodes)
	assert.Equal(t, int32(8), st.TotalAccelerators)
	assert.Equal(t, int32(8), st.AvailableAccelerators)

	// A pod takes 2 GPUs one second later: the write waits for the interval.
	_, err := kc.CoreV1().Pods("ns").Create(ctx, gpuPod("p", "h1", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { c, _ := a.index.ClassAvailability("h100"); return c.Available == 6 }, 5*time.Second, 10*time.Millisecond)
	waitClassSynced(t, a, bc)
	now = accT0.Add(time.Second)
	require.NoError(t, a.sync(ctx, "h100"))
	assert.Equal(t, int64(1), a.Writes())
	assert.Equal(t, int32(8), status().AvailableAccelerators)

	now = accT0.Add(10 * time.Second)
	require.NoError(t, a.sync(ctx, "h100"))
	assert.Equal(t, int64(2), a.Writes())
	assert.Equal(t, int32(6), status().AvailableAccelerators)
	assert.Equal(t, ptrTime(now), status().LastUpdated)

	// Nothing changed: no write, even when allowed.
	waitClassSynced(t, a, bc)
	now = accT0.Add(time.Minute)
	require.NoError(t, a.sync(ctx, "h100"))
	assert.Equal(t, int64(2), a.Writes())
}

// waitClassSynced waits until the class lister holds the stored status
// (the fake clientset keeps no resourceVersion).
func waitClassSynced(t *testing.T, a *AcceleratorStatusController, bc *berthfake.Clientset) {
	t.Helper()
	stored, err := bc.OmeV1beta1().AcceleratorClasses().Get(context.Background(), "h100", metav1.GetOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := a.classes.Get("h100")
		return err == nil && equality.Semantic.DeepEqual(c.Status, stored.Status)
	}, 5*time.Second, 10*time.Millisecond)
}
