package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ptr[T any](v T) *T { return &v }

// quantity parses q; a test's literal that does not parse fails the test
// at once (resource.MustParse panics).
func quantity(q string) *resource.Quantity { return ptr(resource.MustParse(q)) }

func withEntry(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// count is n of a resource, as a requests/limits list of r.
func count(r corev1.ResourceName, n int64) corev1.ResourceList {
	return corev1.ResourceList{r: *resource.NewQuantity(n, resource.DecimalSI)}
}

// ContainerEnv is the value of env var name in the pod's container named
// container, and whether it is set.
func ContainerEnv(p *corev1.Pod, container, name string) (string, bool) {
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
	}
	return "", false
}
