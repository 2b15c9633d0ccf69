package selection

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// classEntry is an AcceleratorClass with its figures parsed once and the
// nodes its discovery matches.
type classEntry struct {
	name       string
	linePrefix string // "AcceleratorClass/<name>: ", for explanations
	obj        *v1beta1.AcceleratorClass
	memory     int64
	cc         int64 // -1 = not declared
	ccErr      string
	clock      int32
	bandwidth  int64
	features   []string
	perf       []int64 // milli, like perfFigures
	// strategy inputs
	speed      int64 // milli-TFLOPS: max(fp16, bf16), else fp32; 0 = unknown
	perHour    int64 // milli-dollars; -1 = unknown
	perMTokens int64 // milli-dollars; -1 = unknown
	tier       int   // low 0, medium 1, high 2, unknown 3
	resource   corev1.ResourceName
	resources  []corev1.ResourceName // every spec.resources name
	// vendor is spec.vendor in lower case, else the vendor of the first
	// resource's domain (amd.com/gpu: amd); "" when neither says.
	vendor      string
	selector    map[string]string
	terms       []corev1.NodeSelectorTerm
	hasSelector bool
	nodes       map[string]*nodeEntry
	// histRes is the resource hist counts: CountedResource (the class's
	// first resource, else its vendor's, else nvidia.com/gpu). hist maps a free count to how many Ready
	// matching nodes have exactly that many free, maintained by the Index.
	histRes corev1.ResourceName
	hist    []histBucket
	// allocTotal is the allocatable histRes of the Ready matching nodes,
	// maintained with hist (Index.countNode).
	allocTotal int64
	// rank is the class's position under each strategy's static order
	// (performance, cost, balanced), maintained by the Index.
	rank [3]int
}

// histBucket: count Ready matching nodes have exactly free accelerators.
// A slice, not a map: it has a handful of entries (one per distinct free
// count) and a decision iterates it for every class.
type histBucket struct {
	free  int64
	count int32
}

func (c *classEntry) addFree(free int64, delta int32) {
	for i := range c.hist {
		if c.hist[i].free == free {
			c.hist[i].count += delta
			if c.hist[i].count <= 0 {
				c.hist[i] = c.hist[len(c.hist)-1]
				c.hist = c.hist[:len(c.hist)-1]
			}
			return
		}
	}
	if delta > 0 {
		c.hist = append(c.hist, histBucket{free: free, count: delta})
	}
}

func compileClass(o *v1beta1.AcceleratorClass) *classEntry {
	s := &o.Spec
	c := &classEntry{name: o.Name, linePrefix: "AcceleratorClass/" + o.Name + ": ", obj: o, cc: -1, perHour: -1, perMTokens: -1, tier: 3, nodes: map[string]*nodeEntry{}}
	caps := &s.Capabilities
	c.memory = memoryBytes(caps.MemoryGB)
	if caps.ComputeCapability != "" {
		n, err := parseDecimal(caps.ComputeCapability)
		if err != nil {
			c.ccErr = "capabilities.computeCapability: " + err.Error()
		} else {
			c.cc = n
		}
	}
	if caps.ClockSpeedMHz != nil {
		c.clock = *caps.ClockSpeedMHz
	}
	if caps.MemoryBandwidthGBps != nil {
		c.bandwidth = caps.MemoryBandwidthGBps.MilliValue()
	}
	c.features = caps.Features
	c.perf = make([]int64, len(perfFigures))
	if caps.Performance != nil {
		for i, pf := range perfFigures {
			if q := pf.get(caps.Performance); q != nil {
				c.perf[i] = q.MilliValue()
			}
		}
		c.speed = max(c.perf[2], c.perf[3]) // fp16, bf16
		if c.speed == 0 {
			c.speed = c.perf[4] // fp32
		}
	}
	c.readCost(s.Cost)
	if len(s.Resources) > 0 {
		c.resource = corev1.ResourceName(s.Resources[0].Name)
	}
	for _, r := range s.Resources {
		c.resources = append(c.resources, corev1.ResourceName(r.Name))
	}
	c.vendor = strings.ToLower(strings.TrimSpace(s.Vendor))
	if c.vendor == "" && c.resource != "" {
		c.vendor = resourceVendor(c.resource)
	}
	c.histRes = CountedResource(o)

	c.selector = map[string]string{}
	for _, m := range []map[string]string{s.Discovery.NodeSelector, s.NodeSelector} {
		for k, v := range m {
			c.selector[k] = v
		}
	}
	// A conflicting key (the two selectors want different values) can match
	// no node; keep that visible instead of letting one value win.
	for k, v := range s.NodeSelector {
		if w, ok := s.Discovery.NodeSelector[k]; ok && w != v {
			c.selector[k] = "\x00conflict"
		}
	}
	c.terms = s.Discovery.NodeSelectorTerms
	c.hasSelector = len(c.selector) > 0 || len(c.terms) > 0
	return c
}

// readCost reads the strategy's cost inputs.
func (c *classEntry) readCost(cost *v1beta1.AcceleratorCost) {
	if cost == nil {
		return
	}
	if cost.PerHour != nil {
		c.perHour = cost.PerHour.MilliValue()
	}
	if cost.PerMillionTokens != nil {
		c.perMTokens = cost.PerMillionTokens.MilliValue()
	}
	switch strings.ToLower(cost.Tier) {
	case "low":
		c.tier = 0
	case "medium":
		c.tier = 1
	case "high":
		c.tier = 2
	}
}

// matchesNode: the nodeSelector pattern (discovery.nodeSelector and the
// spec.nodeSelector shorthand, ANDed) and each discovery.nodeSelectorTerm
// are alternatives, ORed as Kubernetes ORs the terms of a node selector:
// OEP-0003 calls the terms "alternative discovery patterns", and its A100
// class pins the SXM4 part in nodeSelector while a term adds the PCIe one.
// merge.ClassPlacement gives pods the same rule. A class with no selector
// at all discovers no node: matching every node would count CPU nodes as
// accelerators.
func (c *classEntry) matchesNode(n NodeInfo) bool {
	if !c.hasSelector {
		return false
	}
	if len(c.selector) > 0 && labelsMatch(c.selector, n.Labels) {
		return true
	}
	for i := range c.terms {
		if termMatches(&c.terms[i], n) {
			return true
		}
	}
	return false
}

// termMatches follows Kubernetes node affinity: every expression must hold;
// an empty term matches nothing; Gt and Lt compare integers and fail on
// values that are not integers.
func termMatches(t *corev1.NodeSelectorTerm, n NodeInfo) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	for i := range t.MatchExpressions {
		e := &t.MatchExpressions[i]
		v, ok := n.Labels[e.Key]
		if !requirementHolds(e.Operator, e.Values, v, ok) {
			return false
		}
	}
	for i := range t.MatchFields {
		e := &t.MatchFields[i]
		if e.Key != "metadata.name" || !requirementHolds(e.Operator, e.Values, n.Name, true) {
			return false
		}
	}
	return true
}

func requirementHolds(op corev1.NodeSelectorOperator, values []string, v string, present bool) bool {
	switch op {
	case corev1.NodeSelectorOpIn:
		return present && containsString(values, v)
	case corev1.NodeSelectorOpNotIn:
		return !present || !containsString(values, v)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if op == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
