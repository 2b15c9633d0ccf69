package gpudiscovery

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Label keys read from nodes.
const (
	NVIDIAProduct      = "nvidia.com/gpu.product"
	NVIDIAMemory       = "nvidia.com/gpu.memory"
	NVIDIAComputeMajor = "nvidia.com/gpu.compute.major"
	NVIDIAComputeMinor = "nvidia.com/gpu.compute.minor"
	NVIDIACount        = "nvidia.com/gpu.count"
	NVIDIAFamily       = "nvidia.com/gpu.family"
	NVIDIAMIGCapable   = "nvidia.com/mig.capable"

	AMDProduct     = "amd.com/gpu.product"
	AMDProductName = "amd.com/gpu.product-name"
	AMDVRAM        = "amd.com/gpu.vram"
	AMDFamily      = "amd.com/gpu.family"
	AMDDeviceID    = "amd.com/gpu.device-id"

	IntelProduct   = "gpu.intel.com/product"
	IntelMemoryMax = "gpu.intel.com/memory.max"
)

// Vendors and their device-plugin resources.
const (
	VendorNVIDIA = "nvidia"
	VendorAMD    = "amd"
	VendorIntel  = "intel"

	ResourceNVIDIA  = "nvidia.com/gpu"
	ResourceAMD     = "amd.com/gpu"
	ResourceIntel   = "gpu.intel.com/i915"
	ResourceIntelXe = "gpu.intel.com/xe"
)

// Node is what discovery reads of a node.
type Node struct {
	Name   string
	Labels map[string]string
	// Resources are the names of the node's allocatable resources.
	Resources []string
}

// Accelerator is what one node's labels say about its accelerator.
// Zero values are "not said" (or said in a value that could not be read).
type Accelerator struct {
	Vendor string
	// ProductLabel is the label key naming the product; Product its value.
	ProductLabel, Product string
	Family                string
	MemoryBytes           int64
	ComputeCapability     string
	Count                 int64
	MIGCapable            bool
	DeviceID              string
	Resource              string
}

// Problem is a label whose value could not be read: it was ignored.
type Problem struct {
	Label, Value, Reason string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s=%q %s; ignored", p.Label, p.Value, p.Reason)
}

// ParseNode reads the node's GPU labels. ok is false when no product label
// is present (not a GPU node, or one discovery cannot name).
func ParseNode(n Node) (a Accelerator, problems []Problem, ok bool) {
	l := n.Labels
	switch {
	case l[NVIDIAProduct] != "":
		a, problems = parseNVIDIA(l)
	case l[AMDProduct] != "" || l[AMDProductName] != "":
		a, problems = parseAMD(l)
	case l[IntelProduct] != "":
		a, problems = parseIntel(l, n.Resources)
	default:
		return Accelerator{}, nil, false
	}
	return a, problems, true
}

func parseNVIDIA(l map[string]string) (Accelerator, []Problem) {
	a := Accelerator{Vendor: VendorNVIDIA, ProductLabel: NVIDIAProduct, Product: l[NVIDIAProduct],
		Family: strings.ToLower(l[NVIDIAFamily]), Resource: ResourceNVIDIA}
	var ps []Problem
	if v, ok := l[NVIDIAMemory]; ok {
		if mib, err := positiveInt(v); err != nil {
			ps = append(ps, Problem{NVIDIAMemory, v, "is not a whole number of MiB"})
		} else {
			a.MemoryBytes = mib << 20
		}
	}
	cc, p := computeCapability(l)
	a.ComputeCapability, ps = cc, append(ps, p...)
	if v, ok := l[NVIDIACount]; ok {
		if n, err := positiveInt(v); err != nil {
			ps = append(ps, Problem{NVIDIACount, v, "is not a whole number of GPUs"})
		} else {
			a.Count = n
		}
	}
	if v, ok := l[NVIDIAMIGCapable]; ok {
		if b, err := strconv.ParseBool(v); err != nil {
			ps = append(ps, Problem{NVIDIAMIGCapable, v, "is not true or false"})
		} else {
			a.MIGCapable = b
		}
	}
	return a, ps
}

// computeCapability is major.minor; a minor alone says nothing, a major
// alone is major.0.
func computeCapability(l map[string]string) (string, []Problem) {
	maj, hasMaj := l[NVIDIAComputeMajor]
	mnr, hasMin := l[NVIDIAComputeMinor]
	if !hasMaj {
		return "", nil
	}
	var ps []Problem
	m, err := nonNegativeInt(maj)
	if err != nil {
		ps = append(ps, Problem{NVIDIAComputeMajor, maj, "is not a whole number"})
	}
	n := int64(0)
	if hasMin {
		if n, err = nonNegativeInt(mnr); err != nil {
			ps = append(ps, Problem{NVIDIAComputeMinor, mnr, "is not a whole number"})
		}
	}
	if len(ps) > 0 {
		return "", ps
	}
	return strconv.FormatInt(m, 10) + "." + strconv.FormatInt(n, 10), nil
}

func parseAMD(l map[string]string) (Accelerator, []Problem) {
	key := AMDProduct
	if l[key] == "" {
		key = AMDProductName
	}
	a := Accelerator{Vendor: VendorAMD, ProductLabel: key, Product: l[key],
		Family: strings.ToLower(l[AMDFamily]), DeviceID: strings.ToLower(l[AMDDeviceID]), Resource: ResourceAMD}
	var ps []Problem
	if v, ok := l[AMDVRAM]; ok {
		if b, err := vramBytes(v); err != nil {
			ps = append(ps, Problem{AMDVRAM, v, "is not a memory size (e.g. 192G)"})
		} else {
			a.MemoryBytes = b
		}
	}
	return a, ps
}

// vramBytes reads the AMD labeller's VRAM size: a bare number or one
// ending in G or GB is GiB (the labeller divides bytes by 1024³); M or MB
// is MiB; anything else must be a Kubernetes quantity (64Gi).
func vramBytes(v string) (int64, error) {
	s := strings.TrimSpace(v)
	mult := int64(0)
	for _, suf := range []struct {
		s string
		m int64
	}{{"GB", 1 << 30}, {"G", 1 << 30}, {"MB", 1 << 20}, {"M", 1 << 20}} {
		if strings.HasSuffix(s, suf.s) {
			s, mult = strings.TrimSuffix(s, suf.s), suf.m
			break
		}
	}
	if mult == 0 {
		if n, err := positiveInt(s); err == nil {
			return n << 30, nil
		}
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Sign() <= 0 {
			return 0, fmt.Errorf("not a size")
		}
		return q.Value(), nil
	}
	n, err := positiveInt(s)
	if err != nil || n > (1<<62)/mult {
		return 0, fmt.Errorf("not a size")
	}
	return n * mult, nil
}

func parseIntel(l map[string]string, resources []string) (Accelerator, []Problem) {
	a := Accelerator{Vendor: VendorIntel, ProductLabel: IntelProduct, Product: l[IntelProduct], Resource: ResourceIntel}
	for _, r := range resources {
		if r == ResourceIntelXe {
			a.Resource = ResourceIntelXe
		}
	}
	var ps []Problem
	if v, ok := l[IntelMemoryMax]; ok {
		if b, err := positiveInt(v); err != nil {
			ps = append(ps, Problem{IntelMemoryMax, v, "is not a whole number of bytes"})
		} else {
			a.MemoryBytes = b
		}
	}
	return a, ps
}

func positiveInt(v string) (int64, error) {
	n, err := nonNegativeInt(v)
	if err == nil && n == 0 {
		return 0, fmt.Errorf("zero")
	}
	return n, err
}

func nonNegativeInt(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a non-negative integer")
	}
	return n, nil
}
