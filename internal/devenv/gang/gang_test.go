package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The compiled-in CRDs are the ones whose resources the GVRs name, at
// those versions, so a client of the GVRs finds them served.
func TestCRDsServeTheGVRs(t *testing.T) {
	objs, err := CRDs()
	require.NoError(t, err)
	type served struct{ name, group, version string }
	var got []served
	for _, o := range objs {
		require.Equal(t, "CustomResourceDefinition", o.GetKind(), o.Source)
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		versions, _, err := unstructured.NestedSlice(o.Object, "spec", "versions")
		require.NoError(t, err)
		for _, v := range versions {
			name, _ := v.(map[string]any)["name"].(string)
			got = append(got, served{o.GetName(), group, name})
		}
	}
	assert.Equal(t, []served{
		{"podgroups.scheduling.volcano.sh", "scheduling.volcano.sh", "v1beta1"},
		{"elasticquotas.scheduling.x-k8s.io", "scheduling.x-k8s.io", "v1alpha1"},
		{"podgroups.scheduling.x-k8s.io", "scheduling.x-k8s.io", "v1alpha1"},
	}, got)
	for _, gvr := range []struct{ resource, group, version string }{
		{CoschedulingPodGroupGVR.Resource, CoschedulingPodGroupGVR.Group, CoschedulingPodGroupGVR.Version},
		{VolcanoPodGroupGVR.Resource, VolcanoPodGroupGVR.Group, VolcanoPodGroupGVR.Version},
	} {
		assert.Contains(t, got, served{gvr.resource + "." + gvr.group, gvr.group, gvr.version})
	}
}
