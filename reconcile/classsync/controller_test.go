package classsync

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/gpudiscovery"
)

// testController is a controller on fake clientsets whose caches have
// synced (and, with KueueSync, whose Kueue sync is ready); its Events go
// to the returned recorder.
func testController(t *testing.T, opts Options, nodes []runtime.Object, classes []runtime.Object, flavors ...runtime.Object) (*Controller, *record.FakeRecorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{ResourceFlavorGVR: "ResourceFlavorList"}, flavors...)
	c, err := New(kubefake.NewSimpleClientset(nodes...), berthfake.NewSimpleClientset(classes...), dyn, nil, opts)
	require.NoError(t, err)
	rec := record.NewFakeRecorder(20)
	c.recorder = rec
	c.nodeInf.Start(ctx.Done())
	c.informers.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), c.synced...))
	if c.kq != nil {
		c.kq.start(ctx)
		c.kq.waitSynced(ctx)
		require.True(t, c.kq.ready.Load())
	}
	return c, rec
}

func gpuNode(name, product string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{gpudiscovery.NVIDIAProduct: product}},
		Spec: corev1.NodeSpec{Taints: taints}}
	for k, v := range labels {
		n.Labels[k] = v
	}
	return n
}

// drain reads the Events recorded so far.
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestNewRefusesNothingToDo(t *testing.T) {
	_, err := New(kubefake.NewSimpleClientset(), berthfake.NewSimpleClientset(), nil, nil, Options{})
	assert.EqualError(t, err, "neither accelerator discovery nor the Kueue sync is on")
	_, err = New(kubefake.NewSimpleClientset(), berthfake.NewSimpleClientset(), nil, nil, Options{KueueSync: true})
	assert.EqualError(t, err, "the Kueue sync needs a dynamic client")
	_, err = New(kubefake.NewSimpleClientset(), berthfake.NewSimpleClientset(), nil, nil, Options{Discovery: true, NodeSelector: "pool in gpu"})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "accelerator discovery node selector: "), err.Error())
}

// One discovery pass creates a labelled class per product, reports an
// unreadable label once per node in an Event, and a second pass over the
// same nodes writes nothing.
func TestDiscoverCreatesClassOnce(t *testing.T) {
	nodes := []runtime.Object{
		gpuNode("h100-0", "NVIDIA-H100-80GB-HBM3", map[string]string{gpudiscovery.NVIDIAMemory: "81559"}),
		gpuNode("h100-1", "NVIDIA-H100-80GB-HBM3", map[string]string{gpudiscovery.NVIDIAMemory: "lots"}),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu", Labels: map[string]string{"node-type": "cpu"}}},
	}
	c, rec := testController(t, Options{Discovery: true}, nodes, nil)
	ctx := context.Background()
	require.NoError(t, c.discover(ctx))

	cl, err := c.berth.OmeV1beta1().AcceleratorClasses().Get(ctx, "nvidia-h100-80gb-hbm3", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", cl.Labels[v1beta1.LabelAutoDiscovered])
	assert.Equal(t, "nvidia", cl.Spec.Vendor)
	assert.Equal(t, map[string]string{gpudiscovery.NVIDIAProduct: "NVIDIA-H100-80GB-HBM3"}, cl.Spec.Discovery.NodeSelector)
	events := drain(rec)
	require.Len(t, events, 2, events)
	assert.Contains(t, events, "Normal Discovered created from the labels of nodes map[nvidia.com/gpu.product:NVIDIA-H100-80GB-HBM3]")
	assert.Contains(t, events, `Warning InvalidGPULabel nvidia.com/gpu.memory="lots" is not a whole number of MiB; ignored`)

	// The pass again, the informer having seen the class: no write, no
	// second Event for the same label.
	require.Eventually(t, func() bool { _, err := c.classes.Get(cl.Name); return err == nil }, 5*time.Second, 10*time.Millisecond)
	writes := len(c.berth.(*berthfake.Clientset).Actions())
	require.NoError(t, c.discover(ctx))
	assert.Equal(t, writes, len(c.berth.(*berthfake.Clientset).Actions()), "an unchanged fleet is written nothing")
	assert.Empty(t, drain(rec))
}

// Node heartbeats queue no pass; a label, taint or allocatable change does.
func TestNodeUpdatedSkipsHeartbeats(t *testing.T) {
	c, _ := testController(t, Options{Discovery: true, Coalesce: time.Millisecond}, nil, nil)
	old := gpuNode("n", "NVIDIA-H100-80GB-HBM3", nil)
	beat := old.DeepCopy()
	beat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	c.nodeUpdated(old, beat)
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, 0, c.queue.Len(), "a heartbeat queues nothing")

	tainted := old.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "inference", Effect: corev1.TaintEffectNoSchedule}}
	c.nodeUpdated(old, tainted)
	require.Eventually(t, func() bool { return c.queue.Len() == 1 }, 5*time.Second, 5*time.Millisecond, "a taint change queues a pass")
}

// Class to flavor: a class asking for a flavor gets one with its node
// selector, the taints all its nodes carry and one toleration per taint,
// owned by the class; a flavor of that name berth did not make is left.
func TestClassToFlavor(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "inference", Effect: corev1.TaintEffectNoSchedule}
	nodes := []runtime.Object{
		gpuNode("h100-0", "NVIDIA-H100-80GB-HBM3", nil, taint, corev1.Taint{Key: "only-here", Effect: corev1.TaintEffectNoSchedule}),
		gpuNode("h100-1", "NVIDIA-H100-80GB-HBM3", nil, taint),
	}
	cl := &v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: "h100", UID: "u-h100"},
		Spec: v1beta1.AcceleratorClassSpec{Vendor: "nvidia",
			Discovery:   v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{gpudiscovery.NVIDIAProduct: "NVIDIA-H100-80GB-HBM3"}},
			Integration: &v1beta1.AcceleratorIntegration{KueueResourceFlavor: "h100-flavor"}}}
	c, rec := testController(t, Options{KueueSync: true}, nodes, []runtime.Object{cl})
	ctx := context.Background()
	require.NoError(t, c.kq.classToFlavor(ctx, "h100"))

	f, err := c.dyn.Resource(ResourceFlavorGVR).Get(ctx, "h100-flavor", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1beta1.SyncedFromAcceleratorClass, f.GetLabels()[v1beta1.LabelSyncedFrom])
	assert.Equal(t, "h100", f.GetAnnotations()[v1beta1.AnnotationAcceleratorClass])
	require.Len(t, f.GetOwnerReferences(), 1)
	assert.Equal(t, "u-h100", string(f.GetOwnerReferences()[0].UID))
	wantSpec := map[string]any{
		"nodeLabels":  map[string]any{gpudiscovery.NVIDIAProduct: "NVIDIA-H100-80GB-HBM3"},
		"nodeTaints":  []any{map[string]any{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}},
		"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}},
	}
	assert.Equal(t, wantSpec, f.Object["spec"], "the flavor as the apiserver gets it: Kueue's field names, no others")
	assert.Equal(t, []string{"Normal ResourceFlavorCreated created Kueue ResourceFlavor h100-flavor"}, drain(rec))

	// A hand edit of the fields berth owns is undone by one update; a
	// field it does not own (topologyName) is kept.
	edited := f.DeepCopy()
	require.NoError(t, unstructured.SetNestedStringMap(edited.Object, map[string]string{"hand": "edit"}, "spec", "nodeLabels"))
	require.NoError(t, unstructured.SetNestedField(edited.Object, "default", "spec", "topologyName"))
	_, err = c.dyn.Resource(ResourceFlavorGVR).Update(ctx, edited, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		cached, err := c.kq.getFlavor("h100-flavor")
		return err == nil && cached.Spec.NodeLabels["hand"] == "edit"
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, c.kq.classToFlavor(ctx, "h100"))
	f, err = c.dyn.Resource(ResourceFlavorGVR).Get(ctx, "h100-flavor", metav1.GetOptions{})
	require.NoError(t, err)
	wantSpec["topologyName"] = "default"
	assert.Equal(t, wantSpec, f.Object["spec"])
	assert.Equal(t, []any{map[string]any{"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "name": "h100", "uid": "u-h100"}},
		f.Object["metadata"].(map[string]any)["ownerReferences"], "the owner reference is kept")

	// Someone else's flavor of the name another class asks for: left
	// alone, said once in a Warning Event.
	foreign := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": "taken"}, "spec": map[string]any{"nodeLabels": map[string]any{"a": "b"}}}}
	other := cl.DeepCopy()
	other.Name, other.UID, other.Spec.Integration.KueueResourceFlavor = "other", "u-other", "taken"
	c2, rec2 := testController(t, Options{KueueSync: true}, nodes, []runtime.Object{other}, foreign)
	require.NoError(t, c2.kq.classToFlavor(ctx, "other"))
	require.NoError(t, c2.kq.classToFlavor(ctx, "other"))
	got, err := c2.dyn.Resource(ResourceFlavorGVR).Get(ctx, "taken", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, foreign.Object["spec"], got.Object["spec"])
	assert.Equal(t, []string{"Warning ResourceFlavorNotSynced ResourceFlavor taken exists and was not made from this class; berth leaves it alone"}, drain(rec2))
}

// Flavor to class: a gpu-* flavor makes a class of its name with its
// nodeLabels as node selector and the product read from those nodes; the
// label and annotation name the source, and no owner reference is set.
func TestFlavorToClass(t *testing.T) {
	nodes := []runtime.Object{gpuNode("a100-0", "NVIDIA-A100-SXM4-40GB", map[string]string{"pool": "a100"})}
	flavor := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": "gpu-a100"}, "spec": map[string]any{"nodeLabels": map[string]any{"pool": "a100"}}}}
	c, rec := testController(t, Options{KueueSync: true}, nodes, nil, flavor)
	ctx := context.Background()
	require.NoError(t, c.kq.flavorToClass(ctx, "gpu-a100"))

	cl, err := c.berth.OmeV1beta1().AcceleratorClasses().Get(ctx, "gpu-a100", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1beta1.SyncedFromResourceFlavor, cl.Labels[v1beta1.LabelSyncedFrom])
	assert.Equal(t, "gpu-a100", cl.Annotations[v1beta1.AnnotationKueueResourceFlavor])
	assert.Empty(t, cl.OwnerReferences)
	assert.Equal(t, map[string]string{"pool": "a100"}, cl.Spec.NodeSelector)
	assert.Equal(t, "nvidia", cl.Spec.Vendor)
	assert.Equal(t, []string{"Normal FromResourceFlavor created from Kueue ResourceFlavor gpu-a100"}, drain(rec))

	// A flavor that is neither gpu-* nor annotated makes nothing.
	plain := flavor.DeepCopy()
	plain.SetName("cpu-pool")
	c2, _ := testController(t, Options{KueueSync: true}, nodes, nil, plain)
	require.NoError(t, c2.kq.flavorToClass(ctx, "cpu-pool"))
	list, err := c2.berth.OmeV1beta1().AcceleratorClasses().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}
