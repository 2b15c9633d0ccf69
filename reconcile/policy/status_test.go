package policy

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	policyset "github.com/berthdev/berth/policy"
)

func policyReadyCondition(status metav1.ConditionStatus, reason, msg string, at metav1.Time) metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: at}
}

func TestPolicyStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	many := map[string][]string{}
	var first20 []policyv1alpha1.PolicyViolation
	for i := range 25 {
		key := fmt.Sprintf("team-a/svc-%02d", i)
		many[key] = []string{fmt.Sprintf("violation %d", i), "another"}
		if i < 20 {
			first20 = append(first20, policyv1alpha1.PolicyViolation{Namespace: "team-a", Name: fmt.Sprintf("svc-%02d", i), Message: fmt.Sprintf("violation %d", i)})
		}
	}
	many["team-a/fine"] = []string{}
	stale := MakePolicy("p").Obj()
	stale.Status.Conditions = []metav1.Condition{policyReadyCondition(metav1.ConditionTrue, ReasonInForce, "in force: selects 1 InferenceService(s), 0 violate it", earlier)}
	cases := []struct {
		name     string
		policy   *policyv1alpha1.ServingPolicy
		verdicts map[string][]string
		quotas   int
		quotaErr error
		want     policyv1alpha1.ServingPolicyStatus
	}{
		{name: "nothing selected", policy: MakePolicy("p").Obj(),
			want: policyv1alpha1.ServingPolicyStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
				policyReadyCondition(metav1.ConditionTrue, ReasonInForce, "in force: selects 0 InferenceService(s), 0 violate it", now)}}},
		{name: "violations counted, 20 named in namespace and name order with their first violation; the transition time kept",
			policy: stale, verdicts: many, quotas: 2,
			want: policyv1alpha1.ServingPolicyStatus{ObservedGeneration: 1, Violations: 25, ViolatingServices: first20, Conditions: []metav1.Condition{
				policyReadyCondition(metav1.ConditionTrue, ReasonInForce, "in force: selects 26 InferenceService(s), 25 violate it; ResourceQuota berth-policy-p keeps the namespace budget in 2 namespace(s)", earlier)}}},
		{name: "a quota that cannot be written", policy: stale, verdicts: map[string][]string{"ns/a": {}}, quotaErr: errors.New("forbidden"),
			want: policyv1alpha1.ServingPolicyStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
				policyReadyCondition(metav1.ConditionFalse, ReasonQuotaSyncFailed, "keeping ResourceQuota berth-policy-p: forbidden; retried with backoff", now)}}},
		{name: "a selector that does not parse",
			policy: MakePolicy("p").NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}).Obj(),
			want: policyv1alpha1.ServingPolicyStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
				policyReadyCondition(metav1.ConditionFalse, ReasonInvalidSelector, `spec.namespaceSelector: "Near" is not a valid label selector operator; the policy applies nowhere until it is fixed`, now)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, policyStatus(tc.policy, tc.verdicts, quotaName(tc.policy.Name), tc.quotas, tc.quotaErr, now))
		})
	}
}

func TestComplianceCondition(t *testing.T) {
	cases := []struct {
		name     string
		verdicts map[string][]string
		want     *metav1.Condition
	}{
		{name: "no policy selects the service", want: nil},
		{name: "compliant with every policy", verdicts: map[string][]string{"b": {}, "a": {}},
			want: &metav1.Condition{Type: ConditionPolicyCompliant, Status: metav1.ConditionTrue, Reason: ReasonCompliant, ObservedGeneration: 2,
				Message: "complies with ServingPolicy/a, ServingPolicy/b"}},
		{name: "one violation", verdicts: map[string][]string{"a": {}, "b": {"ServingPolicy/b: too big"}},
			want: &metav1.Condition{Type: ConditionPolicyCompliant, Status: metav1.ConditionFalse, Reason: ReasonViolatesServingPolicy, ObservedGeneration: 2,
				Message: "violates ServingPolicy/b: ServingPolicy/b: too big"}},
		{name: "several policies, the first violation quoted", verdicts: map[string][]string{"c": {"ServingPolicy/c: x", "ServingPolicy/c: y"}, "b": {"ServingPolicy/b: too big"}},
			want: &metav1.Condition{Type: ConditionPolicyCompliant, Status: metav1.ConditionFalse, Reason: ReasonViolatesServingPolicy, ObservedGeneration: 2,
				Message: "violates ServingPolicy/b, ServingPolicy/c: ServingPolicy/b: too big (3 violations in all)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, complianceCondition(tc.verdicts, 2)) })
	}
}

// gpuService is a pinned service of one engine group of one pod asking
// for gpus nvidia.com/gpu, created at second created.
func gpuService(ns, name string, created int64, gpus int64, lbls map[string]string) policyService {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "engine:v1",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}}}}
	roles := []merge.ComposedRole{{Topology: merge.ComponentTopology{Component: v1beta1.ComponentEngine, Replicas: 1}, Pod: pod, PerGroup: 1}}
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
	if lbls == nil {
		lbls = map[string]string{}
	}
	return policyService{key: ns + "/" + name, created: created,
		in:  policyset.Service{Subject: policyset.Subject{Namespace: ns, NamespaceLabels: map[string]string{}, ServiceLabels: lbls}, Service: isvc, Roles: roles},
		acc: policyset.Accelerators(roles)}
}

func TestNamespaceVerdicts(t *testing.T) {
	budget := MakePolicy("budget").Budget(16).Obj()
	perSvc := MakePolicy("small").Services(map[string]string{"size": "small"}).MaxPerService(4).Obj()
	set := policyset.Compile([]*policyv1alpha1.ServingPolicy{budget, perSvc}, policyset.Options{ExemptNamespaces: []string{"berth-system"}})
	over := "ServingPolicy/budget: namespace team-a would use 24 nvidia.com/gpu, above its budget of 16 (16 of 16 nvidia.com/gpu in use)"
	svcs := []policyService{
		gpuService("team-a", "c", 30, 8, nil),
		gpuService("team-a", "b", 20, 8, map[string]string{"size": "small"}),
		gpuService("team-a", "a", 20, 8, nil),
		gpuService("team-a", "d", 40, 8, nil),
	}
	cases := []struct {
		name, policy string
		want         map[string][]string
	}{
		{name: "the namespace budget: services past it, in order of creation then name, violate it", policy: "budget",
			want: map[string][]string{"team-a/a": {}, "team-a/b": {}, "team-a/c": {over},
				"team-a/d": {"ServingPolicy/budget: namespace team-a would use 32 nvidia.com/gpu, above its budget of 16 (24 nvidia.com/gpu already in use, over the budget)"}}},
		{name: "a serviceSelector: only the services it selects have a verdict", policy: "small",
			want: map[string][]string{"team-a/b": {"ServingPolicy/small: InferenceService team-a/b would use 8 nvidia.com/gpu, above the maximum of 4 per service"}}},
		{name: "another policy's name: none", policy: "other", want: map[string][]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, namespaceVerdicts(set, tc.policy, svcs)) })
	}
	assert.Empty(t, namespaceVerdicts(set, "budget", []policyService{gpuService("berth-system", "x", 1, 64, nil)}), "exempt namespaces have no verdicts")

	refused := gpuService("team-a", "a", 20, 8, nil)
	refused.refused = true
	assert.Equal(t, map[string][]string{"team-a/b": {}, "team-a/c": {}, "team-a/a": {over}},
		namespaceVerdicts(set, "budget", []policyService{svcs[0], svcs[1], refused}),
		"a service a quota refuses is past the budget, whenever it was created")
}

// BenchmarkNamespaceVerdicts: one policy's evaluation of a namespace of
// 200 pinned services, the policy compiled alone as evaluate does (the
// compose is not included: it is the pod webhook's cost, once per
// service).
func BenchmarkNamespaceVerdicts(b *testing.B) {
	set := policyset.Compile([]*policyv1alpha1.ServingPolicy{MakePolicy("p050").Budget(1000).MaxPerService(16).Obj()}, policyset.Options{})
	var svcs []policyService
	for i := range 200 {
		svcs = append(svcs, gpuService("team-a", fmt.Sprintf("svc-%03d", i), int64(i), 8, nil))
	}
	b.ResetTimer()
	for b.Loop() {
		namespaceVerdicts(set, "p050", svcs)
	}
}
