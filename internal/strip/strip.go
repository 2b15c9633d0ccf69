// Package strip holds informer transforms: what an informer's cache keeps
// of each object.
//
//   - Node and Pod feed accelerator counting: the webhook's cache
//     (webhook/cache) and the reconciler's AcceleratorClass status both
//     set them, so both count the same nodes and pods. They keep only
//     what selection reads (selection.NodeInfoOf,
//     selection.PodAcceleratorRequests).
//   - ManagedFields drops metadata.managedFields and nothing else, for
//     caches whose objects controllers read whole (berth-reconciler's
//     pods, Services, ControllerRevisions and the rest it owns, and
//     berth's objects).
//
// A transform must keep every field a reader of its informer reads; each
// has a test listing the fields it keeps.
package strip

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/selection"
)

// Node is an informer transform that keeps what accelerator discovery
// and counting read: name, labels, accelerator allocatable, readiness and
// cordoning. With 10,000 nodes the full objects (images, conditions,
// addresses) would dominate memory. The webhook's cache and the
// reconciler's AcceleratorClass status use it, so both count the same
// nodes.
func Node(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil // tombstones pass through
	}
	out := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: n.Name, Labels: n.Labels, ResourceVersion: n.ResourceVersion, UID: n.UID,
	}}
	out.Status.Allocatable = corev1.ResourceList{}
	for name, q := range n.Status.Allocatable {
		if selection.IsAcceleratorResource(name) {
			out.Status.Allocatable[name] = q
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	out.Spec.Unschedulable = n.Spec.Unschedulable
	return out, nil
}

// Pod is an informer transform that keeps a pod's identity, node,
// phase and accelerator requests (selection.PodAcceleratorRequests, folded into one
// container), for the same counting.
func Pod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, ResourceVersion: p.ResourceVersion, UID: p.UID,
	}}
	out.Spec.NodeName = p.Spec.NodeName
	out.Status.Phase = p.Status.Phase
	req := selection.PodAcceleratorRequests(p)
	if len(req) > 0 {
		c := corev1.Container{Name: "usage", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}}}
		for name, v := range req {
			c.Resources.Requests[name] = *resource.NewQuantity(v, resource.DecimalSI)
		}
		out.Spec.Containers = []corev1.Container{c}
	}
	return out, nil
}
