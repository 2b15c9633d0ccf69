package servinggroups

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// The owned objects' cache holds them without managedFields and
// otherwise whole; objects without the InferenceService label are not in
// it.
func TestOwnedCacheStripsManagedFields(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "berth-reconciler", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-engine-0", Namespace: "ns", Labels: map[string]string{v1beta1.LabelInferenceService: "svc"},
			Annotations: map[string]string{v1beta1.AnnotationRevision: "r1"}, ManagedFields: managed},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "engine", Image: "e:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}}
	kube := kubefake.NewClientset(pod, other)
	c := New(kube, berthfake.NewSimpleClientset(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.KubeInformers().Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), c.KubeInformers().Core().V1().Pods().Informer().HasSynced))

	got, err := c.pods.Pods("ns").Get("svc-engine-0")
	require.NoError(t, err)
	want := pod.DeepCopy()
	want.ManagedFields = nil
	assert.Equal(t, want, got)
	_, err = c.pods.Pods("ns").Get("other")
	assert.Error(t, err, "unlabelled pods are not cached")
}
