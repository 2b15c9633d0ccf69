package e2e

// The policy gate judges images (issue 21, item 8): policy-aware selection
// exists so that a service is given what its policies allow instead of
// being denied for what berth chose. With a Deny policy that allows one
// registry, auto-selection passes over a higher-priority runtime whose
// image is elsewhere.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Two auto-selectable runtimes in a namespace: "fast" (priority 10) runs
// an image from docker.io/evil, "plain" (priority 5) one from
// registry.berth.dev. Under a Deny policy allowing only registry.berth.dev,
// a service that names no runtime gets "plain", and the decision says why
// "fast" lost.
func TestPolicyGateJudgesImages(t *testing.T) {
	t.Parallel()
	ns, sel := policyNamespace(t, "e2e-pol-gate-img")
	// The runtimes come first: the policy would refuse "fast" itself.
	createServingRuntime(t, autoRuntime(ns, "fast", evil, 10))
	createServingRuntime(t, autoRuntime(ns, "plain", e2eImage, 5))
	svc := MakeService(ns, "chat").Obj()
	before := admittedDryRun(t, svc, func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] != ""
	})
	require.Equal(t, "ServingRuntime/fast", before.Annotations[v1beta1.AnnotationResolvedRuntime], "without a policy the higher priority wins")

	name := "gate-images-" + ns
	createAdmissionPolicy(t, &v1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ServingPolicySpec{
			NamespaceSelector: sel,
			ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny},
			Rules:             v1alpha1.ServingPolicyRules{Images: &v1alpha1.ImageRule{AllowedPrefixes: []string{"registry.berth.dev"}}},
		},
	})
	// Once the webhook has the policy, the service is either denied (the
	// defect) or given "plain".
	changed := func(s *v1beta1.InferenceService, err error, _ []string) bool {
		return err != nil || s.Annotations[v1beta1.AnnotationResolvedRuntime] != "ServingRuntime/fast"
	}
	createUntil(t, svc, true, changed)
	got, err, warnings := createUntil(t, svc, false, admitted)
	require.NoError(t, err, "the service is denied for the runtime berth chose")
	t.Logf("decision:\n%s\nwarnings: %q", got.Annotations[v1beta1.AnnotationDecision], warnings)
	assert.Equal(t, "ServingRuntime/plain", got.Annotations[v1beta1.AnnotationResolvedRuntime])
	lost := "ServingRuntime/fast: forbidden by ServingPolicy/" + name + ": image " + evil + " is not from an allowed registry (allowed: registry.berth.dev)"
	assert.Contains(t, got.Annotations[v1beta1.AnnotationDecision], lost)
	assert.Contains(t, strings.Join(warnings, "\n"), lost)
}
