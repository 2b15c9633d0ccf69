package selection

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// resourceVendor names the vendor of a device-plugin resource by its
// domain: the label before the top-level domain (nvidia.com/gpu: nvidia,
// amd.com/gpu: amd, gpu.intel.com/i915: intel).
func resourceVendor(r corev1.ResourceName) string {
	domain, _, ok := strings.Cut(string(r), "/")
	if !ok {
		return ""
	}
	if i := strings.LastIndexByte(domain, '.'); i > 0 {
		domain = domain[:i]
	}
	if i := strings.LastIndexByte(domain, '.'); i >= 0 {
		domain = domain[i+1:]
	}
	return strings.ToLower(domain)
}

// sameVendor reports whether a class can take a request for resource r
// without a configuration for it: r is empty (nothing requested), the class
// exposes r, the class names no vendor, or its vendor is a label of r's
// domain (aws for aws.amazon.com/neuron).
func (c *classEntry) sameVendor(r corev1.ResourceName) bool {
	if r == "" || r == c.resource || c.vendor == "" || containsResource(c.resources, r) {
		return true
	}
	d, _, _ := strings.Cut(string(r), "/")
	for d != "" {
		var label string
		label, d, _ = strings.Cut(d, ".")
		if strings.EqualFold(label, c.vendor) {
			return true
		}
	}
	return false
}

// configuredClasses are the classes the runtime or the service opted in
// to: an acceleratorConfigurations entry of the runtime, its engine or
// decoder config, or the service's engine or decoder selects them.
func configuredClasses(cr *classRequest) []string {
	var out []string
	for _, ac := range cr.configs {
		if n := ac.Selector.AcceleratorClass; n != "" && !containsString(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// foreignParts is the reason a class of another vendor loses, as parts.
func foreignParts(cr *classRequest, c *classEntry) []string {
	return []string{"runtime requests ", string(cr.nd.resource), " and has no configuration for ", c.vendor,
		"; give ", cr.rt.ref, " an acceleratorConfigurations entry for ", c.name, " (with an image built for ", c.vendor,
		") or list it in spec.acceleratorRequirements.supportedClasses"}
}

// appendWhyNot appends every reason a class does not qualify, "; "
// separated: another vendor, missing capabilities, then the fit.
func appendWhyNot(b []byte, cr *classRequest, ce *classEval) []byte {
	start := len(b)
	sep := func() {
		if len(b) > start {
			b = append(b, "; "...)
		}
	}
	if ce.policy != "" {
		b = appendForbidden(b, ce.policy, ce.policyWhy)
	}
	if ce.foreign {
		sep()
		for _, p := range foreignParts(cr, ce.c) {
			b = append(b, p...)
		}
	}
	if ce.unmet != "" {
		sep()
		b = append(b, ce.unmet...)
	}
	if ce.noFit {
		sep()
		b = appendFit(b, &cr.fit, cr.groupGPUs(ce), ce.c.memory)
	}
	return b
}

func whyNot(cr *classRequest, ce *classEval) string { return string(appendWhyNot(nil, cr, ce)) }
