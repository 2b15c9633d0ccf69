package classsync

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sameFlavorSpec decides whether the Kueue sync writes a flavor: a flavor
// as the apiserver returns it must equal what a class asks for, or every
// pass would write it again.
func TestSameFlavorSpec(t *testing.T) {
	taints := []corev1.Taint{{Key: "dedicated", Value: "inference", Effect: corev1.TaintEffectNoSchedule}}
	tols := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "inference", Effect: corev1.TaintEffectNoSchedule}}
	want := map[string]any{"nodeLabels": toJSON(map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
		"nodeTaints": toJSON(taints), "tolerations": toJSON(tols)}
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
		{"empty", `{}`, false},
	}
	for _, tt := range tests {
		var cur map[string]any
		if err := json.Unmarshal([]byte(tt.cur), &cur); err != nil {
			t.Fatal(err)
		}
		if got := sameFlavorSpec(cur, want); got != tt.same {
			t.Errorf("%s: sameFlavorSpec = %v, want %v", tt.name, got, tt.same)
		}
	}
	noTaints := map[string]any{"nodeLabels": toJSON(map[string]string{"a": "b"})}
	var cur map[string]any
	_ = json.Unmarshal([]byte(`{"nodeLabels":{"a":"b"}}`), &cur)
	if !sameFlavorSpec(cur, noTaints) {
		t.Errorf("a class without taints asks for no nodeTaints: equal to a flavor without them")
	}
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
