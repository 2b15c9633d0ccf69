package wrappers

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// VolcanoPodGroupCRD is Volcano's PodGroup CRD as far as the reconciler
// reads it: its name and v1beta1's spec properties, with subGroupPolicy
// when withSubGroups (Volcano >= 1.14; v1.12.1 has none).
func VolcanoPodGroupCRD(withSubGroups bool) *unstructured.Unstructured {
	props := map[string]any{"minMember": map[string]any{"type": "integer"}}
	if withSubGroups {
		props["subGroupPolicy"] = map[string]any{"type": "array"}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "podgroups.scheduling.volcano.sh"},
		"spec": map[string]any{"versions": []any{map[string]any{"name": "v1beta1", "schema": map[string]any{
			"openAPIV3Schema": map[string]any{"properties": map[string]any{"spec": map[string]any{"properties": props}}}}}}},
	}}
}
