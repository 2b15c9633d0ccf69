package cache

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/internal/strip"
	"github.com/berthdev/berth/selection"
)

// stripNode and stripPod are the fleet informers' transforms (package
// strip), shared with the reconciler's AcceleratorClass status.
var (
	stripNode = strip.Node
	stripPod  = strip.Pod
)

// IsAcceleratorResource is selection.IsAcceleratorResource.
func IsAcceleratorResource(name corev1.ResourceName) bool {
	return selection.IsAcceleratorResource(name)
}

// PodAcceleratorRequests is selection.PodAcceleratorRequests: the webhook's
// index and the reconciler's AcceleratorClass status count pods alike.
func PodAcceleratorRequests(p *corev1.Pod) map[corev1.ResourceName]int64 {
	return selection.PodAcceleratorRequests(p)
}

// NodeInfo converts a (stripped) node for the selection index
// (selection.NodeInfoOf).
func NodeInfo(n *corev1.Node) selection.NodeInfo { return selection.NodeInfoOf(n) }
