package policy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/merge"
)

// Builders keep the tables short: each test states only what it is about.

func ptr[T any](v T) *T { return &v }

type policyBuilder struct{ p *v1alpha1.ServingPolicy }

// MakePolicy is a Deny policy for every namespace with no rules.
func MakePolicy(name string) *policyBuilder {
	return &policyBuilder{p: &v1alpha1.ServingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ServingPolicySpec{ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny}}}}
}

func (b *policyBuilder) Actions(a ...v1alpha1.ValidationAction) *policyBuilder {
	b.p.Spec.ValidationActions = a
	return b
}
func (b *policyBuilder) Namespaces(matchLabels map[string]string) *policyBuilder {
	b.p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	return b
}
func (b *policyBuilder) NamespaceSelector(s *metav1.LabelSelector) *policyBuilder {
	b.p.Spec.NamespaceSelector = s
	return b
}
func (b *policyBuilder) Services(matchLabels map[string]string) *policyBuilder {
	b.p.Spec.ServiceSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	return b
}
func (b *policyBuilder) Classes(r v1alpha1.ObjectRule) *policyBuilder {
	b.p.Spec.Rules.AcceleratorClasses = &r
	return b
}
func (b *policyBuilder) Runtimes(r v1alpha1.ObjectRule) *policyBuilder {
	b.p.Spec.Rules.Runtimes = &r
	return b
}
func (b *policyBuilder) Images(prefixes ...string) *policyBuilder {
	b.p.Spec.Rules.Images = &v1alpha1.ImageRule{AllowedPrefixes: prefixes}
	return b
}
func (b *policyBuilder) MaxPerService(n int64) *policyBuilder {
	b.p.Spec.Rules.MaxAcceleratorsPerService = &n
	return b
}
func (b *policyBuilder) MaxPerNamespace(n int64) *policyBuilder {
	b.p.Spec.Rules.MaxAcceleratorsPerNamespace = &n
	return b
}
func (b *policyBuilder) MaxCost(q string) *policyBuilder {
	v := resource.MustParse(q)
	b.p.Spec.Rules.MaxCostPerHour = &v
	return b
}
func (b *policyBuilder) Require(labels ...string) *policyBuilder {
	b.p.Spec.Rules.RequiredLabels = labels
	return b
}
func (b *policyBuilder) NoCommand() *policyBuilder {
	b.p.Spec.Rules.AllowCommand = ptr(false)
	return b
}
func (b *policyBuilder) Obj() *v1alpha1.ServingPolicy { return b.p }

func allow(names ...string) v1alpha1.ObjectRule { return v1alpha1.ObjectRule{Allowed: names} }

// nvidiaClass is an nvidia.com/gpu class; PerHour sets its cost.
func nvidiaClass(name string) *wrappers.ClassWrapper {
	return wrappers.MakeAcceleratorClass(name).Vendor("nvidia").Resource("nvidia.com/gpu")
}

// MakeRole is one composed role: component, groups (replicas, maxReplicas)
// and pods per group, with one container.
type roleBuilder struct{ r merge.ComposedRole }

func MakeRole(component string) *roleBuilder {
	return &roleBuilder{r: merge.ComposedRole{
		Topology: merge.ComponentTopology{Component: component, Replicas: 1, MinReplicas: 1},
		Pod:      &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/engine:1"}}}},
		PerGroup: 1,
	}}
}
func (b *roleBuilder) Role(role string, perGroup int32) *roleBuilder {
	b.r.Role, b.r.PerGroup = role, perGroup
	return b
}
func (b *roleBuilder) Replicas(n, max int32) *roleBuilder {
	b.r.Topology.Replicas, b.r.Topology.MaxReplicas = n, max
	return b
}
func (b *roleBuilder) Image(ref string) *roleBuilder {
	b.r.Pod.Spec.Containers[0].Image = ref
	return b
}
func (b *roleBuilder) Init(ref string) *roleBuilder {
	b.r.Pod.Spec.InitContainers = append(b.r.Pod.Spec.InitContainers, corev1.Container{Name: "init", Image: ref})
	return b
}

// GPUs sets the main container's request (and limit) of resource r.
func (b *roleBuilder) GPUs(r corev1.ResourceName, n int64) *roleBuilder {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	c := &b.r.Pod.Spec.Containers[0]
	c.Resources.Requests = corev1.ResourceList{r: q}
	c.Resources.Limits = corev1.ResourceList{r: q}
	return b
}
func (b *roleBuilder) Obj() merge.ComposedRole { return b.r }

func resourceQty(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
