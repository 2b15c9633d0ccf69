package servinggroups

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// tiedRuntime serves safetensors at priority 5 for 1B–10B models: two of
// them tie, as two runtimes created at the same moment could past the
// webhook's check.
func tiedRuntime(name string) *v1beta1.ClusterServingRuntime {
	rt := runtimeObj(name, false)
	auto, prio := true, int32(5)
	rt.Spec.SupportedModelFormats = []v1beta1.SupportedModelFormat{{Name: "safetensors", Version: ptr("1"), AutoSelect: &auto, Priority: &prio}}
	rt.Spec.ModelSizeRange = &v1beta1.ModelSizeRangeSpec{Min: ptr("1B"), Max: ptr("10B")}
	return rt
}

func TestConcurrentTiesShowOnBothRuntimes(t *testing.T) {
	f := newFixture(t, tiedRuntime("a"), tiedRuntime("b"), runtimeObj("alone", false))
	n, err := f.c.syncConflicts(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	cond := func(name string) *metav1.Condition {
		rt, err := f.berth.OmeV1beta1().ClusterServingRuntimes().Get(f.ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return meta.FindStatusCondition(rt.Status.Conditions, ConditionPriorityConflict)
	}
	for name, other := range map[string]string{"a": "b", "b": "a"} {
		c := cond(name)
		require.NotNil(t, c, name)
		assert.Equal(t, metav1.ConditionTrue, c.Status, name)
		assert.Equal(t, ReasonPriorityTie, c.Reason)
		assert.Contains(t, c.Message, "ClusterServingRuntime/"+other)
	}
	assert.Equal(t, metav1.ConditionFalse, cond("alone").Status)

	// Removing one clears the other, and nothing is written again once settled.
	require.NoError(t, f.berth.OmeV1beta1().ClusterServingRuntimes().Delete(f.ctx, "b", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		n, err := f.c.syncConflicts(f.ctx)
		return err == nil && n == 0 && cond("a").Status == metav1.ConditionFalse
	}, 10*time.Second, 20*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // the informers see the last writes
	before := len(f.berth.Actions())
	_, err = f.c.syncConflicts(f.ctx)
	require.NoError(t, err)
	for _, a := range f.berth.Actions()[before:] {
		assert.NotEqual(t, "update", a.GetVerb(), "a settled check writes nothing: %v", a)
	}
}
