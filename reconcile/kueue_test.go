package reconcile

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
