package kueue

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The compiled-in CRDs are Kueue's, and the conversion webhooks of those
// that have one name the Service this package names: the manager writes its
// CA into exactly those, and waits until it could.
func TestCRDs(t *testing.T) {
	objs, err := CRDs()
	require.NoError(t, err)
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		assert.Equal(t, "CustomResourceDefinition", o.GetKind(), o.String())
		byName[o.GetName()] = o.Unstructured
	}
	for _, name := range []string{"resourceflavors", "clusterqueues", "localqueues", "workloads", "cohorts", "topologies"} {
		assert.Contains(t, byName, name+".kueue.x-k8s.io")
	}
	for _, name := range []string{"clusterqueues", "localqueues", "workloads", "cohorts", "multikueueclusters"} {
		crd := byName[name+".kueue.x-k8s.io"]
		require.NotNil(t, crd, name)
		svc, _, _ := unstructured.NestedStringMap(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service")
		assert.Equal(t, Namespace, svc["namespace"], name)
		assert.Equal(t, WebhookServiceName, svc["name"], name)
	}
	rf := byName["resourceflavors.kueue.x-k8s.io"]
	strategy, _, _ := unstructured.NestedString(rf.Object, "spec", "conversion", "strategy")
	assert.NotEqual(t, "Webhook", strategy, "ResourceFlavor needs no conversion webhook: berth's v1beta1 works without Kueue's")
	served := map[string]bool{}
	versions, _, _ := unstructured.NestedSlice(rf.Object, "spec", "versions")
	for _, v := range versions {
		m := v.(map[string]any)
		served[m["name"].(string)] = m["served"] == true
	}
	assert.True(t, served["v1beta1"], "berth writes ResourceFlavors as kueue.x-k8s.io/v1beta1")
}
