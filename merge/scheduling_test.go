package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func req(key string, op corev1.NodeSelectorOperator, vals ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: vals}
}

func term(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: rs}
}

func sel(ts ...corev1.NodeSelectorTerm) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: ts}
}

func TestAndNodeSelectors(t *testing.T) {
	zoneA := req("zone", corev1.NodeSelectorOpIn, "a")
	zoneB := req("zone", corev1.NodeSelectorOpIn, "b")
	gpu := req("gpu", corev1.NodeSelectorOpIn, "a100", "h100")
	gpuReordered := req("gpu", corev1.NodeSelectorOpIn, "h100", "a100")
	arm := req("arch", corev1.NodeSelectorOpIn, "arm64")
	tests := []struct {
		name       string
		a, b, want *corev1.NodeSelector
	}{
		{name: "nil and b", b: sel(term(gpu)), want: sel(term(gpu))},
		{name: "a and nil", a: sel(term(gpu)), want: sel(term(gpu))},
		{name: "term-less b places no constraint", a: sel(term(gpu)), b: sel(), want: sel(term(gpu))},
		{name: "one by one concatenates", a: sel(term(zoneA)), b: sel(term(gpu)), want: sel(term(zoneA, gpu))},
		{name: "cross product of ORed terms", a: sel(term(zoneA), term(zoneB)), b: sel(term(gpu), term(arm)),
			want: sel(term(zoneA, gpu), term(zoneA, arm), term(zoneB, gpu), term(zoneB, arm))},
		{name: "same requirement with values reordered is not repeated", a: sel(term(gpu)), b: sel(term(gpuReordered)), want: sel(term(gpu))},
		{name: "ANDing with a term already implied drops supersets", a: sel(term(zoneA, gpu), term(zoneB, gpu)), b: sel(term(zoneA), term(zoneB)),
			want: sel(term(zoneA, gpu), term(zoneB, gpu))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AndNodeSelectors(tc.a, tc.b)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got, AndNodeSelectors(got, tc.b), "ANDing the same selector again changes nothing")
		})
	}
}

func TestMergeAffinityUnionsOtherTerms(t *testing.T) {
	pref := corev1.PreferredSchedulingTerm{Weight: 10, Preference: term(req("spot", corev1.NodeSelectorOpIn, "true"))}
	anti := corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}
	a := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{pref}}}
	b := &corev1.Affinity{
		NodeAffinity:    &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{pref}},
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{anti}},
	}
	got := MergeAffinity(a, b)
	assert.Len(t, got.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, 1)
	assert.Equal(t, []corev1.PodAffinityTerm{anti}, got.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	assert.Nil(t, a.PodAntiAffinity, "inputs are not modified")
	assert.Nil(t, MergeAffinity(nil, nil))
}

func TestMergeTolerationsAndNodeSelector(t *testing.T) {
	t1 := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	t2 := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists}
	assert.Equal(t, []corev1.Toleration{t1, t2}, MergeTolerations([]corev1.Toleration{t1}, []corev1.Toleration{t2, t1}))

	// Seed 002 design details: class < runtime < service, per key.
	ns := MergeNodeSelector(nil, map[string]string{"nvidia.com/gpu.product": "A100-SXM4-40GB", "pool": "class"})
	ns = MergeNodeSelector(ns, map[string]string{"node-pool": "gpu-pool", "pool": "runtime"})
	ns = MergeNodeSelector(ns, map[string]string{"dedicated": "team-alpha", "pool": "service"})
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "A100-SXM4-40GB", "node-pool": "gpu-pool", "dedicated": "team-alpha", "pool": "service"}, ns)
}

// An AcceleratorClass's discovery reaches the pod as the rule selection
// matches nodes by: the nodeSelector pattern (discovery.nodeSelector and the
// spec.nodeSelector shorthand, ANDed) and each nodeSelectorTerm are
// alternatives. Layers are ANDed afterwards (MergeAffinity).
func TestClassPlacement(t *testing.T) {
	product := func(vals ...string) corev1.NodeSelectorRequirement {
		return req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, vals...)
	}
	spec := func(ns, short map[string]string, terms ...corev1.NodeSelectorTerm) *v1beta1.AcceleratorClassSpec {
		s := &v1beta1.AcceleratorClassSpec{NodeSelector: short}
		s.Discovery.NodeSelector, s.Discovery.NodeSelectorTerms = ns, terms
		return s
	}
	affinity := func(ts ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel(ts...)}}
	}
	zone := req("zone", corev1.NodeSelectorOpIn, "a")
	tests := []struct {
		name    string
		spec    *v1beta1.AcceleratorClassSpec
		wantSel map[string]string
		wantAff *corev1.Affinity
	}{
		{name: "a nodeSelector alone stays a nodeSelector",
			spec: spec(map[string]string{"gpu": "h100"}, map[string]string{"pool": "p"}), wantSel: map[string]string{"gpu": "h100", "pool": "p"}},
		{name: "terms alone are the required affinity", spec: spec(nil, nil, term(zone)), wantAff: affinity(term(zone))},
		{name: "seed 002 A100: the term admits every SXM4 node, so it is the whole rule",
			spec:    spec(map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, nil, term(product("NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"))),
			wantAff: affinity(term(product("NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB")))},
		{name: "seed 002 MI250X: two labelling schemes, ORed",
			spec: spec(map[string]string{"amd.com/gpu.product": "MI250X"}, nil, term(req("gpu.amd.com/model", corev1.NodeSelectorOpIn, "mi250x", "MI250X"))),
			wantAff: affinity(term(req("amd.com/gpu.product", corev1.NodeSelectorOpIn, "MI250X")),
				term(req("gpu.amd.com/model", corev1.NodeSelectorOpIn, "mi250x", "MI250X")))},
		{name: "conflicting shorthand and discovery values match no node, as in selection",
			spec:    spec(map[string]string{"gpu": "a"}, map[string]string{"gpu": "b"}),
			wantAff: affinity(term(req("gpu", corev1.NodeSelectorOpIn, "a"), req("gpu", corev1.NodeSelectorOpIn, "b")))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns, aff := ClassPlacement(tc.spec)
			assert.Equal(t, tc.wantSel, ns)
			assert.Equal(t, tc.wantAff, aff)
		})
	}
	t.Run("ANDed with another layer, the alternatives stay alternatives", func(t *testing.T) {
		_, aff := ClassPlacement(spec(map[string]string{"amd.com/gpu.product": "MI250X"}, nil, term(req("gpu.amd.com/model", corev1.NodeSelectorOpIn, "mi250x"))))
		got := MergeAffinity(aff, affinity(term(zone)))
		assert.Equal(t, affinity(term(req("amd.com/gpu.product", corev1.NodeSelectorOpIn, "MI250X"), zone),
			term(req("gpu.amd.com/model", corev1.NodeSelectorOpIn, "mi250x"), zone)), got)
	})
}
