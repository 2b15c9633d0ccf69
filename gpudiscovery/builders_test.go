package gpudiscovery

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

type nodeBuilder struct{ n Node }

// MakeNode builds a Node for tests.
func MakeNode(name string) *nodeBuilder {
	return &nodeBuilder{n: Node{Name: name, Labels: map[string]string{}}}
}

func (b *nodeBuilder) Label(k, v string) *nodeBuilder { b.n.Labels[k] = v; return b }
func (b *nodeBuilder) Resource(r string) *nodeBuilder {
	b.n.Resources = append(b.n.Resources, r)
	return b
}
func (b *nodeBuilder) Labels(m map[string]string) *nodeBuilder {
	for k, v := range m {
		b.n.Labels[k] = v
	}
	return b
}
func (b *nodeBuilder) Obj() Node { return b.n }

type classBuilder struct{ c v1beta1.AcceleratorClass }

// MakeClass builds an AcceleratorClass for tests.
func MakeClass(name string) *classBuilder {
	return &classBuilder{c: v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

func (b *classBuilder) AutoDiscovered() *classBuilder {
	if b.c.Labels == nil {
		b.c.Labels = map[string]string{}
	}
	b.c.Labels[v1beta1.LabelAutoDiscovered] = "true"
	return b
}
func (b *classBuilder) Spec(s v1beta1.AcceleratorClassSpec) *classBuilder { b.c.Spec = s; return b }
func (b *classBuilder) Selector(k, v string) *classBuilder {
	if b.c.Spec.Discovery.NodeSelector == nil {
		b.c.Spec.Discovery.NodeSelector = map[string]string{}
	}
	b.c.Spec.Discovery.NodeSelector[k] = v
	return b
}
func (b *classBuilder) Condition(typ string, status metav1.ConditionStatus, reason string) *classBuilder {
	b.c.Status.Conditions = append(b.c.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason})
	return b
}
func (b *classBuilder) Obj() *v1beta1.AcceleratorClass { return b.c.DeepCopy() }
