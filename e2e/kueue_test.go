package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/kueue"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/reconcile/classsync"
)

// writeCounter counts the writes of objects by name from a watch: a
// MODIFIED event whose generation, labels or annotations changed (a status
// write of another controller is not a write of the sync).
type writeCounter struct {
	mu     sync.Mutex
	last   map[string]metav1.Object
	writes map[string]int
}

func countWrites(ctx context.Context, w watch.Interface) *writeCounter {
	c := &writeCounter{last: map[string]metav1.Object{}, writes: map[string]int{}}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				m, ok := ev.Object.(metav1.Object)
				if !ok {
					continue
				}
				c.mu.Lock()
				prev := c.last[m.GetName()]
				if ev.Type == watch.Modified && (prev == nil || prev.GetGeneration() != m.GetGeneration() ||
					!maps.Equal(prev.GetLabels(), m.GetLabels()) || !maps.Equal(prev.GetAnnotations(), m.GetAnnotations())) {
					c.writes[m.GetName()]++
				}
				c.last[m.GetName()] = m
				c.mu.Unlock()
			}
		}
	}()
	return c
}

func (c *writeCounter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes[name]
}

func flavor(name string, nodeLabels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"nodeLabels": nodeLabels}}}
}

// TestKueue runs berth-reconciler --kueue-sync against Kueue itself:
// Kueue's CRDs (internal/devenv/kueue) and its controller manager
// (cluster.StartKueue). The flavor gpu-nvidia-a100, created first, makes a
// class (seed 002, Story 3) with memory and compute capability from its
// nodes' labels; a class with integration.kueueResourceFlavor gets a flavor
// with its nodeLabels and its nodes' taints, and a ClusterQueue that uses
// both flavors becomes Active (Kueue found them). Editing either side
// converges in one write of the other, counted over 30 s.
func TestKueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	taint := corev1.Taint{Key: "dedicated", Value: "inference", Effect: corev1.TaintEffectNoSchedule}
	a := startAccelCluster(t, ctx, []string{env.Path("internal", "devenv", "kueue", "crds")}, func(a *accelCluster) {
		require.NoError(t, a.c.StartKueue(ctx, kueueBin(t)), "Kueue's controller manager did not become ready")
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": []corev1.Taint{taint}}})
		require.NoError(t, err)
		for _, n := range []string{"h100-0", "h100-1", "h100-2", "h100-3"} {
			_, err := a.kube.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{})
			require.NoError(t, err)
		}
	}, "--kueue-sync")
	flavors := a.dyn.Resource(classsync.ResourceFlavorGVR)
	classes := a.berth.OmeV1beta1().AcceleratorClasses()

	_, err := flavors.Create(ctx, flavor("gpu-nvidia-a100", map[string]any{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}), metav1.CreateOptions{})
	require.NoError(t, err)
	var made *v1beta1.AcceleratorClass
	require.Eventually(t, func() bool {
		made, err = classes.Get(ctx, "gpu-nvidia-a100", metav1.GetOptions{})
		return err == nil
	}, time.Minute, 250*time.Millisecond, "the flavor gpu-nvidia-a100 makes a class")
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, made.Spec.NodeSelector)
	assert.Equal(t, "gpu-nvidia-a100", made.Annotations[v1beta1.AnnotationKueueResourceFlavor])
	assert.Equal(t, v1beta1.SyncedFromResourceFlavor, made.Labels[v1beta1.LabelSyncedFrom])
	assert.Empty(t, made.OwnerReferences, "a class is never owned by another project's object (TestKueueMissingCRD)")
	assert.Equal(t, "nvidia", made.Spec.Vendor)
	assert.Equal(t, "8.0", made.Spec.Capabilities.ComputeCapability, "seed 002's A100: computeCapability 8.0")
	if assert.NotNil(t, made.Spec.Capabilities.MemoryGB) {
		assert.Equal(t, 0, made.Spec.Capabilities.MemoryGB.Cmp(resource.MustParse("40960Mi")), "memoryGB %s", made.Spec.Capabilities.MemoryGB)
	}

	h100 := wrappers.MakeAcceleratorClass("h100-kueue").Vendor("nvidia").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").KueueFlavor("h100-flavor").Obj()
	h100, err = classes.Create(ctx, h100, metav1.CreateOptions{})
	require.NoError(t, err)
	var fl *unstructured.Unstructured
	require.Eventually(t, func() bool {
		fl, err = flavors.Get(ctx, "h100-flavor", metav1.GetOptions{})
		return err == nil
	}, time.Minute, 250*time.Millisecond, "the class h100-kueue makes the flavor h100-flavor")
	nodeLabels, _, _ := unstructured.NestedStringMap(fl.Object, "spec", "nodeLabels")
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, nodeLabels)
	taints, _, _ := unstructured.NestedSlice(fl.Object, "spec", "nodeTaints")
	assert.Equal(t, []any{map[string]any{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}}, taints, "the taint every H100 node carries")
	tols, _, _ := unstructured.NestedSlice(fl.Object, "spec", "tolerations")
	assert.Equal(t, []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}}, tols)
	assert.Equal(t, v1beta1.SyncedFromAcceleratorClass, fl.GetLabels()[v1beta1.LabelSyncedFrom])
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "ome.io/v1beta1", Kind: "AcceleratorClass", Name: "h100-kueue", UID: h100.UID}}, fl.GetOwnerReferences())
	clusterQueueActive(t, ctx, a, "gpus", "gpu-nvidia-a100", "h100-flavor")

	// Convergence: one edit on each side, then 30 s of watching.
	time.Sleep(2 * time.Second) // let the creations settle before counting
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	cw, err := classes.Watch(wctx, metav1.ListOptions{})
	require.NoError(t, err)
	fw, err := flavors.Watch(wctx, metav1.ListOptions{})
	require.NoError(t, err)
	classWrites, flavorWrites := countWrites(wctx, cw), countWrites(wctx, fw)
	time.Sleep(time.Second) // the watches' initial ADDED events
	patch := []byte(`{"spec":{"nodeLabels":{"nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB"}}}`)
	_, err = flavors.Patch(ctx, "gpu-nvidia-a100", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	patch = []byte(`{"spec":{"discovery":{"nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-H200"}}}}`)
	_, err = classes.Patch(ctx, "h100-kueue", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	time.Sleep(30 * time.Second)
	stop()

	t.Logf("writes over 30 s: class gpu-nvidia-a100 %d, flavor gpu-nvidia-a100 %d, class h100-kueue %d, flavor h100-flavor %d",
		classWrites.count("gpu-nvidia-a100"), flavorWrites.count("gpu-nvidia-a100"), classWrites.count("h100-kueue"), flavorWrites.count("h100-flavor"))
	assert.Equal(t, 1, flavorWrites.count("gpu-nvidia-a100"), "the flavor: only the test's edit")
	assert.Equal(t, 1, classWrites.count("gpu-nvidia-a100"), "the class made from it: one write, no ping-pong")
	assert.Equal(t, 1, classWrites.count("h100-kueue"), "the class: only the test's edit")
	assert.Equal(t, 1, flavorWrites.count("h100-flavor"), "the flavor made from it: one write, no ping-pong")

	made, err = classes.Get(ctx, "gpu-nvidia-a100", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, made.Spec.NodeSelector)
	if assert.NotNil(t, made.Spec.Capabilities.MemoryGB) {
		assert.Equal(t, 0, made.Spec.Capabilities.MemoryGB.Cmp(resource.MustParse("81920Mi")), "memoryGB %s", made.Spec.Capabilities.MemoryGB)
	}
	fl, err = flavors.Get(ctx, "h100-flavor", metav1.GetOptions{})
	require.NoError(t, err)
	nodeLabels, _, _ = unstructured.NestedStringMap(fl.Object, "spec", "nodeLabels")
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H200"}, nodeLabels)
	_, hasTaints, _ := unstructured.NestedSlice(fl.Object, "spec", "nodeTaints")
	assert.False(t, hasTaints, "the H200 nodes carry no taint")
	assert.Empty(t, a.c.Deaths(), "the reconciler never died")
}

// kueueBin is Kueue's controller manager as `make deps` builds it.
func kueueBin(t *testing.T) string {
	t.Helper()
	bin := env.Path("bin", "kueue-"+kueue.Version, "kueue")
	st, err := os.Stat(bin)
	require.NoError(t, err, "Kueue's controller manager is built by `make deps`")
	require.True(t, st.Mode().IsRegular() && st.Mode()&0o111 != 0, "%s is not an executable file", bin)
	return bin
}

// clusterQueueActive creates ClusterQueue name (kueue.x-k8s.io/v1beta2, the
// version Kueue stores: its conversion webhook is not reachable here) with
// one resource group of nvidia.com/gpu over the flavors, and waits for
// Kueue to say it is Active: every flavor it names exists and is usable.
func clusterQueueActive(t *testing.T, ctx context.Context, a *accelCluster, name string, flavors ...string) {
	t.Helper()
	var fs []any
	for _, f := range flavors {
		fs = append(fs, map[string]any{"name": f, "resources": []any{map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "8"}}})
	}
	cq := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{"coveredResources": []any{"nvidia.com/gpu"}, "flavors": fs}}}}}
	cqs := a.dyn.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"})
	_, err := cqs.Create(ctx, cq, metav1.CreateOptions{})
	require.NoError(t, err)
	var cond map[string]any
	require.Eventually(t, func() bool {
		got, err := cqs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Active" {
				cond = m
			}
		}
		return cond != nil && cond["status"] == "True"
	}, 2*time.Minute, 500*time.Millisecond, "Kueue makes ClusterQueue %s Active with flavors %v (last Active condition: %v)", name, flavors, cond)
	got, err := cqs.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	groups, _, _ := unstructured.NestedSlice(got.Object, "spec", "resourceGroups")
	require.Len(t, groups, 1)
	stored, _, _ := unstructured.NestedSlice(groups[0].(map[string]any), "flavors")
	var names []string
	for _, f := range stored {
		names = append(names, f.(map[string]any)["name"].(string))
	}
	assert.Equal(t, flavors, names, "the ClusterQueue names the flavors as sent (nothing pruned)")
}
