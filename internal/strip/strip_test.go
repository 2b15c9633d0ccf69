package strip

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// fill sets every exported field reachable from v (a pointer) to a
// non-zero value: strings, numbers, booleans, one element per slice and
// map, pointers allocated. Unexported fields (inside Quantity and Time)
// stay zero.
func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fill(f, depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(`{"x":1}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}

// ManagedFields keeps every field but metadata.managedFields, of every
// kind berth-reconciler's informers cache with it.
func TestManagedFieldsKeepsEverythingElse(t *testing.T) {
	for _, obj := range []any{&corev1.Pod{}, &corev1.Service{}, &appsv1.ControllerRevision{}, &v1beta1.InferenceService{}} {
		fill(reflect.ValueOf(obj), 0)
		require.NotEmpty(t, obj.(metav1.Object).GetManagedFields())
		want := reflect.ValueOf(obj).MethodByName("DeepCopy").Call(nil)[0].Interface()
		want.(metav1.Object).SetManagedFields(nil)

		got, err := ManagedFields(obj)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%T", obj)
		assert.Nil(t, got.(metav1.Object).GetManagedFields())
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: &corev1.Pod{}}
	got, err := ManagedFields(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, got, "tombstones pass through")
}

// Node keeps the name, labels, resourceVersion, UID, the accelerators of
// the allocatable resources, the Ready condition's type and status, and
// spec.unschedulable (what selection.NodeInfoOf reads).
func TestNodeKeeps(t *testing.T) {
	n := &corev1.Node{}
	fill(reflect.ValueOf(n), 0)
	n.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("64")}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "ready"}}
	got, err := Node(n)
	require.NoError(t, err)
	want := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, ResourceVersion: n.ResourceVersion, UID: n.UID}}
	want.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
	want.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	want.Spec.Unschedulable = true
	assert.Equal(t, want, got)
}

// Pod keeps the identity, the node, the phase and the accelerator
// requests folded into one container (what
// selection.PodAcceleratorRequests reads).
func TestPodKeeps(t *testing.T) {
	p := &corev1.Pod{}
	fill(reflect.ValueOf(p), 0)
	p.Spec.InitContainers = nil
	p.Spec.Overhead = nil
	p.Spec.Resources = nil
	p.Spec.Containers = []corev1.Container{{Name: "engine", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("4")}}}}
	got, err := Pod(p)
	require.NoError(t, err)
	want := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion, UID: p.UID}}
	want.Spec.NodeName, want.Status.Phase = p.Spec.NodeName, p.Status.Phase
	want.Spec.Containers = []corev1.Container{{Name: "usage", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(2, resource.DecimalSI)}}}}
	assert.Equal(t, want, got)
}
