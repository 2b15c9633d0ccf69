package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ClassWrapper builds an AcceleratorClass.
type ClassWrapper struct{ c v1beta1.AcceleratorClass }

// MakeAcceleratorClass starts an AcceleratorClass with only its name.
func MakeAcceleratorClass(name string) *ClassWrapper {
	return &ClassWrapper{c: v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Obj returns a copy of the class.
func (w *ClassWrapper) Obj() *v1beta1.AcceleratorClass { return w.c.DeepCopy() }

// Label sets metadata label k to v.
func (w *ClassWrapper) Label(k, v string) *ClassWrapper {
	w.c.Labels = withEntry(w.c.Labels, k, v)
	return w
}

// Labels adds the labels in m.
func (w *ClassWrapper) Labels(m map[string]string) *ClassWrapper {
	for k, v := range m {
		w.Label(k, v)
	}
	return w
}

// AutoDiscovered labels the class as made by accelerator discovery.
func (w *ClassWrapper) AutoDiscovered() *ClassWrapper {
	return w.Label(v1beta1.LabelAutoDiscovered, "true")
}

// Generation sets metadata.generation.
func (w *ClassWrapper) Generation(g int64) *ClassWrapper { w.c.Generation = g; return w }

// Spec replaces the whole spec.
func (w *ClassWrapper) Spec(s v1beta1.AcceleratorClassSpec) *ClassWrapper { w.c.Spec = s; return w }

// Vendor sets spec.vendor.
func (w *ClassWrapper) Vendor(v string) *ClassWrapper { w.c.Spec.Vendor = v; return w }

// Family sets spec.family.
func (w *ClassWrapper) Family(f string) *ClassWrapper { w.c.Spec.Family = f; return w }

// Model sets spec.model.
func (w *ClassWrapper) Model(m string) *ClassWrapper { w.c.Spec.Model = m; return w }

// NodeSelector sets entry k=v of spec.discovery.nodeSelector.
func (w *ClassWrapper) NodeSelector(k, v string) *ClassWrapper {
	w.c.Spec.Discovery.NodeSelector = withEntry(w.c.Spec.Discovery.NodeSelector, k, v)
	return w
}

// NodeSelectorTerms sets spec.discovery.nodeSelectorTerms.
func (w *ClassWrapper) NodeSelectorTerms(terms ...corev1.NodeSelectorTerm) *ClassWrapper {
	w.c.Spec.Discovery.NodeSelectorTerms = terms
	return w
}

// Discovery replaces spec.discovery.
func (w *ClassWrapper) Discovery(d v1beta1.AcceleratorDiscovery) *ClassWrapper {
	w.c.Spec.Discovery = d
	return w
}

// Resource makes spec.resources the one resource name, quantity unset.
func (w *ClassWrapper) Resource(name string) *ClassWrapper {
	w.c.Spec.Resources = []v1beta1.AcceleratorResource{{Name: name}}
	return w
}

// ResourceQuantity makes spec.resources the one resource name of quantity q.
func (w *ClassWrapper) ResourceQuantity(name, q string) *ClassWrapper {
	w.c.Spec.Resources = []v1beta1.AcceleratorResource{{Name: name, Quantity: resource.MustParse(q)}}
	return w
}

// Resources replaces spec.resources (none: nil).
func (w *ClassWrapper) Resources(rs ...v1beta1.AcceleratorResource) *ClassWrapper {
	w.c.Spec.Resources = rs
	return w
}

// Memory sets spec.capabilities.memoryGB.
func (w *ClassWrapper) Memory(q string) *ClassWrapper {
	w.c.Spec.Capabilities.MemoryGB = quantity(q)
	return w
}

// ComputeCapability sets spec.capabilities.computeCapability.
func (w *ClassWrapper) ComputeCapability(cc string) *ClassWrapper {
	w.c.Spec.Capabilities.ComputeCapability = cc
	return w
}

// Features sets spec.capabilities.features.
func (w *ClassWrapper) Features(f ...string) *ClassWrapper {
	w.c.Spec.Capabilities.Features = f
	return w
}

func (w *ClassWrapper) performance() *v1beta1.AcceleratorPerformance {
	if w.c.Spec.Capabilities.Performance == nil {
		w.c.Spec.Capabilities.Performance = &v1beta1.AcceleratorPerformance{}
	}
	return w.c.Spec.Capabilities.Performance
}

// FP16TFLOPS sets spec.capabilities.performance.fp16TFLOPS.
func (w *ClassWrapper) FP16TFLOPS(q string) *ClassWrapper {
	w.performance().FP16TFLOPS = quantity(q)
	return w
}

// FP8TFLOPS sets spec.capabilities.performance.fp8TFLOPS.
func (w *ClassWrapper) FP8TFLOPS(q string) *ClassWrapper {
	w.performance().FP8TFLOPS = quantity(q)
	return w
}

// PerHour sets spec.cost.perHour.
func (w *ClassWrapper) PerHour(q string) *ClassWrapper {
	if w.c.Spec.Cost == nil {
		w.c.Spec.Cost = &v1beta1.AcceleratorCost{}
	}
	w.c.Spec.Cost.PerHour = quantity(q)
	return w
}

// KueueFlavor sets spec.integration.kueueResourceFlavor.
func (w *ClassWrapper) KueueFlavor(name string) *ClassWrapper {
	if w.c.Spec.Integration == nil {
		w.c.Spec.Integration = &v1beta1.AcceleratorIntegration{}
	}
	w.c.Spec.Integration.KueueResourceFlavor = name
	return w
}

// Condition appends a status condition.
func (w *ClassWrapper) Condition(typ string, status metav1.ConditionStatus, reason string) *ClassWrapper {
	w.c.Status.Conditions = append(w.c.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason})
	return w
}
