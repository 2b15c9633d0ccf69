package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestMergeEnv(t *testing.T) {
	fieldRef := &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}
	v := func(n, val string) corev1.EnvVar { return corev1.EnvVar{Name: n, Value: val} }
	tests := []struct {
		name             string
		base, over, want []corev1.EnvVar
	}{
		{name: "override in place, new appended in order", base: []corev1.EnvVar{v("A", "1"), v("B", "2")}, over: []corev1.EnvVar{v("C", "3"), v("A", "9")},
			want: []corev1.EnvVar{v("A", "9"), v("B", "2"), v("C", "3")}},
		{name: "valueFrom replaces a value", base: []corev1.EnvVar{v("IP", "x")}, over: []corev1.EnvVar{{Name: "IP", ValueFrom: fieldRef}},
			want: []corev1.EnvVar{{Name: "IP", ValueFrom: fieldRef}}},
		{name: "value replaces a valueFrom", base: []corev1.EnvVar{{Name: "IP", ValueFrom: fieldRef}}, over: []corev1.EnvVar{v("IP", "y")},
			want: []corev1.EnvVar{v("IP", "y")}},
		{name: "duplicates in base collapse to the last", base: []corev1.EnvVar{v("A", "1"), v("A", "2")}, over: []corev1.EnvVar{v("B", "3")},
			want: []corev1.EnvVar{v("A", "2"), v("B", "3")}},
		{name: "empty over keeps base", base: []corev1.EnvVar{v("A", "1")}, want: []corev1.EnvVar{v("A", "1")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MergeEnv(tc.base, tc.over)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got, MergeEnv(got, tc.over), "idempotent")
		})
	}
}

// TestMergeEnvLayers: runtime < accelerator < user (seed 002 Story 8 scenario 3).
func TestMergeEnvLayers(t *testing.T) {
	v := func(n, val string) corev1.EnvVar { return corev1.EnvVar{Name: n, Value: val} }
	runtime := []corev1.EnvVar{v("MODEL_PATH", "/mnt/models"), v("TENSOR_PARALLEL_SIZE", "8")}
	accel := []corev1.EnvVar{v("TENSOR_PARALLEL_SIZE", "1"), v("ENABLE_FP8", "true")}
	user := []corev1.EnvVar{v("TENSOR_PARALLEL_SIZE", "4"), v("CUSTOM_SETTING", "user-value")}
	got := MergeEnv(MergeEnv(runtime, accel), user)
	assert.Equal(t, []corev1.EnvVar{v("MODEL_PATH", "/mnt/models"), v("TENSOR_PARALLEL_SIZE", "4"), v("ENABLE_FP8", "true"), v("CUSTOM_SETTING", "user-value")}, got)
}
