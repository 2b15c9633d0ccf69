package servinggroups

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// These drive the service's side of ServingPolicy (verdicts.go,
// quotaexceeded.go) against client-go's fake clientsets, with fake
// verdicts; reconcile/policy tests the controller that makes them, and the
// e2e suite (policy_budget_test.go) both against a real apiserver.

func ptrTo[T any](v T) *T { return &v }

// fakeVerdicts stand in for the ServingPolicy controller.
type fakeVerdicts struct {
	mu     sync.Mutex
	cond   map[string]*metav1.Condition
	known  bool
	policy string
}

func (v *fakeVerdicts) Compliance(key string, _ int64) (*metav1.Condition, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cond[key], v.known
}

func (v *fakeVerdicts) QuotaPolicy(*corev1.ResourceQuota) string { return v.policy }

func (v *fakeVerdicts) set(key string, c *metav1.Condition, known bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cond[key], v.known = c, known
}

func TestVerdictsReachTheServiceCondition(t *testing.T) {
	v := &fakeVerdicts{cond: map[string]*metav1.Condition{}}
	f := newFixtureWith(t, Options{Now: time.Now, Policy: PolicyOptions{Verdicts: v}}, runtimeObj("rt", false), serviceObj("chat", "rt", 1))
	violates := &metav1.Condition{Type: ConditionPolicyCompliant, Status: metav1.ConditionFalse, Reason: "ViolatesServingPolicy",
		Message: "violates ServingPolicy/small: too many", ObservedGeneration: 1}
	compliance := func() *metav1.Condition {
		s, err := f.c.services.InferenceServices("ns").Get("chat")
		require.NoError(t, err)
		return meta.FindStatusCondition(s.Status.Conditions, ConditionPolicyCompliant)
	}
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 1 })
	assert.Nil(t, compliance(), "no verdict known yet: nothing is said")

	v.set("ns/chat", violates, true)
	f.syncUntil("ns/chat", func() bool { c := compliance(); return c != nil && c.Status == metav1.ConditionFalse })
	assert.Equal(t, violates.Message, compliance().Message)

	v.set("ns/chat", nil, false)
	_, err := f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	stored, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotNil(t, meta.FindStatusCondition(stored.Status.Conditions, ConditionPolicyCompliant),
		"a verdict not known (after a restart, before every policy was evaluated) leaves the condition as it is")

	v.set("ns/chat", nil, true)
	f.syncUntil("ns/chat", func() bool { return compliance() == nil })
}

func TestWithoutPoliciesNoPolicyCompliant(t *testing.T) {
	svc := serviceObj("chat", "rt", 1)
	svc.Status.Conditions = []metav1.Condition{{Type: ConditionPolicyCompliant, Status: metav1.ConditionTrue, Reason: "Compliant", Message: "complies with ServingPolicy/gone"}}
	f := newFixture(t, runtimeObj("rt", false), svc)
	f.syncUntil("ns/chat", func() bool {
		s, err := f.c.services.InferenceServices("ns").Get("chat")
		return err == nil && meta.FindStatusCondition(s.Status.Conditions, ConditionPolicyCompliant) == nil
	})
}

func forbidden(msg string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "chat-engine-0", errors.New(msg))
}

func TestQuotaDenial(t *testing.T) {
	exceeded := "exceeded quota: berth-policy-budget, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=16, limited: requests.nvidia.com/gpu=16"
	cases := []struct {
		name string
		err  error
		want string
		ok   bool
	}{
		{name: "nil", err: nil},
		{name: "a webhook denial", err: fmt.Errorf("create pod ns/chat-engine-0: %w", forbidden("admission webhook denied the request"))},
		{name: "exceeded, wrapped and joined with another error",
			err:  errors.Join(errors.New("delete pod: boom"), fmt.Errorf("create pod ns/chat-engine-0: %w", forbidden(exceeded))),
			want: `pods "chat-engine-0" is forbidden: ` + exceeded, ok: true},
		{name: "a quota whose status is not computed yet",
			err:  forbidden("status unknown for quota: berth-policy-budget, resources: requests.nvidia.com/gpu"),
			want: `pods "chat-engine-0" is forbidden: status unknown for quota: berth-policy-budget, resources: requests.nvidia.com/gpu`, ok: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := quotaDenial(tc.err)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
			if ok {
				assert.Equal(t, "berth-policy-budget", deniedQuotaName(got))
			}
		})
	}
}

func TestQuotaFreed(t *testing.T) {
	q := func(hard, used int64) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"requests.nvidia.com/gpu": *resource.NewQuantity(hard, resource.DecimalSI)},
			Used: corev1.ResourceList{"requests.nvidia.com/gpu": *resource.NewQuantity(used, resource.DecimalSI)},
		}}
	}
	cases := []struct {
		name     string
		old, cur *corev1.ResourceQuota
		want     bool
	}{
		{name: "new", old: nil, cur: q(16, 0), want: true},
		{name: "status computed", old: &corev1.ResourceQuota{}, cur: q(16, 0), want: true},
		{name: "a pod went away", old: q(16, 16), cur: q(16, 8), want: true},
		{name: "the budget grew", old: q(16, 16), cur: q(24, 16), want: true},
		{name: "a pod came", old: q(16, 8), cur: q(16, 16)},
		{name: "unchanged", old: q(16, 16), cur: q(16, 16)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, quotaFreed(tc.old, tc.cur)) })
	}
}

func TestQuotaExceededCondition(t *testing.T) {
	msg := `pods "chat-engine-0" is forbidden: exceeded quota: berth-policy-budget, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=16, limited: requests.nvidia.com/gpu=16`
	assert.Equal(t, metav1.Condition{Type: ConditionQuotaExceeded, Status: metav1.ConditionTrue, Reason: ReasonExceededQuota, ObservedGeneration: 3,
		Message: "pods cannot be created: " + msg + " (ResourceQuota berth-policy-budget keeps the namespace budget of ServingPolicy/budget); retried with backoff, and at once when the quota frees room"},
		quotaExceededCondition(msg, "budget", 3))
}

func TestQuotaExceededIsSaidAndBackedOff(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 2))
	refuse := true
	f.kube.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse {
			return true, nil, forbidden("exceeded quota: berth-policy-budget, requested: requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=16, limited: requests.nvidia.com/gpu=16")
		}
		return false, nil, nil
	})
	_, err := f.c.sync(f.ctx, "ns/chat")
	require.Error(t, err)
	require.True(t, f.c.quotaRetry(f.ctx, "ns/chat", err), "a quota denial is handled")
	assert.False(t, f.c.quotaRetry(f.ctx, "ns/chat", forbidden("admission webhook denied the request")), "another error is not")
	isvc, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	c := meta.FindStatusCondition(isvc.Status.Conditions, ConditionQuotaExceeded)
	require.NotNil(t, c, "QuotaExceeded is on the service")
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Contains(t, c.Message, "exceeded quota: berth-policy-budget")
	assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second}, []time.Duration{f.c.pol.nextQuotaDelay("ns/chat"), f.c.pol.nextQuotaDelay("ns/chat")},
		"the backoff doubles from 5s (the first retry was 5s)")

	refuse = false
	f.syncUntil("ns/chat", func() bool {
		s, err := f.c.services.InferenceServices("ns").Get("chat")
		return err == nil && len(f.pods("ns")) == 2 && meta.FindStatusCondition(s.Status.Conditions, ConditionQuotaExceeded) == nil
	})
	assert.Equal(t, 5*time.Second, f.c.pol.nextQuotaDelay("ns/chat"), "a sync that created everything forgets the backoff")
}
