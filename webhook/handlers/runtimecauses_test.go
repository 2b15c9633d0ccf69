package handlers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// One denial of a runtime gathers the errors of every check (package
// validation, selection, merge, the priority tie and a missing class),
// each a cause carrying its own field, and the message lists them sorted.
func TestRuntimeDenialCausesNameEveryField(t *testing.T) {
	w := newWorld()
	first := seedRuntime(t, "first", 1)
	w.index.UpsertClusterServingRuntime(first)
	csr := seedRuntime(t, "second", 1)
	csr.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	csr.Spec.EngineConfig.Runner.Args = []string{"--model={{.Spec.Model}}"}
	csr.Spec.EngineConfig.Runner.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}
	csr.Spec.AcceleratorRequirements = &v1beta1.AcceleratorRequirements{
		SupportedClasses: []string{"missing-class"},
		PreferenceOrder:  []v1beta1.AcceleratorPreference{{Class: ""}},
	}
	resp := w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", csr, nil, "", csr.Name))
	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result.Details)

	const tie = "priority 1 for format safetensors is also used by ClusterServingRuntime/first (supportedModelFormats[0]), and both could serve the same model; give ClusterServingRuntime/second or ClusterServingRuntime/first a different priority"
	const template = `template {{.Spec.Model}} is not one berth renders; use {{.Name}}, {{.Namespace}}, {{.Labels.key}}, {{.Annotations.key}} or {{index .Labels "key-with-dashes"}}`
	want := []metav1.StatusCause{
		{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.acceleratorRequirements.preferenceOrder[0].class", Message: "Invalid value: is empty; name an AcceleratorClass"},
		{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.acceleratorRequirements.supportedClasses[0]", Message: `Invalid value: AcceleratorClass "missing-class" does not exist; create it first or fix the name`},
		{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.engineConfig.runner.args[0]", Message: "Invalid value: " + template},
		{Type: metav1.CauseTypeFieldValueDuplicate, Field: "spec.engineConfig.runner.env[1].name", Message: `Duplicate value: "A": also spec.engineConfig.runner.env[0].name; only the last definition would reach the pod, so remove one`},
		{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.supportedModelFormats[0].priority", Message: "Invalid value: " + tie},
	}
	if diff := cmp.Diff(want, resp.Result.Details.Causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	wantMessage := "ClusterServingRuntime second is invalid:" +
		"\n- spec.acceleratorRequirements.preferenceOrder[0].class: is empty; name an AcceleratorClass" +
		"\n- spec.acceleratorRequirements.supportedClasses[0]: AcceleratorClass \"missing-class\" does not exist; create it first or fix the name" +
		"\n- spec.engineConfig.runner.args[0]: " + template +
		"\n- spec.engineConfig.runner.env[1].name: Duplicate value: \"A\": also spec.engineConfig.runner.env[0].name; only the last definition would reach the pod, so remove one" +
		"\n- spec.supportedModelFormats[0].priority: " + tie
	if diff := cmp.Diff(wantMessage, resp.Result.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}
