package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
)

// An invalid ServingPolicy is denied with a cause per field at fault, in
// berth's policy group; a valid one is admitted, and an update that keeps
// an error the stored policy had is not denied for it.
func TestValidateServingPolicy(t *testing.T) {
	good := MakePolicy("team-a").Namespaces(map[string]string{"team": "a"}).Classes("nvidia-a100-*").Obj()
	resp := ValidateServingPolicy(ctx, request(t, admissionv1.Create, "ServingPolicy", good, nil, "", good.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)

	bad := good.DeepCopy()
	bad.Spec.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near", Values: []string{"a"}}}
	bad.Spec.ValidationActions = []v1alpha1.ValidationAction{"Block"}
	budget := int64(-1)
	bad.Spec.Rules.MaxAcceleratorsPerNamespace = &budget
	resp = ValidateServingPolicy(ctx, request(t, admissionv1.Create, "ServingPolicy", bad, nil, "", bad.Name))
	require.False(t, resp.Allowed)
	assert.Equal(t, "policy.berth.dev", resp.Result.Details.Group)
	assert.Equal(t, "ServingPolicy", resp.Result.Details.Kind)
	var fields []string
	for _, c := range resp.Result.Details.Causes {
		fields = append(fields, c.Field)
	}
	assert.ElementsMatch(t, []string{
		"spec.namespaceSelector.matchExpressions[0].operator",
		"spec.validationActions[0]",
		"spec.rules.maxAcceleratorsPerNamespace",
	}, fields, "message:\n%s", resp.Result.Message)
	assert.Contains(t, resp.Result.Message, "ServingPolicy team-a is invalid:\n- ")

	// An update of a policy stored with the bad budget (before the rule)
	// that only relabels it passes.
	stored := good.DeepCopy()
	stored.Spec.Rules.MaxAcceleratorsPerNamespace = &budget
	relabelled := stored.DeepCopy()
	relabelled.Labels = map[string]string{"owner": "platform"}
	resp = ValidateServingPolicy(ctx, request(t, admissionv1.Update, "ServingPolicy", relabelled, stored, "", stored.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)
}
