package cache

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/policy"
)

// The cache compiles the ServingPolicies it watches into one set, swapped
// when a policy changes, with berth's namespace and kube-system exempt,
// and knows the labels of namespaces.
func TestPoliciesAreCompiledAndSwapped(t *testing.T) {
	teamA := &v1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Generation: 1},
		Spec: v1alpha1.ServingPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny},
		},
	}
	everywhere := &v1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "everywhere", Generation: 1},
		Spec:       v1alpha1.ServingPolicySpec{ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Audit}},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"team": "a"}}}
	berth := berthfake.NewSimpleClientset(teamA)
	c, err := New(berth, kubefake.NewClientset(ns), nil, time.Hour, ExemptNamespaces("berth-system"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Start(ctx)
	require.True(t, c.WaitForSync(ctx))

	sub := func(ns string) policy.Subject {
		return policy.Subject{Namespace: ns, NamespaceLabels: c.Policies.NamespaceLabels(ns)}
	}
	assert.Equal(t, map[string]string{"team": "a"}, c.Policies.NamespaceLabels("team-a"))
	require.Eventually(t, func() bool { return c.Policies.Set().Len() == 1 }, 5*time.Second, 10*time.Millisecond)
	before := c.Policies.Set()
	assert.Equal(t, []string{"team-a"}, before.For(sub("team-a")))

	_, err = berth.PolicyV1alpha1().ServingPolicies().Create(ctx, everywhere, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.Policies.Set().Len() == 2 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"everywhere", "team-a"}, c.Policies.Set().For(sub("team-a")))
	assert.Equal(t, []string{"team-a"}, before.For(sub("team-a")), "a compiled set never changes: it is swapped")
	assert.Empty(t, c.Policies.Set().For(sub("berth-system")), "berth's namespace is exempt")
	assert.Empty(t, c.Policies.Set().For(sub("kube-system")), "kube-system is exempt")

	require.NoError(t, berth.PolicyV1alpha1().ServingPolicies().Delete(ctx, "team-a", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return c.Policies.Set().Len() == 1 }, 5*time.Second, 10*time.Millisecond)
}
