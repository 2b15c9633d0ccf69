package selection

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Product labels GPU Feature Discovery (NVIDIA, AMD) and Intel's device
// plugin put on a node: the marketed name of its accelerator.
var ProductLabels = []string{"nvidia.com/gpu.product", "amd.com/gpu.product", "gpu.intel.com/product"}

// vendorResources is the device-plugin resource of each vendor, for a
// class that names a vendor and no resources.
var vendorResources = map[string]corev1.ResourceName{"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "gpu.intel.com/i915"}

// CountedResource is the resource a class's accelerators are counted in:
// its first spec.resources entry, else its vendor's resource (amd:
// amd.com/gpu, intel: gpu.intel.com/i915), else nvidia.com/gpu.
func CountedResource(c *v1beta1.AcceleratorClass) corev1.ResourceName {
	if len(c.Spec.Resources) > 0 {
		return corev1.ResourceName(c.Spec.Resources[0].Name)
	}
	if r, ok := vendorResources[strings.ToLower(strings.TrimSpace(c.Spec.Vendor))]; ok {
		return r
	}
	return wellKnownAccelerators[0]
}

// ClassAvailability is what a class's nodes hold, counted as selection
// counts them: AcceleratorClass status reports it and the explanation of
// a class without room quotes the same numbers.
type ClassAvailability struct {
	// Resource the accelerators are counted in (CountedResource).
	Resource corev1.ResourceName
	// Nodes are the Ready, schedulable nodes discovery matches, sorted.
	Nodes []string
	// Total is the allocatable Resource of Nodes.
	Total int64
	// Available is Total minus the requests of bound, non-terminated pods,
	// per node and never below zero.
	Available int64
	// Matching counts the matching nodes whatever their readiness.
	Matching int
	// Products counts matching nodes (any readiness) per product label
	// value (ProductLabels); nodes without one are not counted.
	Products map[string]int
}

// ClassAvailability counts a class's nodes and accelerators; false when
// the index has no such class.
func (x *Index) ClassAvailability(name string) (ClassAvailability, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	c := x.classes[name]
	if c == nil {
		return ClassAvailability{}, false
	}
	a := ClassAvailability{Resource: c.histRes, Matching: len(c.nodes), Products: map[string]int{}}
	_, a.Total, a.Available = c.counts()
	for _, n := range c.nodes {
		if n.info.Ready {
			a.Nodes = append(a.Nodes, n.info.Name)
		}
		if p := nodeProduct(n.info.Labels); p != "" {
			a.Products[p]++
		}
	}
	sort.Strings(a.Nodes)
	return a, true
}

// ClassesOfNode names the classes whose discovery matches a node.
func (x *Index) ClassesOfNode(node string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if n := x.nodes[node]; n != nil {
		return append([]string(nil), n.classes...)
	}
	return nil
}

// nodeProduct is the first product label a node carries.
func nodeProduct(labels map[string]string) string {
	for _, l := range ProductLabels {
		if v := strings.TrimSpace(labels[l]); v != "" {
			return v
		}
	}
	return ""
}

// counts reads the class's Ready nodes, their allocatable and their free
// accelerators from what the Index maintains (hist, allocTotal), so a
// decision and a status read the same numbers.
func (c *classEntry) counts() (nodes, total, available int64) {
	for _, h := range c.hist {
		nodes += int64(h.count)
		available += h.free * int64(h.count)
	}
	return nodes, c.allocTotal, available
}

// availabilityText is the parenthesis an explanation adds to a class
// without room: "(4 of 16 nvidia.com/gpu free on 2 Ready nodes)", the
// availableAccelerators, totalAccelerators and len(nodes) of its status.
func (c *classEntry) availabilityText() string {
	nodes, total, avail := c.counts()
	word := " Ready nodes)"
	if nodes == 1 {
		word = " Ready node)"
	}
	return "(" + strconv.FormatInt(avail, 10) + " of " + strconv.FormatInt(total, 10) + " " + string(c.histRes) + " free on " + strconv.FormatInt(nodes, 10) + word
}
