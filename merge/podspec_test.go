package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// workloadRef (Kubernetes 1.35's GenericWorkload) is a pointer like
// hostnameOverride: a layer that sets it replaces the one below, with a
// copy of its own.
func TestMergePodLevelWorkloadRef(t *testing.T) {
	dst := corev1.PodSpec{WorkloadRef: &corev1.WorkloadReference{Name: "runtime", PodGroup: "g"}}
	mergePodLevel(&dst, &v1beta1.PodSpec{})
	assert.Equal(t, &corev1.WorkloadReference{Name: "runtime", PodGroup: "g"}, dst.WorkloadRef, "a layer without it keeps the one below")

	src := v1beta1.PodSpec{WorkloadRef: &corev1.WorkloadReference{Name: "svc", PodGroup: "workers", PodGroupReplicaKey: "0"}}
	mergePodLevel(&dst, &src)
	assert.Equal(t, &corev1.WorkloadReference{Name: "svc", PodGroup: "workers", PodGroupReplicaKey: "0"}, dst.WorkloadRef)
	src.WorkloadRef.Name = "changed"
	assert.Equal(t, "svc", dst.WorkloadRef.Name, "the merged spec does not share the layer's pointer")
}
