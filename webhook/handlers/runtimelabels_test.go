package handlers

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
)

// A runtimes rule that selects runtimes by label judges the decided
// runtime by the labels selection decided with (selection.Runtime.Labels):
// a Warn policy never steers selection, so the labelled runtime is chosen
// and the composed service is warned about.
func TestPolicyRuntimeLabels(t *testing.T) {
	w, isvc := policyWorld(t)
	rt := w.addCSR(t, "deploy/runtimes/srt-mistral-7b-instruct-rt.yaml", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt.Labels = map[string]string{"tier": "premium"}
	w.index.UpsertClusterServingRuntime(rt)
	p := MakePolicy("premium").Actions(v1alpha1.Warn)
	p.p.Spec.Rules.Runtimes = &v1alpha1.ObjectRule{DeniedSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "premium"}}}
	h := w.withPolicies(policies(teamLabels, nil, p.Obj()))
	_, _, v := mutateValidate(t, h, admissionv1.Create, isvc, nil)
	require.True(t, v.Allowed, "%+v", v.Result)
	assert.Contains(t, strings.Join(v.Warnings, "\n"), "ServingPolicy/premium: ClusterServingRuntime srt-mistral-7b-instruct-rt is not allowed in namespace team-a: denied by labels tier=premium")
}
