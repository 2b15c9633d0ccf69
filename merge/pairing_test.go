package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// pairingRouter is the pd-router case with selectors that name the pod's
// pairing, as the shipped prefill/decode runtimes' routers do.
func pairingRouter(t *testing.T) Input {
	t.Helper()
	in, _ := loadCase(t, "testdata/pd-router")
	r := in.Runtime.RouterConfig.Runner
	r.Args = append(r.Args, "--prefill-selector", "ome.io/component=engine", "ome.io/pairing={{.Pairing}}",
		"--decode-selector", "ome.io/component=decoder", "ome.io/pairing={{ .Pairing }}")
	return in
}

// TestPairingTemplate: {{.Pairing}} renders the pod's ome.io/pairing,
// read from its labels, and "" for a pod without one.
func TestPairingTemplate(t *testing.T) {
	got, err := RenderTemplate("ome.io/pairing={{.Pairing}}", TemplateData{Name: "x", Pairing: "0123456789abcdef"})
	require.NoError(t, err)
	assert.Equal(t, "ome.io/pairing=0123456789abcdef", got)
	got, err = RenderTemplate("ome.io/pairing={{.Pairing}}", TemplateData{Name: "x"})
	require.NoError(t, err)
	assert.Equal(t, "ome.io/pairing=", got)
	assert.Empty(t, TemplateKeys("{{.Pairing}}"), "the pairing is no label or annotation of the service")

	in := pairingRouter(t)
	pod := SkeletonPod(in.Service, v1beta1.ComponentRouter, GroupIdentity{})
	markPairing(pod, "0123456789abcdef")
	g, err := GroupIdentityFromPod(pod)
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef", g.Pairing)
	in.Group = g
	require.NoError(t, ComposePod(in, pod))
	args := pod.Spec.Containers[0].Args
	assert.Contains(t, args, "ome.io/pairing=0123456789abcdef")
	assert.NotContains(t, args, "ome.io/pairing={{.Pairing}}")
}

// TestPairingOutsideRevision: the router's revision is the same whatever
// pairing it is rendered for, so a new pairing never rolls the routers
// that still serve the old one.
func TestPairingOutsideRevision(t *testing.T) {
	in := pairingRouter(t)
	base := mustRevision(t, in)
	in.Group.Pairing = "0123456789abcdef"
	assert.Equal(t, base, mustRevision(t, in))
	in.Group.Pairing = "fedcba9876543210"
	assert.Equal(t, base, mustRevision(t, in))
}

// TestPlanPairing: a plan renders one pairing and refuses to compose a
// pod of another (the webhook keys its plans by role and pairing).
func TestPlanPairing(t *testing.T) {
	in := pairingRouter(t)
	in.Group.Pairing = "aaaaaaaaaaaaaaaa"
	pl, err := NewPlan(in)
	require.NoError(t, err)
	pod := SkeletonPod(in.Service, v1beta1.ComponentRouter, GroupIdentity{})
	require.NoError(t, pl.Compose(pod, GroupIdentity{Pairing: "aaaaaaaaaaaaaaaa"}))
	assert.Contains(t, pod.Spec.Containers[0].Args, "ome.io/pairing=aaaaaaaaaaaaaaaa")
	other := &corev1.Pod{}
	require.EqualError(t, pl.Compose(other, GroupIdentity{Pairing: "bbbbbbbbbbbbbbbb"}),
		`merge: a plan for pairing "aaaaaaaaaaaaaaaa" cannot compose a pod of pairing "bbbbbbbbbbbbbbbb"`)
}
