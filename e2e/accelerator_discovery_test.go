package e2e

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/devenv/kwok"
	"github.com/berthdev/berth/internal/fleet"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

// accelCluster is a control plane of its own with berth's CRDs and the
// fleet but no AcceleratorClass, and a berth-reconciler started with the
// given flags: discovery and the Kueue sync write classes, which the
// shared environment's selection tests must not see.
type accelCluster struct {
	c     *cluster.Cluster
	kube  kubernetes.Interface
	berth versioned.Interface
	dyn   dynamic.Interface
	// nodes are the fleet's nodes as created.
	nodes []corev1.Node
}

// startAccelCluster starts it; extraCRDs (files or folders) are installed
// next to berth's before the reconciler starts.
func startAccelCluster(t *testing.T, ctx context.Context, extraCRDs []string, before func(*accelCluster), args ...string) *accelCluster {
	t.Helper()
	c, err := cluster.Start(ctx, cluster.Options{Binaries: env.Binaries, Stages: kwok.Stages(), Log: os.Stderr,
		KeepRunDir: os.Getenv("BERTH_E2E_KEEP") != ""})
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	a := &accelCluster{c: c}
	a.kube, err = c.Clientset()
	require.NoError(t, err)
	a.berth, err = versioned.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	a.dyn, err = dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	applier, err := install.NewApplier(c.RESTConfig())
	require.NoError(t, err)
	crds, err := devenv.Manifests("crds")
	require.NoError(t, err)
	for _, p := range extraCRDs {
		objs, err := install.ReadObjects(p)
		require.NoError(t, err)
		crds = append(crds, objs...)
	}
	_, err = applier.InstallCRDs(ctx, crds, 2*time.Minute)
	require.NoError(t, err)
	a.nodes, err = fleet.Apply(ctx, a.kube, env.Fleet, 2*time.Minute)
	require.NoError(t, err)
	if before != nil {
		before(a)
	}
	proc := devenv.Reconciler(reconciler.Bin, append([]string{"--leader-elect=false"}, args...)...)
	require.NoError(t, proc.Start(ctx, &devenv.Env{Cluster: c}), "berth-reconciler did not become ready")
	return a
}

// discoveredWant is one fleet product's class, by value from the fleet's
// labels (internal/fleet/fleet.yaml): NVIDIA memory is
// nvidia.com/gpu.memory MiB, compute capability major.minor; the AMD and
// Intel pools carry no memory label.
type discoveredWant struct {
	name, vendor, family, memory, cc, resource string
	selector                                   map[string]string
}

func fleetDiscoveredWant(t *testing.T) map[string]discoveredWant {
	t.Helper()
	want := map[string]discoveredWant{}
	names := map[string]string{"h100": "nvidia-h100-80gb-hbm3", "a100-40gb": "nvidia-a100-sxm4-40gb",
		"a100-80gb": "nvidia-a100-sxm4-80gb", "h200": "nvidia-h200", "b200": "nvidia-b200", "mi250x": "amd-mi250x",
		"intel-max": "intel-max-1550"}
	for _, p := range env.Fleet.Pools {
		l := p.Labels
		switch {
		case l["nvidia.com/gpu.product"] != "":
			want[names[p.Name]] = discoveredWant{name: names[p.Name], vendor: "nvidia", family: l["nvidia.com/gpu.family"],
				memory: l["nvidia.com/gpu.memory"] + "Mi", cc: l["nvidia.com/gpu.compute.major"] + "." + l["nvidia.com/gpu.compute.minor"],
				resource: "nvidia.com/gpu", selector: map[string]string{"nvidia.com/gpu.product": l["nvidia.com/gpu.product"]}}
		case l["amd.com/gpu.product"] != "":
			want[names[p.Name]] = discoveredWant{name: names[p.Name], vendor: "amd", family: l["amd.com/gpu.family"],
				resource: "amd.com/gpu", selector: map[string]string{"amd.com/gpu.product": l["amd.com/gpu.product"]}}
		case l["gpu.intel.com/product"] != "":
			want[names[p.Name]] = discoveredWant{name: names[p.Name], vendor: "intel",
				resource: "gpu.intel.com/i915", selector: map[string]string{"gpu.intel.com/product": l["gpu.intel.com/product"]}}
		}
	}
	require.Len(t, want, 7, "the fleet has 7 GPU products; this test's table names them")
	for pool, n := range names {
		require.Contains(t, want, n, "fleet pool %s", pool)
	}
	return want
}

func checkDiscovered(t *testing.T, c *v1beta1.AcceleratorClass, w discoveredWant) {
	t.Helper()
	s := c.Spec
	assert.Equal(t, "true", c.Labels[v1beta1.LabelAutoDiscovered], c.Name)
	assert.Equal(t, w.vendor, s.Vendor, c.Name)
	assert.Equal(t, w.family, s.Family, c.Name)
	assert.Equal(t, w.selector, s.Discovery.NodeSelector, c.Name)
	if w.memory == "" {
		assert.Nil(t, s.Capabilities.MemoryGB, c.Name)
	} else if assert.NotNil(t, s.Capabilities.MemoryGB, c.Name) {
		assert.Equal(t, 0, s.Capabilities.MemoryGB.Cmp(resource.MustParse(w.memory)), "%s memoryGB %s, want %s", c.Name, s.Capabilities.MemoryGB, w.memory)
	}
	assert.Equal(t, w.cc, s.Capabilities.ComputeCapability, c.Name)
	if assert.Len(t, s.Resources, 1, c.Name) {
		assert.Equal(t, w.resource, s.Resources[0].Name, c.Name)
	}
}

// discoveredClasses lists the auto-discovered classes by name.
func discoveredClasses(ctx context.Context, a *accelCluster) (map[string]*v1beta1.AcceleratorClass, error) {
	l, err := a.berth.OmeV1beta1().AcceleratorClasses().List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelAutoDiscovered + "=true"})
	if err != nil {
		return nil, err
	}
	out := map[string]*v1beta1.AcceleratorClass{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out, nil
}

func staleOf(c *v1beta1.AcceleratorClass) (metav1.ConditionStatus, string) {
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1beta1.ConditionStale); cond != nil {
		return cond.Status, cond.Reason
	}
	return "", ""
}

func labelNodes(t *testing.T, ctx context.Context, a *accelCluster, names []string, labels map[string]any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	require.NoError(t, err)
	for _, n := range names {
		_, err := a.kube.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}
}

// TestAcceleratorDiscovery runs berth-reconciler --accelerator-discovery
// on the fleet with no class but one admin class for the B200: one class
// per other GPU product, by value from the fleet's labels; the admin's
// suppresses the B200 duplicate. Then: an admin class arriving for the
// H100 supersedes (Stale, not deleted) the discovered one; a label edit
// updates a class; a garbage memory label is ignored with an Event on its
// node; nodes the node selector flag excludes leave their class Stale.
func TestAcceleratorDiscovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	want := fleetDiscoveredWant(t)
	admin := func(name, product string) *v1beta1.AcceleratorClass {
		return wrappers.MakeAcceleratorClass(name).Vendor("nvidia").NodeSelector("nvidia.com/gpu.product", product).Obj()
	}
	a := startAccelCluster(t, ctx, nil, func(a *accelCluster) {
		_, err := a.berth.OmeV1beta1().AcceleratorClasses().Create(ctx, admin("b200-by-admin", "NVIDIA-B200"), metav1.CreateOptions{})
		require.NoError(t, err)
	}, "--accelerator-discovery", "--accelerator-discovery-node-selector=e2e.berth.dev/no-discovery!=true")
	delete(want, "nvidia-b200")

	var got map[string]*v1beta1.AcceleratorClass
	require.Eventually(t, func() bool {
		var err error
		got, err = discoveredClasses(ctx, a)
		return err == nil && len(got) >= len(want)
	}, time.Minute, 250*time.Millisecond, "discovery made %d classes, want %d", len(got), len(want))
	time.Sleep(2 * time.Second) // a duplicate would be made within the coalescing second
	got, err := discoveredClasses(ctx, a)
	require.NoError(t, err)
	require.Len(t, got, len(want), "one class per product, none for the B200 an admin class covers")
	for name, w := range want {
		if assert.Contains(t, got, name) {
			checkDiscovered(t, got[name], w)
		}
	}
	adminB200, err := a.berth.OmeV1beta1().AcceleratorClasses().Get(ctx, "b200-by-admin", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, adminB200.Labels, "the admin's class is never written")
	assert.Equal(t, int64(1), adminB200.Generation)

	t.Run("an admin class for the H100 supersedes the discovered one, which stays", func(t *testing.T) {
		_, err := a.berth.OmeV1beta1().AcceleratorClasses().Create(ctx, admin("h100-by-admin", "NVIDIA-H100-80GB-HBM3"), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			c, err := a.berth.OmeV1beta1().AcceleratorClasses().Get(ctx, "nvidia-h100-80gb-hbm3", metav1.GetOptions{})
			s, r := "", ""
			if err == nil {
				st, rs := staleOf(c)
				s, r = string(st), rs
			}
			return s == "True" && r == "Superseded"
		}, 30*time.Second, 250*time.Millisecond)
	})

	t.Run("a label edit updates the class", func(t *testing.T) {
		labelNodes(t, ctx, a, []string{"h200-0", "h200-1"}, map[string]any{"nvidia.com/gpu.memory": "141000", "nvidia.com/gpu.compute.minor": "1"})
		require.Eventually(t, func() bool {
			c, err := a.berth.OmeV1beta1().AcceleratorClasses().Get(ctx, "nvidia-h200", metav1.GetOptions{})
			return err == nil && c.Spec.Capabilities.MemoryGB != nil && c.Spec.Capabilities.MemoryGB.Cmp(resource.MustParse("141000Mi")) == 0 &&
				c.Spec.Capabilities.ComputeCapability == "9.1"
		}, 30*time.Second, 250*time.Millisecond)
	})

	t.Run("a garbage memory label is ignored with an Event on its node", func(t *testing.T) {
		labelNodes(t, ctx, a, []string{"a100-80gb-1"}, map[string]any{"nvidia.com/gpu.memory": "lots"})
		require.Eventually(t, func() bool {
			evs, err := a.kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=a100-80gb-1,reason=InvalidGPULabel"})
			return err == nil && len(evs.Items) == 1 && evs.Items[0].Type == corev1.EventTypeWarning &&
				evs.Items[0].Message == `nvidia.com/gpu.memory="lots" is not a whole number of MiB; ignored`
		}, 30*time.Second, 250*time.Millisecond)
		c, err := a.berth.OmeV1beta1().AcceleratorClasses().Get(ctx, "nvidia-a100-sxm4-80gb", metav1.GetOptions{})
		require.NoError(t, err)
		checkDiscovered(t, c, want["nvidia-a100-sxm4-80gb"]) // the other node's 81920 MiB still holds
		assert.Empty(t, a.c.Deaths(), "the reconciler never died")
	})

	t.Run("nodes the node selector excludes leave their class Stale, not deleted", func(t *testing.T) {
		labelNodes(t, ctx, a, []string{"mi250x-0", "mi250x-1"}, map[string]any{"e2e.berth.dev/no-discovery": "true"})
		require.Eventually(t, func() bool {
			c, err := a.berth.OmeV1beta1().AcceleratorClasses().Get(ctx, "amd-mi250x", metav1.GetOptions{})
			if err != nil {
				return false
			}
			s, r := staleOf(c)
			return s == metav1.ConditionTrue && r == "NoNodes"
		}, 30*time.Second, 250*time.Millisecond)
		labelNodes(t, ctx, a, []string{"mi250x-0", "mi250x-1"}, map[string]any{"e2e.berth.dev/no-discovery": nil})
		require.Eventually(t, func() bool {
			c, err := a.berth.OmeV1beta1().AcceleratorClasses().Get(ctx, "amd-mi250x", metav1.GetOptions{})
			if err != nil {
				return false
			}
			s, _ := staleOf(c)
			return s == metav1.ConditionFalse
		}, 30*time.Second, 250*time.Millisecond)
	})
}
