package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodWrapper builds a Pod of one container.
type PodWrapper struct{ p corev1.Pod }

// MakePod starts a pod ns/name with one container "main" of no image.
func MakePod(ns, name string) *PodWrapper {
	return &PodWrapper{p: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}}
}

// Obj returns a copy of the pod.
func (w *PodWrapper) Obj() *corev1.Pod { return w.p.DeepCopy() }

// Label sets label k to v.
func (w *PodWrapper) Label(k, v string) *PodWrapper {
	w.p.Labels = withEntry(w.p.Labels, k, v)
	return w
}

// Container renames the container and sets its image.
func (w *PodWrapper) Container(name, image string) *PodWrapper {
	w.p.Spec.Containers[0].Name, w.p.Spec.Containers[0].Image = name, image
	return w
}

// GPUs sets the container's request and limit of resource r to n.
func (w *PodWrapper) GPUs(r corev1.ResourceName, n int64) *PodWrapper {
	w.p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: count(r, n), Limits: count(r, n)}
	return w
}

// NodeSelector sets entry k=v of spec.nodeSelector.
func (w *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	w.p.Spec.NodeSelector = withEntry(w.p.Spec.NodeSelector, k, v)
	return w
}

// Toleration appends a toleration.
func (w *PodWrapper) Toleration(t corev1.Toleration) *PodWrapper {
	w.p.Spec.Tolerations = append(w.p.Spec.Tolerations, t)
	return w
}

// Scheduler sets spec.schedulerName.
func (w *PodWrapper) Scheduler(name string) *PodWrapper { w.p.Spec.SchedulerName = name; return w }

// NodeName sets spec.nodeName.
func (w *PodWrapper) NodeName(n string) *PodWrapper { w.p.Spec.NodeName = n; return w }

// Phase sets status.phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper { w.p.Status.Phase = p; return w }
