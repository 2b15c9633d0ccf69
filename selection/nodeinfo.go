package selection

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NodeInfoOf reads what accelerator availability needs of a Node: its
// labels, its accelerator allocatable, and Ready (the Ready condition is
// True and the node is not cordoned). The webhook's index and the
// reconciler's AcceleratorClass status read nodes with it.
func NodeInfoOf(n *corev1.Node) NodeInfo {
	info := NodeInfo{Name: n.Name, Labels: n.Labels, Allocatable: map[corev1.ResourceName]int64{}}
	for name, q := range n.Status.Allocatable {
		if IsAcceleratorResource(name) {
			info.Allocatable[name] = q.Value()
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			info.Ready = c.Status == corev1.ConditionTrue && !n.Spec.Unschedulable
		}
	}
	return info
}

// PodHoldsAccelerators reports whether a pod's requests count against its
// node: it is bound and not terminated (Succeeded or Failed).
func PodHoldsAccelerators(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// IsAcceleratorResource reports whether a resource is a device-plugin
// resource (vendor-domain name), as opposed to cpu, memory, storage,
// hugepages or pods.
func IsAcceleratorResource(name corev1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.HasPrefix(s, "kubernetes.io/") && !strings.HasPrefix(s, "hugepages-")
}

// PodAcceleratorRequests is what a pod holds on its node, as the scheduler
// counts it: the sum over containers, or the largest init container if that
// is more. Requests default to limits, as Kubernetes defaults requests of
// extended resources.
func PodAcceleratorRequests(p *corev1.Pod) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for _, c := range p.Spec.Containers {
		for name, q := range containerRequests(c) {
			out[name] += q
		}
	}
	for _, c := range p.Spec.InitContainers {
		for name, q := range containerRequests(c) {
			if q > out[name] {
				out[name] = q
			}
		}
	}
	return out
}

func containerRequests(c corev1.Container) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for name, q := range c.Resources.Limits {
		if IsAcceleratorResource(name) {
			out[name] = q.Value()
		}
	}
	for name, q := range c.Resources.Requests {
		if IsAcceleratorResource(name) {
			out[name] = q.Value()
		}
	}
	return out
}
