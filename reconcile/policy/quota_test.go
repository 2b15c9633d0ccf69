package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	policyset "github.com/berthdev/berth/policy"
)

// Builders of the policy tests.

type policyWrapper struct{ p policyv1alpha1.ServingPolicy }

// MakePolicy is a Deny ServingPolicy for every namespace, without rules.
func MakePolicy(name string) *policyWrapper {
	return &policyWrapper{p: policyv1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec:       policyv1alpha1.ServingPolicySpec{ValidationActions: []policyv1alpha1.ValidationAction{policyv1alpha1.Deny}},
	}}
}

func (w *policyWrapper) Namespaces(matchLabels map[string]string) *policyWrapper {
	w.p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	return w
}

func (w *policyWrapper) NamespaceSelector(s *metav1.LabelSelector) *policyWrapper {
	w.p.Spec.NamespaceSelector = s
	return w
}

func (w *policyWrapper) Services(matchLabels map[string]string) *policyWrapper {
	w.p.Spec.ServiceSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	return w
}

func (w *policyWrapper) Budget(n int64) *policyWrapper {
	w.p.Spec.Rules.MaxAcceleratorsPerNamespace = &n
	return w
}

func (w *policyWrapper) MaxPerService(n int64) *policyWrapper {
	w.p.Spec.Rules.MaxAcceleratorsPerService = &n
	return w
}

func (w *policyWrapper) Deleting() *policyWrapper {
	now := metav1.Now()
	w.p.DeletionTimestamp = &now
	return w
}

func (w *policyWrapper) Obj() *policyv1alpha1.ServingPolicy { return w.p.DeepCopy() }

// MakeNamespace is a namespace with the kubernetes.io/metadata.name label.
type namespaceWrapper struct{ ns corev1.Namespace }

func MakeNamespace(name string) *namespaceWrapper {
	return &namespaceWrapper{ns: corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{corev1.LabelMetadataName: name}}}}
}

func (w *namespaceWrapper) Label(k, v string) *namespaceWrapper {
	w.ns.Labels[k] = v
	return w
}

func (w *namespaceWrapper) Terminating() *namespaceWrapper {
	w.ns.Status.Phase = corev1.NamespaceTerminating
	return w
}

func (w *namespaceWrapper) Obj() *corev1.Namespace { return w.ns.DeepCopy() }

// wantQuota is the quota of policy in namespace with hard requests.<r> =
// budget for each resource.
func wantQuota(policy, namespace string, budget int64, resources ...string) *corev1.ResourceQuota {
	hard := corev1.ResourceList{}
	for _, r := range resources {
		hard[corev1.ResourceName("requests."+r)] = *resource.NewQuantity(budget, resource.DecimalSI)
	}
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "berth-policy-" + policy, Namespace: namespace,
			Labels:      map[string]string{LabelManagedBy: ManagedByReconciler, LabelServingPolicy: policy},
			Annotations: map[string]string{LabelServingPolicy: policy},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "policy.berth.dev/v1alpha1", Kind: "ServingPolicy",
				Name: policy, UID: types.UID("uid-" + policy), Controller: ptr(true)}}},
		Spec: corev1.ResourceQuotaSpec{Hard: hard},
	}
}

var gpuResources = []string{"amd.com/gpu", "gpu.intel.com/i915", "nvidia.com/gpu"}

func notExempt(ns string) bool { return ns == "kube-system" || ns == "berth-system" }

func TestDesiredQuotas(t *testing.T) {
	namespaces := []*corev1.Namespace{
		MakeNamespace("team-b").Label("tier", "gpu").Obj(),
		MakeNamespace("team-a").Label("tier", "gpu").Obj(),
		MakeNamespace("web").Obj(),
		MakeNamespace("kube-system").Label("tier", "gpu").Obj(),
		MakeNamespace("berth-system").Label("tier", "gpu").Obj(),
		MakeNamespace("leaving").Label("tier", "gpu").Terminating().Obj(),
	}
	res := policyset.AcceleratorResources(nil)
	cases := []struct {
		name   string
		policy *policyv1alpha1.ServingPolicy
		res    []corev1.ResourceName
		want   []*corev1.ResourceQuota
	}{
		{name: "no budget, no quota", policy: MakePolicy("images").Namespaces(map[string]string{"tier": "gpu"}).Obj(), res: res},
		{name: "one per selected namespace, in namespace order; exempt and terminating ones left out",
			policy: MakePolicy("budget").Namespaces(map[string]string{"tier": "gpu"}).Budget(16).Obj(), res: res,
			want: []*corev1.ResourceQuota{wantQuota("budget", "team-a", 16, gpuResources...), wantQuota("budget", "team-b", 16, gpuResources...)}},
		{name: "no namespaceSelector selects every namespace but the exempt ones",
			policy: MakePolicy("all").Budget(0).Obj(), res: res,
			want: []*corev1.ResourceQuota{wantQuota("all", "team-a", 0, gpuResources...), wantQuota("all", "team-b", 0, gpuResources...), wantQuota("all", "web", 0, gpuResources...)}},
		{name: "a serviceSelector does not narrow the namespace's quota",
			policy: MakePolicy("svc").NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "web"}}).Services(map[string]string{"team": "x"}).Budget(4).Obj(), res: res,
			want: []*corev1.ResourceQuota{wantQuota("svc", "web", 4, gpuResources...)}},
		{name: "resources the classes name are covered too",
			policy: MakePolicy("mig").NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "web"}}).Budget(2).Obj(),
			res:    policyset.AcceleratorResources([]*v1beta1.AcceleratorClass{{Spec: v1beta1.AcceleratorClassSpec{Resources: []v1beta1.AcceleratorResource{{Name: "nvidia.com/mig-1g.10gb"}, {Name: "nvidia.com/gpu"}}}}}),
			want:   []*corev1.ResourceQuota{wantQuota("mig", "web", 2, append([]string{"nvidia.com/mig-1g.10gb"}, gpuResources...)...)}},
		{name: "a selector that does not parse selects nothing",
			policy: MakePolicy("bad").NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}).Budget(1).Obj(), res: res},
		{name: "a policy being deleted keeps none", policy: MakePolicy("gone").Budget(16).Deleting().Obj(), res: res},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, desiredQuotas(tc.policy, namespaces, tc.res, notExempt))
		})
	}
}

func TestQuotaUpToDate(t *testing.T) {
	want := wantQuota("budget", "team-a", 16, gpuResources...)
	mutate := func(f func(q *corev1.ResourceQuota)) *corev1.ResourceQuota {
		q := want.DeepCopy()
		q.ResourceVersion, q.UID = "7", "q-uid"
		f(q)
		return q
	}
	cases := []struct {
		name string
		have *corev1.ResourceQuota
		ok   bool
	}{
		{name: "equal", have: mutate(func(*corev1.ResourceQuota) {}), ok: true},
		{name: "someone's extra label and annotation are left alone", have: mutate(func(q *corev1.ResourceQuota) {
			q.Labels["team"], q.Annotations["note"] = "a", "x"
		}), ok: true},
		{name: "a quantity written differently is equal", have: mutate(func(q *corev1.ResourceQuota) {
			q.Spec.Hard["requests.nvidia.com/gpu"] = resource.MustParse("16000m")
		}), ok: true},
		{name: "another hard limit", have: mutate(func(q *corev1.ResourceQuota) { q.Spec.Hard["requests.nvidia.com/gpu"] = resource.MustParse("8") })},
		{name: "an extra hard limit", have: mutate(func(q *corev1.ResourceQuota) { q.Spec.Hard["pods"] = resource.MustParse("8") })},
		{name: "the label removed", have: mutate(func(q *corev1.ResourceQuota) { delete(q.Labels, LabelServingPolicy) })},
		{name: "scoped", have: mutate(func(q *corev1.ResourceQuota) {
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		})},
		{name: "owned by a recreated policy", have: mutate(func(q *corev1.ResourceQuota) { q.OwnerReferences[0].UID = "old" })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.ok, quotaUpToDate(tc.have, want))
			if !tc.ok {
				upd := updatedQuota(tc.have, want)
				assert.True(t, quotaUpToDate(upd, want), "updatedQuota fixes it")
				assert.Equal(t, tc.have.ResourceVersion, upd.ResourceVersion, "the update is conditional on what was read")
			}
		})
	}
}

func TestQuotaNameAndPolicy(t *testing.T) {
	assert.Equal(t, "berth-policy-gpu-budget", quotaName("gpu-budget"))
	long := strings.Repeat("p", 250)
	n := quotaName(long)
	assert.Len(t, n, 253)
	assert.NotEqual(t, n, quotaName(strings.Repeat("p", 251)), "long names stay distinct")

	q := wantQuota("budget", "team-a", 16, "nvidia.com/gpu")
	assert.Equal(t, "budget", quotaPolicy(q))
	q.Labels[LabelManagedBy] = "someone"
	assert.Equal(t, "", quotaPolicy(q), "only berth's quotas are berth's")
	theirs := wantQuota("budget", "team-a", 16, "nvidia.com/gpu")
	theirs.OwnerReferences[0].Kind = "Namespace"
	assert.Equal(t, "", quotaPolicy(theirs))
}
func ptr[T any](v T) *T { return &v }
