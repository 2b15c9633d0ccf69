package classsync

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta1"

	devkueue "github.com/berthdev/berth/internal/devenv/kueue"
)

// sameFlavorSpec decides whether the Kueue sync writes a flavor: a flavor
// as the apiserver returns it must equal what a class asks for, or every
// pass would write it again.
func TestSameFlavorSpec(t *testing.T) {
	taints := []corev1.Taint{{Key: "dedicated", Value: "inference", Effect: corev1.TaintEffectNoSchedule}}
	tols := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "inference", Effect: corev1.TaintEffectNoSchedule}}
	want := kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
		NodeTaints: taints, Tolerations: tols}
	served := `{"nodeLabels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"},"topologyName":"default",
		"nodeTaints":[{"effect":"NoSchedule","key":"dedicated","value":"inference"}],
		"tolerations":[{"effect":"NoSchedule","key":"dedicated","operator":"Equal","value":"inference"}]}`
	tests := []struct {
		name string
		cur  string
		same bool
	}{
		{"as served, with a field berth does not own", served, true},
		{"another label value", `{"nodeLabels":{"nvidia.com/gpu.product":"NVIDIA-H200"},
			"nodeTaints":[{"effect":"NoSchedule","key":"dedicated","value":"inference"}],
			"tolerations":[{"effect":"NoSchedule","key":"dedicated","operator":"Equal","value":"inference"}]}`, false},
		{"taints missing", `{"nodeLabels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"}}`, false},
		{"a taint's timeAdded", `{"nodeLabels":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3"},
			"nodeTaints":[{"effect":"NoSchedule","key":"dedicated","value":"inference","timeAdded":"2026-01-02T03:04:05Z"}],
			"tolerations":[{"effect":"NoSchedule","key":"dedicated","operator":"Equal","value":"inference"}]}`, false},
		{"empty", `{}`, false},
	}
	for _, tt := range tests {
		cur := servedSpec(t, tt.cur)
		if got := sameFlavorSpec(&cur, &want); got != tt.same {
			t.Errorf("%s: sameFlavorSpec = %v, want %v", tt.name, got, tt.same)
		}
	}
	noTaints := kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"a": "b"}}
	cur := servedSpec(t, `{"nodeLabels":{"a":"b"},"nodeTaints":[],"tolerations":[]}`)
	if !sameFlavorSpec(&cur, &noTaints) {
		t.Errorf("a class without taints asks for no nodeTaints: equal to a flavor with none")
	}
}

// servedSpec reads a flavor's spec as JSON the way the sync reads a flavor
// from the dynamic client's cache: through the unstructured converter.
func servedSpec(t *testing.T, spec string) kueue.ResourceFlavorSpec {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(spec), &m))
	var f kueue.ResourceFlavor
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"spec": m}, &f))
	return f.Spec
}

// flavorObject is what the dynamic client sends: Kueue's apiVersion and
// kind, and the spec under Kueue's JSON names.
func TestFlavorObject(t *testing.T) {
	u, err := flavorObject(&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "f"},
		Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"a": "b"}}})
	require.NoError(t, err)
	assert.Equal(t, "kueue.x-k8s.io/v1beta1", u.GetAPIVersion())
	assert.Equal(t, "ResourceFlavor", u.GetKind())
	assert.Equal(t, "f", u.GetName())
	assert.Equal(t, map[string]any{"nodeLabels": map[string]any{"a": "b"}}, u.Object["spec"])
}

// A class made from a flavor by an earlier berth was owned by it; the sync
// drops that owner (and only Kueue's ResourceFlavors) on its next update.
func TestWithoutFlavorOwners(t *testing.T) {
	flavor := metav1.OwnerReference{APIVersion: "kueue.x-k8s.io/v1beta1", Kind: "ResourceFlavor", Name: "gpu-a100", UID: "u1"}
	other := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "ResourceFlavor", Name: "x", UID: "u2"}
	mine := metav1.OwnerReference{APIVersion: "ome.io/v1beta1", Kind: "AcceleratorClass", Name: "c", UID: "u3"}
	tests := []struct {
		name string
		in   []metav1.OwnerReference
		want []metav1.OwnerReference
	}{
		{"none", nil, nil},
		{"Kueue's flavor dropped", []metav1.OwnerReference{flavor}, nil},
		{"others kept", []metav1.OwnerReference{other, flavor, mine}, []metav1.OwnerReference{other, mine}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, withoutFlavorOwners(tt.in), tt.name)
	}
}

// The Kueue Go types the sync writes through are the release whose CRDs
// and controller manager the e2e tests run (internal/devenv/kueue): go.mod
// and the Makefile's KUEUE_VERSION move together. (A test binary's build
// info lists no dependencies, so go.mod is read.)
func TestKueueTypesMatchTheKueueTheE2ERuns(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	var got string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "sigs.k8s.io/kueue" {
			got = f[1]
		}
	}
	assert.Equal(t, devkueue.Version, got, "sigs.k8s.io/kueue in go.mod")
}
