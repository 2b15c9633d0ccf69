package gpudiscovery

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Proposal is the class discovery proposes for one product.
type Proposal struct {
	Name                          string
	Vendor, ProductLabel, Product string
	Spec                          v1beta1.AcceleratorClassSpec
	// Nodes carrying the product, sorted.
	Nodes []string
}

// NodeProblems are the labels of one node that could not be read.
type NodeProblems struct {
	Node     string
	Problems []Problem
}

var pciVendor = map[string]string{VendorNVIDIA: "10de", VendorAMD: "1002", VendorIntel: "8086"}

// Propose groups the nodes by product and proposes one class per product,
// sorted by name, with the problems of every node that had any (sorted by
// node name).
func Propose(nodes []Node) ([]Proposal, []NodeProblems) {
	sorted := append([]Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	groups := map[string][]Accelerator{}
	names := map[string][]string{}
	var keys []string
	var problems []NodeProblems
	for _, n := range sorted {
		a, ps, ok := ParseNode(n)
		if len(ps) > 0 {
			problems = append(problems, NodeProblems{Node: n.Name, Problems: ps})
		}
		if !ok {
			continue
		}
		k := a.ProductLabel + "=" + a.Product
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], a)
		names[k] = append(names[k], n.Name)
	}
	sort.Strings(keys)
	props := make([]Proposal, 0, len(keys))
	taken := map[string]bool{}
	for _, k := range keys {
		p := propose(groups[k], names[k])
		if taken[p.Name] {
			p.Name = withHash(p.Name, k)
		}
		taken[p.Name] = true
		props = append(props, p)
	}
	sort.Slice(props, func(i, j int) bool { return props[i].Name < props[j].Name })
	return props, problems
}

// propose merges the accelerators of one product's nodes: the smallest
// memory and compute capability any node reports, the first family and
// device ID in node order, mig only when every node is MIG capable.
func propose(as []Accelerator, nodes []string) Proposal {
	first := as[0]
	p := Proposal{Name: ClassName(first.Vendor, first.Product), Vendor: first.Vendor,
		ProductLabel: first.ProductLabel, Product: first.Product, Nodes: nodes}
	var mem int64
	cc, family := "", ""
	mig := true
	devices := map[string]bool{}
	for _, a := range as {
		if a.MemoryBytes > 0 && (mem == 0 || a.MemoryBytes < mem) {
			mem = a.MemoryBytes
		}
		if a.ComputeCapability != "" && (cc == "" || ccLess(a.ComputeCapability, cc)) {
			cc = a.ComputeCapability
		}
		if family == "" {
			family = a.Family
		}
		mig = mig && a.MIGCapable
		if a.DeviceID != "" {
			devices[a.DeviceID] = true
		}
	}
	s := &p.Spec
	s.Vendor, s.Family, s.Model = first.Vendor, family, modelOf(first.Vendor, first.Product)
	s.Discovery.NodeSelector = map[string]string{first.ProductLabel: first.Product}
	s.Discovery.PCIVendorID = pciVendor[first.Vendor]
	for d := range devices {
		s.Discovery.DeviceIDs = append(s.Discovery.DeviceIDs, d)
	}
	sort.Strings(s.Discovery.DeviceIDs)
	if mem > 0 {
		s.Capabilities.MemoryGB = resource.NewQuantity(mem, resource.BinarySI)
	}
	s.Capabilities.ComputeCapability = cc
	if mig {
		s.Capabilities.Features = []string{"mig"}
	}
	s.Resources = []v1beta1.AcceleratorResource{{Name: first.Resource, Quantity: resource.MustParse("1"), Divisible: mig}}
	return p
}

// ccLess compares major.minor numerically.
func ccLess(a, b string) bool {
	am, an := splitCC(a)
	bm, bn := splitCC(b)
	return am < bm || am == bm && an < bn
}

func splitCC(s string) (int64, int64) {
	maj, mnr, _ := strings.Cut(s, ".")
	m, _ := nonNegativeInt(maj)
	n, _ := nonNegativeInt(mnr)
	return m, n
}

// ClassName is the stable, valid name of a vendor's product (see the
// package doc).
func ClassName(vendor, product string) string {
	name := sanitize(product)
	v := sanitize(vendor)
	if v != "" && name != v && !strings.HasPrefix(name, v+"-") {
		name = strings.Trim(v+"-"+name, "-")
	}
	if name == "" {
		name = "accelerator"
	}
	if len(name) > 63 {
		name = withHash(name, vendor+"/"+product)
	}
	return name
}

// modelOf is the product's sanitized name without the vendor.
func modelOf(vendor, product string) string {
	return strings.TrimPrefix(sanitize(product), sanitize(vendor)+"-")
}

func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// withHash keeps at most 54 characters of name and appends 8 hex digits of
// key's FNV-1a hash.
func withHash(name, key string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	if len(name) > 54 {
		name = strings.TrimRight(name[:54], "-")
	}
	return fmt.Sprintf("%s-%08x", name, h.Sum32())
}
