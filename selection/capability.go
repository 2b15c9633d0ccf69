package selection

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// memoryBytes reads memoryGB: a quantity with a unit (80Gi, 80G) is bytes;
// a bare number (80, 40.5) is GiB, as the field's name says. Anything below
// 1 MiB cannot be an accelerator's memory in bytes, so it is read as GiB
// (a peer read "80" as 0 GiB and every class failed).
func memoryBytes(q *resource.Quantity) int64 {
	if q == nil {
		return 0
	}
	if b := q.Value(); b >= 1<<20 {
		return b
	}
	return q.MilliValue() * (1 << 30) / 1000
}

func formatMemory(b int64) string {
	if b%(1<<30) == 0 {
		return strconv.FormatInt(b/(1<<30), 10) + "Gi"
	}
	return resource.NewQuantity(b, resource.BinarySI).String()
}

// parseDecimal reads a non-negative decimal such as "9.0" or "10" into
// millionths, so compute capabilities compare as numbers: 10.0 > 9.0 (a peer
// compared the strings and put 10.0 below 9.0).
func parseDecimal(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i, f, dot := strings.Cut(t, ".")
	if i == "" || !allDigits(i) || len(i) > 12 || (dot && (f == "" || !allDigits(f))) {
		return 0, fmt.Errorf("%q is not a decimal number such as 8.0 or 10.0", s)
	}
	n, _ := strconv.ParseInt(i, 10, 64)
	n *= 1_000_000
	place := int64(100_000)
	for j := 0; j < len(f) && place > 0; j++ {
		n += int64(f[j]-'0') * place
		place /= 10
	}
	return n, nil
}

func formatDecimal(n int64) string {
	s := strconv.FormatInt(n/1_000_000, 10)
	frac := strings.TrimRight(fmt.Sprintf("%06d", n%1_000_000), "0")
	if frac == "" {
		frac = "0"
	}
	return s + "." + frac
}

// perfFigure names one performance figure and reads it.
type perfFigure struct {
	name string
	get  func(*v1beta1.AcceleratorPerformance) *resource.Quantity
}

var perfFigures = []perfFigure{
	{"fp4TFLOPS", func(p *v1beta1.AcceleratorPerformance) *resource.Quantity { return p.FP4TFLOPS }},
	{"fp8TFLOPS", func(p *v1beta1.AcceleratorPerformance) *resource.Quantity { return p.FP8TFLOPS }},
	{"fp16TFLOPS", func(p *v1beta1.AcceleratorPerformance) *resource.Quantity { return p.FP16TFLOPS }},
	{"bf16TFLOPS", func(p *v1beta1.AcceleratorPerformance) *resource.Quantity { return p.BF16TFLOPS }},
	{"fp32TFLOPS", func(p *v1beta1.AcceleratorPerformance) *resource.Quantity { return p.FP32TFLOPS }},
	{"fp64TFLOPS", func(p *v1beta1.AcceleratorPerformance) *resource.Quantity { return p.FP64TFLOPS }},
	{"int8TOPS", func(p *v1beta1.AcceleratorPerformance) *resource.Quantity { return p.INT8TOPS }},
	{"int4TOPS", func(p *v1beta1.AcceleratorPerformance) *resource.Quantity { return p.INT4TOPS }},
}

// requirement is the merged minimum a class must meet. Merging keeps the
// stricter value of each field, so an InferenceService can tighten what its
// runtime requires but never loosen it.
type requirement struct {
	memory    int64 // bytes; 0 = none
	cc        int64 // millionths; -1 = none
	clock     int32
	bandwidth int64 // milli-GBps; 0 = none
	features  []string
	perf      []int64 // milli, indexed like perfFigures; 0 = none
	errs      []string
	none      bool // set by finish: nothing is required
}

// capabilityField is one set compute capability field and its value.
type capabilityField struct{ field, v string }

// computeCapabilities lists c's set compute capability fields (the OME
// name and berth's), each parsed with parseDecimal.
func computeCapabilities(c *v1beta1.AcceleratorCapabilities) []capabilityField {
	var out []capabilityField
	for _, cc := range []capabilityField{{"minComputeCapability", c.MinComputeCapability}, {"computeCapability", c.ComputeCapability}} {
		if cc.v != "" {
			out = append(out, cc)
		}
	}
	return out
}

func newRequirement() requirement {
	return requirement{cc: -1, perf: make([]int64, len(perfFigures))}
}

// add merges one source (path names it in errors).
func (r *requirement) add(path string, c *v1beta1.AcceleratorCapabilities) {
	if c == nil {
		return
	}
	if b := memoryBytes(c.MemoryGB); b > r.memory {
		r.memory = b
	}
	for _, cc := range computeCapabilities(c) {
		n, err := parseDecimal(cc.v)
		if err != nil {
			r.errs = append(r.errs, path+"."+cc.field+": compute capability "+err.Error())
			continue
		}
		if n > r.cc {
			r.cc = n
		}
	}
	if c.ClockSpeedMHz != nil && *c.ClockSpeedMHz > r.clock {
		r.clock = *c.ClockSpeedMHz
	}
	if c.MemoryBandwidthGBps != nil {
		if v := c.MemoryBandwidthGBps.MilliValue(); v > r.bandwidth {
			r.bandwidth = v
		}
	}
	for _, lists := range [][]string{c.RequiredFeatures, c.Features} {
		for _, f := range lists {
			if f = strings.TrimSpace(f); f != "" && !containsFold(r.features, f) {
				r.features = append(r.features, f)
			}
		}
	}
	if c.Performance != nil {
		for i, pf := range perfFigures {
			if q := pf.get(c.Performance); q != nil {
				if v := q.MilliValue(); v > r.perf[i] {
					r.perf[i] = v
				}
			}
		}
	}
}

// finish settles the requirement; an empty one is remembered so that
// checking 200 classes against nothing costs nothing.
func (r *requirement) finish() {
	sort.Strings(r.features)
	r.none = r.memory == 0 && r.cc < 0 && r.clock == 0 && r.bandwidth == 0 && len(r.features) == 0
	for _, p := range r.perf {
		if p > 0 {
			r.none = false
		}
	}
}

// unmet returns "" when the class meets the requirement, else every reason,
// in a fixed order.
func (r *requirement) unmet(c *classEntry) string {
	if r.none {
		return ""
	}
	var why []string
	if r.memory > 0 {
		switch {
		case c.memory == 0:
			why = append(why, "declares no capabilities.memoryGB but "+formatMemory(r.memory)+" is required")
		case c.memory < r.memory:
			why = append(why, "memory "+formatMemory(c.memory)+" is below the required "+formatMemory(r.memory))
		}
	}
	if r.cc >= 0 {
		switch {
		case c.ccErr != "":
			why = append(why, c.ccErr)
		case c.cc < 0:
			why = append(why, "declares no capabilities.computeCapability but "+formatDecimal(r.cc)+" is required")
		case c.cc < r.cc:
			why = append(why, "compute capability "+formatDecimal(c.cc)+" is below the required "+formatDecimal(r.cc))
		}
	}
	if r.clock > 0 && c.clock < r.clock {
		why = append(why, "clock speed "+strconv.Itoa(int(c.clock))+" MHz is below the required "+strconv.Itoa(int(r.clock))+" MHz")
	}
	if r.bandwidth > 0 && c.bandwidth < r.bandwidth {
		why = append(why, "memory bandwidth "+formatMilli(c.bandwidth)+" GBps is below the required "+formatMilli(r.bandwidth)+" GBps")
	}
	var missing []string
	for _, f := range r.features {
		if !containsFold(c.features, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		why = append(why, "lacks required features "+strings.Join(missing, ", "))
	}
	for i, pf := range perfFigures {
		if r.perf[i] > 0 && c.perf[i] < r.perf[i] {
			why = append(why, "performance."+pf.name+" "+formatMilli(c.perf[i])+" is below the required "+formatMilli(r.perf[i]))
		}
	}
	return strings.Join(why, "; ")
}

func formatMilli(v int64) string {
	s := strconv.FormatInt(v/1000, 10)
	if rem := v % 1000; rem != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%03d", rem), "0")
	}
	return s
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
