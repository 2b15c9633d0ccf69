package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rl builds a ResourceList from name, quantity pairs.
func rl(kv ...string) corev1.ResourceList {
	if len(kv) == 0 {
		return nil
	}
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func rr(req, lim corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: req, Limits: lim}
}

// assertResources compares quantities by value, not by formatting.
func assertResources(t *testing.T, want, got corev1.ResourceRequirements) {
	t.Helper()
	for _, pair := range []struct {
		kind      string
		want, got corev1.ResourceList
	}{{"requests", want.Requests, got.Requests}, {"limits", want.Limits, got.Limits}} {
		assert.Len(t, pair.got, len(pair.want), "%s: %v", pair.kind, pair.got)
		for name, q := range pair.want {
			g, ok := pair.got[name]
			if assert.True(t, ok, "%s missing %s", pair.kind, name) {
				assert.Zero(t, q.Cmp(g), "%s %s: want %s got %s", pair.kind, name, q.String(), g.String())
			}
		}
	}
}

func TestMergeResources(t *testing.T) {
	tests := []struct {
		name                    string
		weak, accel, user, want corev1.ResourceRequirements
		target                  corev1.ResourceName
	}{
		{name: "runtime fills gaps",
			weak: rr(rl("cpu", "4", "memory", "16Gi"), rl("memory", "32Gi")),
			user: rr(rl("cpu", "8"), nil),
			want: rr(rl("cpu", "8", "memory", "16Gi"), rl("memory", "32Gi"))},
		{name: "max of user and accelerator per resource",
			accel: rr(nil, rl("nvidia.com/gpu", "2", "memory", "64Gi")),
			user:  rr(nil, rl("nvidia.com/gpu", "4", "memory", "32Gi")),
			want:  rr(nil, rl("nvidia.com/gpu", "4", "memory", "64Gi"))},
		{name: "user below runtime still wins (user overrides runtime; max is only with the accelerator)",
			weak: rr(nil, rl("cpu", "8")), user: rr(nil, rl("cpu", "2")),
			want: rr(nil, rl("cpu", "2"))},
		{name: "user request above a runtime limit raises the limit",
			weak: rr(nil, rl("memory", "2Gi")), user: rr(rl("memory", "4Gi"), nil),
			want: rr(rl("memory", "4Gi"), rl("memory", "4Gi"))},
		{name: "runtime request above user limit is lowered",
			weak: rr(rl("cpu", "8"), nil), user: rr(nil, rl("cpu", "2")),
			want: rr(rl("cpu", "2"), rl("cpu", "2"))},
		{name: "both weak and request above limit: the larger wins",
			weak: rr(rl("cpu", "8"), rl("cpu", "2")),
			want: rr(rl("cpu", "8"), rl("cpu", "8"))},
		{name: "extended resources: requests equal limits, the stronger layer wins",
			weak: rr(rl("nvidia.com/gpu", "1"), nil), accel: rr(nil, rl("nvidia.com/gpu", "2")),
			want: rr(rl("nvidia.com/gpu", "2"), rl("nvidia.com/gpu", "2"))},
		{name: "extended resource with only a request gets the same limit",
			user: rr(rl("nvidia.com/gpu", "2"), nil),
			want: rr(rl("nvidia.com/gpu", "2"), rl("nvidia.com/gpu", "2"))},
		{name: "vendor translation to amd",
			weak: rr(nil, rl("nvidia.com/gpu", "8")), user: rr(nil, rl("gpu.intel.com/i915", "2")), target: "amd.com/gpu",
			want: rr(nil, rl("amd.com/gpu", "2"))},
		{name: "translation keeps non-accelerator resources",
			accel: rr(nil, rl("amd.com/gpu", "1", "nvidia.com/mig-3g.20gb", "2", "cpu", "1")), target: "nvidia.com/gpu",
			want: rr(nil, rl("nvidia.com/gpu", "1", "nvidia.com/mig-3g.20gb", "2", "cpu", "1"))},
		{name: "hugepages are not extended",
			weak: rr(rl("hugepages-2Mi", "1Gi"), rl("hugepages-2Mi", "2Gi")),
			want: rr(rl("hugepages-2Mi", "1Gi"), rl("hugepages-2Mi", "2Gi"))},
		{name: "nothing at all", want: rr(nil, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MergeResources(tc.weak, tc.accel, tc.user, tc.target)
			assertResources(t, tc.want, got)
			// Idempotent: composing again with the result as the lowest layer.
			again := MergeResources(overlay(got, tc.weak, tc.target), tc.accel, tc.user, tc.target)
			assertResources(t, got, again)
		})
	}
}

// overlay is what a second ComposePod sees as weak resources: the output,
// then the runtime again.
func overlay(out, weak corev1.ResourceRequirements, target corev1.ResourceName) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: overlayResources(overlayResources(nil, out.Requests), TranslateAcceleratorResources(weak.Requests, target)),
		Limits:   overlayResources(overlayResources(nil, out.Limits), TranslateAcceleratorResources(weak.Limits, target)),
	}
}

func TestTranslateAcceleratorResourcesCollision(t *testing.T) {
	got := TranslateAcceleratorResources(rl("nvidia.com/gpu", "1", "amd.com/gpu", "3"), "gpu.intel.com/i915")
	assertResources(t, rr(nil, rl("gpu.intel.com/i915", "3")), rr(nil, got))
	in := rl("nvidia.com/gpu", "1")
	assert.Equal(t, in, TranslateAcceleratorResources(in, ""), "no target, no change")
}
