package validation

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateAcceleratorClassSpec checks what would make selection or
// scheduling fail later: label syntax of the selectors, the shape of
// discovery terms (their operators: selection.ValidateDiscovery), numeric
// capabilities, and
// resources and costs that make sense.
func ValidateAcceleratorClassSpec(spec *v1beta1.AcceleratorClassSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	discovery := path.Child("discovery")
	errs = append(errs, validateLabels(discovery.Child("nodeSelector"), spec.Discovery.NodeSelector)...)
	errs = append(errs, validateLabels(path.Child("nodeSelector"), spec.NodeSelector)...)
	for i, term := range spec.Discovery.NodeSelectorTerms {
		errs = append(errs, validateTerm(discovery.Child("nodeSelectorTerms").Index(i), term)...)
	}
	if len(spec.Discovery.NodeSelector) == 0 && len(spec.NodeSelector) == 0 && len(spec.Discovery.NodeSelectorTerms) == 0 {
		errs = append(errs, field.Required(discovery, "set nodeSelector or nodeSelectorTerms so berth can find the nodes of this class"))
	}
	errs = append(errs, validateCapabilities(path.Child("capabilities"), &spec.Capabilities)...)
	errs = append(errs, validateResources(path.Child("resources"), spec.Resources)...)
	if cost := spec.Cost; cost != nil {
		for _, c := range []struct {
			name string
			q    *resource.Quantity
		}{{"perHour", cost.PerHour}, {"spotPerHour", cost.SpotPerHour}} {
			if c.q != nil && c.q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child("cost", c.name), c.q.String(), "must not be negative"))
			}
		}
	}
	return errs
}

// validateLabels checks label keys and values, in key order.
func validateLabels(p *field.Path, m map[string]string) field.ErrorList {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, "is not a valid label key: "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(m[k]) {
			errs = append(errs, field.Invalid(p.Key(k), m[k], "is not a valid label value: "+msg))
		}
	}
	return errs
}

// validateTerm checks the shape of one discovery term: label keys, no
// empty term, no matchFields. Operators and values are selection's rule
// (selection.ValidateDiscovery, which the webhook runs next to this), so
// that what admission accepts and what selection matches never disagree.
func validateTerm(p *field.Path, term corev1.NodeSelectorTerm) field.ErrorList {
	var errs field.ErrorList
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		errs = append(errs, field.Required(p.Child("matchExpressions"), "an empty term matches no node"))
	}
	for j, e := range term.MatchExpressions {
		ep := p.Child("matchExpressions").Index(j)
		for _, msg := range validation.IsQualifiedName(e.Key) {
			errs = append(errs, field.Invalid(ep.Child("key"), e.Key, "is not a valid label key: "+msg))
		}
	}
	for j := range term.MatchFields {
		errs = append(errs, field.Forbidden(p.Child("matchFields").Index(j), "matchFields cannot describe an accelerator; use matchExpressions on node labels"))
	}
	return errs
}

// validateCapabilities checks the numbers selection compares.
func validateCapabilities(p *field.Path, c *v1beta1.AcceleratorCapabilities) field.ErrorList {
	var errs field.ErrorList
	for _, cc := range []struct{ name, v string }{{"computeCapability", c.ComputeCapability}, {"minComputeCapability", c.MinComputeCapability}} {
		if cc.v == "" {
			continue
		}
		if _, err := strconv.ParseFloat(cc.v, 64); err != nil {
			errs = append(errs, field.Invalid(p.Child(cc.name), cc.v, "is not a number such as 8.0 or 10.0"))
		}
	}
	if c.MemoryGB != nil && c.MemoryGB.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("memoryGB"), c.MemoryGB.String(), "must be positive"))
	}
	if c.MemoryBandwidthGBps != nil && c.MemoryBandwidthGBps.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("memoryBandwidthGBps"), c.MemoryBandwidthGBps.String(), "must not be negative"))
	}
	seen := map[string]int{}
	for i, f := range c.Features {
		fp := p.Child("features").Index(i)
		if f == "" {
			errs = append(errs, field.Required(fp, "empty feature name"))
		} else if j, dup := seen[f]; dup {
			errs = append(errs, withDetail(field.Duplicate(fp, f), "also "+p.Child("features").Index(j).String()))
		} else {
			seen[f] = i
		}
	}
	return errs
}

// validateResources checks the extended resources a class's pods request.
func validateResources(p *field.Path, resources []v1beta1.AcceleratorResource) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, r := range resources {
		rp := p.Index(i)
		if !strings.Contains(r.Name, "/") {
			errs = append(errs, field.Invalid(rp.Child("name"), r.Name, "is not an extended resource name; use a vendor domain such as nvidia.com/gpu"))
		} else {
			for _, msg := range validation.IsQualifiedName(r.Name) {
				errs = append(errs, field.Invalid(rp.Child("name"), r.Name, "is not a valid resource name: "+msg))
			}
		}
		if j, dup := seen[r.Name]; dup {
			errs = append(errs, withDetail(field.Duplicate(rp.Child("name"), r.Name), "also "+p.Index(j).Child("name").String()))
		} else {
			seen[r.Name] = i
		}
		if r.Quantity.Sign() < 0 {
			errs = append(errs, field.Invalid(rp.Child("quantity"), r.Quantity.String(), "must not be negative"))
		}
		if !r.Divisible && r.Quantity.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(rp.Child("quantity"), r.Quantity.String(), "is fractional but the resource is not divisible"))
		}
	}
	return errs
}

func withDetail(e *field.Error, detail string) *field.Error {
	e.Detail = detail
	return e
}
