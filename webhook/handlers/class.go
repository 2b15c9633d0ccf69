package handlers

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateAcceleratorClass denies classes whose selectors, capabilities or
// resources would make selection or scheduling fail later.
var ValidateAcceleratorClass = objectValidator("AcceleratorClass", func(ac *v1beta1.AcceleratorClass) []string {
	return AcceleratorClassErrors(&ac.Spec)
})

// AcceleratorClassErrors checks a class spec; messages name the field.
func AcceleratorClassErrors(spec *v1beta1.AcceleratorClassSpec) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	checkLabels := func(path string, m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, msg := range validation.IsQualifiedName(k) {
				add("%s: key %q is not a valid label key: %s", path, k, msg)
			}
			for _, msg := range validation.IsValidLabelValue(m[k]) {
				add("%s[%s]: value %q is not a valid label value: %s", path, k, m[k], msg)
			}
		}
	}
	checkLabels("spec.discovery.nodeSelector", spec.Discovery.NodeSelector)
	checkLabels("spec.nodeSelector", spec.NodeSelector)
	for i, term := range spec.Discovery.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			add("spec.discovery.nodeSelectorTerms[%d]: an empty term matches no node; add matchExpressions", i)
		}
		for j, e := range term.MatchExpressions {
			path := fmt.Sprintf("spec.discovery.nodeSelectorTerms[%d].matchExpressions[%d]", i, j)
			for _, msg := range validation.IsQualifiedName(e.Key) {
				add("%s.key: %q is not a valid label key: %s", path, e.Key, msg)
			}
			switch e.Operator {
			case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
				if len(e.Values) == 0 {
					add("%s: operator %s needs at least one value", path, e.Operator)
				}
			case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
				if len(e.Values) > 0 {
					add("%s: operator %s takes no values", path, e.Operator)
				}
			case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
				if len(e.Values) != 1 {
					add("%s: operator %s needs exactly one value", path, e.Operator)
				} else if _, err := strconv.ParseInt(e.Values[0], 10, 64); err != nil {
					add("%s: operator %s compares integers, %q is not one (label values such as GPU memory are MiB integers)", path, e.Operator, e.Values[0])
				}
			default:
				add("%s: operator %q is not a node selector operator; use In, NotIn, Exists, DoesNotExist, Gt or Lt", path, e.Operator)
			}
		}
		for j := range term.MatchFields {
			add("spec.discovery.nodeSelectorTerms[%d].matchFields[%d]: matchFields cannot describe an accelerator; use matchExpressions on node labels", i, j)
		}
	}
	if len(spec.Discovery.NodeSelector) == 0 && len(spec.NodeSelector) == 0 && len(spec.Discovery.NodeSelectorTerms) == 0 {
		add("spec.discovery: set nodeSelector or nodeSelectorTerms so berth can find the nodes of this class")
	}
	c := spec.Capabilities
	for _, cc := range []struct{ path, v string }{{"spec.capabilities.computeCapability", c.ComputeCapability}, {"spec.capabilities.minComputeCapability", c.MinComputeCapability}} {
		if cc.v == "" {
			continue
		}
		if _, err := strconv.ParseFloat(cc.v, 64); err != nil {
			add("%s: %q is not a number such as 8.0 or 10.0", cc.path, cc.v)
		}
	}
	if c.MemoryGB != nil && c.MemoryGB.Sign() <= 0 {
		add("spec.capabilities.memoryGB: must be positive, got %s", c.MemoryGB.String())
	}
	if c.MemoryBandwidthGBps != nil && c.MemoryBandwidthGBps.Sign() < 0 {
		add("spec.capabilities.memoryBandwidthGBps: must not be negative")
	}
	seenFeature := map[string]bool{}
	for i, f := range c.Features {
		if f == "" {
			add("spec.capabilities.features[%d]: empty feature name", i)
		} else if seenFeature[f] {
			add("spec.capabilities.features[%d]: %q is listed twice", i, f)
		}
		seenFeature[f] = true
	}
	seenRes := map[string]bool{}
	for i, r := range spec.Resources {
		path := fmt.Sprintf("spec.resources[%d]", i)
		if !strings.Contains(r.Name, "/") {
			add("%s.name: %q is not an extended resource name; use a vendor domain such as nvidia.com/gpu", path, r.Name)
		} else {
			for _, msg := range validation.IsQualifiedName(r.Name) {
				add("%s.name: %q is not a valid resource name: %s", path, r.Name, msg)
			}
		}
		if seenRes[r.Name] {
			add("%s.name: %q is listed twice", path, r.Name)
		}
		seenRes[r.Name] = true
		if r.Quantity.Sign() < 0 {
			add("%s.quantity: must not be negative", path)
		}
		if !r.Divisible && r.Quantity.MilliValue()%1000 != 0 {
			add("%s.quantity: %s is fractional but the resource is not divisible", path, r.Quantity.String())
		}
	}
	if cost := spec.Cost; cost != nil {
		if cost.PerHour != nil && cost.PerHour.Sign() < 0 {
			add("spec.cost.perHour: must not be negative")
		}
		if cost.SpotPerHour != nil && cost.SpotPerHour.Sign() < 0 {
			add("spec.cost.spotPerHour: must not be negative")
		}
	}
	return errs
}
