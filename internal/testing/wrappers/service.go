package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ServiceWrapper builds an InferenceService.
type ServiceWrapper struct{ s v1beta1.InferenceService }

// MakeInferenceService starts an InferenceService ns/name with an empty
// spec.
func MakeInferenceService(ns, name string) *ServiceWrapper {
	return &ServiceWrapper{s: v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// Obj returns a copy of the service.
func (w *ServiceWrapper) Obj() *v1beta1.InferenceService { return w.s.DeepCopy() }

// Label sets metadata label k to v.
func (w *ServiceWrapper) Label(k, v string) *ServiceWrapper {
	w.s.Labels = withEntry(w.s.Labels, k, v)
	return w
}

// Labels adds the labels in m.
func (w *ServiceWrapper) Labels(m map[string]string) *ServiceWrapper {
	for k, v := range m {
		w.Label(k, v)
	}
	return w
}

// Annotation sets metadata annotation k to v.
func (w *ServiceWrapper) Annotation(k, v string) *ServiceWrapper {
	w.s.Annotations = withEntry(w.s.Annotations, k, v)
	return w
}

// Model sets spec.model.name.
func (w *ServiceWrapper) Model(name string) *ServiceWrapper {
	w.s.Spec.Model = &v1beta1.ModelRef{Name: name}
	return w
}

// Runtime sets spec.runtime.name (kind left unset).
func (w *ServiceWrapper) Runtime(name string) *ServiceWrapper {
	w.s.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: name}
	return w
}

// RuntimeKind sets spec.runtime.name and kind.
func (w *ServiceWrapper) RuntimeKind(kind, name string) *ServiceWrapper {
	w.s.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: name, Kind: ptr(kind)}
	return w
}

// Classes sets spec.acceleratorSelector.preferredClasses.
func (w *ServiceWrapper) Classes(names ...string) *ServiceWrapper {
	w.s.Spec.AcceleratorSelector = &v1beta1.AcceleratorSelector{PreferredClasses: names}
	return w
}

// Selector sets spec.acceleratorSelector.
func (w *ServiceWrapper) Selector(s v1beta1.AcceleratorSelector) *ServiceWrapper {
	w.s.Spec.AcceleratorSelector = &s
	return w
}

func (w *ServiceWrapper) engine() *v1beta1.EngineSpec {
	if w.s.Spec.Engine == nil {
		w.s.Spec.Engine = &v1beta1.EngineSpec{}
	}
	return w.s.Spec.Engine
}

// Replicas sets spec.engine.replicas.
func (w *ServiceWrapper) Replicas(n int32) *ServiceWrapper {
	w.engine().Replicas = &n
	return w
}

// EngineRunner sets spec.engine.runner.
func (w *ServiceWrapper) EngineRunner(r v1beta1.RunnerSpec) *ServiceWrapper {
	w.engine().Runner = &r
	return w
}

// EngineGPUs sets spec.engine.runner's nvidia.com/gpu request and limit.
func (w *ServiceWrapper) EngineGPUs(n int64) *ServiceWrapper {
	e := w.engine()
	if e.Runner == nil {
		e.Runner = &v1beta1.RunnerSpec{}
	}
	e.Runner.Resources = corev1.ResourceRequirements{Requests: count("nvidia.com/gpu", n), Limits: count("nvidia.com/gpu", n)}
	return w
}
