package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
)

// These drive the policy controller and the QuotaExceeded path against
// client-go's fake clientsets; the e2e suite (policy_budget_test.go)
// proves them against a real apiserver and quota admission.

// startPolicies starts the policy controller's own informers.
func (f *fixture) startPolicies(namespaces ...*corev1.Namespace) {
	f.t.Helper()
	for _, ns := range namespaces {
		_, err := f.kube.CoreV1().Namespaces().Create(f.ctx, ns, metav1.CreateOptions{})
		require.NoError(f.t, err)
	}
	f.c.pol.kube.Start(f.ctx.Done())
	f.eventually("policy caches synced and namespaces seen", func() bool {
		for _, s := range f.c.pol.synced {
			if !s() {
				return false
			}
		}
		got, _ := f.c.pol.namespaces.List(everythingSel)
		return len(got) == len(namespaces)
	})
}

func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	require.NoError(f.t, err, what)
}

// quotaWrites counts the create, update and delete calls on quotas.
func (f *fixture) quotaWrites() int {
	n := 0
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "resourcequotas" && (a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "delete") {
			n++
		}
	}
	return n
}

func (f *fixture) policy(name string) *policyv1alpha1.ServingPolicy {
	sp, err := f.berth.PolicyV1alpha1().ServingPolicies().Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return sp
}

func TestPolicySyncKeepsQuotasAndStatus(t *testing.T) {
	svc := serviceObj("chat", "rt", 1)
	svc.Namespace = "team-a"
	f := newFixture(t, runtimeObj("rt", false), svc, MakePolicy("budget").Namespaces(map[string]string{"tier": "gpu"}).Budget(16).Obj())
	f.startPolicies(MakeNamespace("team-a").Label("tier", "gpu").Obj(), MakeNamespace("web").Obj(), MakeNamespace("berth-system").Label("tier", "gpu").Obj())
	f.c.pol.opts.Namespace = "berth-system"

	require.NoError(t, f.c.pol.sync(f.ctx, "budget"))
	q, err := f.kube.CoreV1().ResourceQuotas("team-a").Get(f.ctx, "berth-policy-budget", metav1.GetOptions{})
	require.NoError(t, err)
	want := wantQuota("budget", "team-a", 16, gpuResources...)
	assert.Equal(t, want.Spec, q.Spec)
	assert.Equal(t, want.Labels, q.Labels)
	assert.Equal(t, want.OwnerReferences, q.OwnerReferences)
	st := f.policy("budget").Status
	assert.EqualValues(t, 1, st.ObservedGeneration)
	ready := meta.FindStatusCondition(st.Conditions, "Ready")
	require.NotNil(t, ready)
	assert.Equal(t, "in force: selects 1 InferenceService(s), 0 violate it; ResourceQuota berth-policy-budget keeps the namespace budget in 1 namespace(s)", ready.Message)

	// Once the caches have seen it all, another sync writes nothing.
	f.eventually("quota and status in the caches", func() bool {
		_, qerr := f.c.pol.quotas.ResourceQuotas("team-a").Get("berth-policy-budget")
		sp, perr := f.c.pol.policies.Get("budget")
		return qerr == nil && perr == nil && sp.Status.ObservedGeneration == 1
	})
	writes, statusWrites := f.quotaWrites(), len(f.berth.Actions())
	require.NoError(t, f.c.pol.sync(f.ctx, "budget"))
	assert.Equal(t, writes, f.quotaWrites(), "a steady state writes no quota")
	assert.Equal(t, statusWrites, len(f.berth.Actions()), "nor status")

	// The namespace leaves the selector: its quota goes.
	ns, err := f.kube.CoreV1().Namespaces().Get(f.ctx, "team-a", metav1.GetOptions{})
	require.NoError(t, err)
	delete(ns.Labels, "tier")
	_, err = f.kube.CoreV1().Namespaces().Update(f.ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.eventually("namespace relabelled in the cache", func() bool {
		n, err := f.c.pol.namespaces.Get("team-a")
		return err == nil && n.Labels["tier"] == ""
	})
	require.NoError(t, f.c.pol.sync(f.ctx, "budget"))
	quotas, err := f.kube.CoreV1().ResourceQuotas("").List(f.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, quotas.Items, "no namespace selected, no quota")
}

func TestPolicyVerdictsReachTheServiceCondition(t *testing.T) {
	rt := runtimeObj("rt", false)
	rt.Spec.EngineConfig.Runner.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": *resourceQty(8)}
	rt.Spec.EngineConfig.Runner.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resourceQty(8)}
	f := newFixture(t, rt, serviceObj("chat", "rt", 1), MakePolicy("small").MaxPerService(4).Obj())
	f.startPolicies(MakeNamespace("ns").Obj())
	f.c.pol.prime(f.ctx)

	f.syncUntil("ns/chat", func() bool {
		s, err := f.c.services.InferenceServices("ns").Get("chat")
		return err == nil && meta.IsStatusConditionFalse(s.Status.Conditions, ConditionPolicyCompliant)
	})
	s, _ := f.c.services.InferenceServices("ns").Get("chat")
	c := meta.FindStatusCondition(s.Status.Conditions, ConditionPolicyCompliant)
	assert.Equal(t, ReasonViolatesServingPolicy, c.Reason)
	assert.Equal(t, "violates ServingPolicy/small: ServingPolicy/small: InferenceService ns/chat would use 8 nvidia.com/gpu, above the maximum of 4 per service", c.Message)
	st := f.policy("small").Status
	assert.EqualValues(t, 1, st.Violations)
	assert.Equal(t, []policyv1alpha1.PolicyViolation{{Namespace: "ns", Name: "chat", Message: "ServingPolicy/small: InferenceService ns/chat would use 8 nvidia.com/gpu, above the maximum of 4 per service"}}, st.ViolatingServices)

	// The policy goes: so does the condition.
	require.NoError(t, f.berth.PolicyV1alpha1().ServingPolicies().Delete(f.ctx, "small", metav1.DeleteOptions{}))
	f.eventually("policy gone from the cache", func() bool { _, err := f.c.pol.policies.Get("small"); return err != nil })
	require.NoError(t, f.c.pol.sync(f.ctx, "small"))
	f.syncUntil("ns/chat", func() bool {
		s, err := f.c.services.InferenceServices("ns").Get("chat")
		return err == nil && meta.FindStatusCondition(s.Status.Conditions, ConditionPolicyCompliant) == nil
	})
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

var everythingSel = labels.Everything()

func resourceQty(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
