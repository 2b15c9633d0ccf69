package e2e

// Discovery that always runs, and classes berth keeps (issue 21, item 9).

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/reconcile/classsync"
)

// berth-reconciler --accelerator-discovery --kueue-sync on a cluster
// without Kueue's CRD: discovery makes the fleet's classes anyway, and a
// class asking for a ResourceFlavor says on its status (condition
// KueueSynced=False, reason ResourceFlavorCRDMissing) that Kueue is
// missing. Once the CRD (Kueue's own, internal/devenv/kueue) is installed
// the flavor is made and the condition turns True. A class made from a flavor is not owned by it: deleting the
// flavor (as uninstalling Kueue does) leaves the class and its status.
func TestKueueMissingCRD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	h100 := wrappers.MakeAcceleratorClass("h100-kueue").Vendor("nvidia").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").KueueFlavor("h100-flavor").Obj()
	a := startAccelCluster(t, ctx, nil, func(a *accelCluster) {
		_, err := a.berth.OmeV1beta1().AcceleratorClasses().Create(ctx, h100, metav1.CreateOptions{})
		require.NoError(t, err)
	}, "--accelerator-discovery", "--kueue-sync")
	classes := a.berth.OmeV1beta1().AcceleratorClasses()

	want := fleetDiscoveredWant(t)
	delete(want, "nvidia-h100-80gb-hbm3") // h100-kueue, an admin's class with the product's selector, stands for it
	var got map[string]*v1beta1.AcceleratorClass
	assert.Eventually(t, func() bool {
		var err error
		got, err = discoveredClasses(ctx, a)
		return err == nil && len(got) == len(want)
	}, 90*time.Second, 500*time.Millisecond, "discovery runs while Kueue's CRD is missing")
	t.Logf("discovered %d classes of %d", len(got), len(want))

	var cond *metav1.Condition
	assert.Eventually(t, func() bool {
		cl, err := classes.Get(ctx, "h100-kueue", metav1.GetOptions{})
		if err != nil {
			return false
		}
		cond = meta.FindStatusCondition(cl.Status.Conditions, classsync.ConditionKueueSynced)
		return cond != nil && cond.Status == metav1.ConditionFalse
	}, 90*time.Second, 500*time.Millisecond, "the class says Kueue's CRD is missing")
	if cond != nil {
		t.Logf("condition: %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
		assert.Equal(t, classsync.ReasonResourceFlavorCRDMissing, cond.Reason)
		assert.Contains(t, cond.Message, "resourceflavors.kueue.x-k8s.io")
		assert.Contains(t, cond.Message, "h100-flavor")
	}
	if t.Failed() {
		t.FailNow()
	}

	// Kueue arrives.
	applier, err := install.NewApplier(a.c.RESTConfig())
	require.NoError(t, err)
	crds, err := install.ReadObjects(env.Path("internal", "devenv", "kueue", "crds", "resourceflavors.kueue.x-k8s.io.yaml"))
	require.NoError(t, err)
	_, err = applier.InstallCRDs(ctx, crds, 2*time.Minute)
	require.NoError(t, err)
	flavors := a.dyn.Resource(classsync.ResourceFlavorGVR)
	require.Eventually(t, func() bool {
		_, err := flavors.Get(ctx, "h100-flavor", metav1.GetOptions{})
		return err == nil
	}, 2*time.Minute, 500*time.Millisecond, "the class makes its flavor once the CRD is installed")
	require.Eventually(t, func() bool {
		cl, err := classes.Get(ctx, "h100-kueue", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(cl.Status.Conditions, classsync.ConditionKueueSynced)
	}, time.Minute, 500*time.Millisecond, "the condition turns True")

	// A class made from a flavor remembers it by label and annotation, and
	// is owned by nothing.
	_, err = flavors.Create(ctx, flavor("gpu-nvidia-a100", map[string]any{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}), metav1.CreateOptions{})
	require.NoError(t, err)
	var made *v1beta1.AcceleratorClass
	require.Eventually(t, func() bool {
		made, err = classes.Get(ctx, "gpu-nvidia-a100", metav1.GetOptions{})
		return err == nil
	}, time.Minute, 250*time.Millisecond, "the flavor gpu-nvidia-a100 makes a class")
	assert.Empty(t, made.OwnerReferences, "a class is never owned by another project's object")
	assert.Equal(t, "gpu-nvidia-a100", made.Annotations[v1beta1.AnnotationKueueResourceFlavor])
	assert.Equal(t, v1beta1.SyncedFromResourceFlavor, made.Labels[v1beta1.LabelSyncedFrom])
	require.Eventually(t, func() bool {
		made, err = classes.Get(ctx, "gpu-nvidia-a100", metav1.GetOptions{})
		return err == nil && made.Status.TotalAccelerators > 0
	}, time.Minute, 250*time.Millisecond, "the class gets a status")

	require.NoError(t, flavors.Delete(ctx, "gpu-nvidia-a100", metav1.DeleteOptions{}))
	time.Sleep(10 * time.Second) // the garbage collector acts within a second or two
	kept, err := classes.Get(ctx, "gpu-nvidia-a100", metav1.GetOptions{})
	require.NoError(t, err, "deleting the flavor deletes berth's class")
	assert.Equal(t, made.Status.TotalAccelerators, kept.Status.TotalAccelerators, "and its status")
	assert.Empty(t, a.c.Deaths(), "the reconciler never died")
}
