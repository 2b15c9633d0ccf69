package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrapper builds a Node.
type NodeWrapper struct{ n corev1.Node }

// MakeNode starts a Ready node with no labels and nothing allocatable.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{n: corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}}
}

// Obj returns a copy of the node.
func (w *NodeWrapper) Obj() *corev1.Node { return w.n.DeepCopy() }

// Label sets label k to v.
func (w *NodeWrapper) Label(k, v string) *NodeWrapper { w.n.Labels[k] = v; return w }

// Labels adds the labels in m.
func (w *NodeWrapper) Labels(m map[string]string) *NodeWrapper {
	for k, v := range m {
		w.n.Labels[k] = v
	}
	return w
}

// GPUs sets n of resource r allocatable (and in capacity).
func (w *NodeWrapper) GPUs(r string, n int64) *NodeWrapper {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	w.n.Status.Allocatable[corev1.ResourceName(r)] = q
	if w.n.Status.Capacity == nil {
		w.n.Status.Capacity = corev1.ResourceList{}
	}
	w.n.Status.Capacity[corev1.ResourceName(r)] = q
	return w
}

// Allocatable sets resource r allocatable to quantity q (not capacity).
func (w *NodeWrapper) Allocatable(r corev1.ResourceName, q string) *NodeWrapper {
	w.n.Status.Allocatable[r] = resource.MustParse(q)
	return w
}

// Taint appends a taint.
func (w *NodeWrapper) Taint(t corev1.Taint) *NodeWrapper {
	w.n.Spec.Taints = append(w.n.Spec.Taints, t)
	return w
}

// Cordoned marks the node unschedulable.
func (w *NodeWrapper) Cordoned() *NodeWrapper { w.n.Spec.Unschedulable = true; return w }

// NotReady turns the Ready condition False.
func (w *NodeWrapper) NotReady() *NodeWrapper {
	for i := range w.n.Status.Conditions {
		if w.n.Status.Conditions[i].Type == corev1.NodeReady {
			w.n.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	return w
}
