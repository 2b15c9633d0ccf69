package merge

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// AcceleratorResourceNames are the device-plugin resources that stand for
// "one GPU" and are translated to the chosen class's vendor.
var AcceleratorResourceNames = []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915"}

func isAcceleratorResource(name corev1.ResourceName) bool {
	for _, n := range AcceleratorResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// isExtendedResource reports whether Kubernetes treats name as an extended
// resource: fully qualified outside the kubernetes.io domain. Extended
// resources cannot be overcommitted, so requests must equal limits.
func isExtendedResource(name corev1.ResourceName) bool {
	domain, _, qualified := strings.Cut(string(name), "/")
	if !qualified {
		return false
	}
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

// TranslateAcceleratorResources renames every known accelerator resource in
// list to target, keeping the quantity (the largest if several collide).
// An empty target, or one that is already the only name used, changes nothing.
func TranslateAcceleratorResources(list corev1.ResourceList, target corev1.ResourceName) corev1.ResourceList {
	if target == "" || len(list) == 0 {
		return list
	}
	needs := false
	for name := range list {
		if name != target && isAcceleratorResource(name) {
			needs = true
			break
		}
	}
	if !needs {
		return list
	}
	out := make(corev1.ResourceList, len(list))
	for name, q := range list {
		if isAcceleratorResource(name) {
			name = target
		}
		if prev, ok := out[name]; ok && prev.Cmp(q) >= 0 {
			continue
		}
		out[name] = q.DeepCopy()
	}
	return out
}

// overlayResources sets every value of over on base (override, not max).
func overlayResources(base, over corev1.ResourceList) corev1.ResourceList {
	if len(over) == 0 {
		return base
	}
	if base == nil {
		base = make(corev1.ResourceList, len(over))
	}
	for name, q := range over {
		base[name] = q.DeepCopy()
	}
	return base
}

// maxResources keeps, per resource, the larger of base and over (OEP-0003, Rule 4).
func maxResources(base, over corev1.ResourceList) corev1.ResourceList {
	if len(over) == 0 {
		return base
	}
	if base == nil {
		base = make(corev1.ResourceList, len(over))
	}
	for name, q := range over {
		if prev, ok := base[name]; ok && prev.Cmp(q) >= 0 {
			continue
		}
		base[name] = q.DeepCopy()
	}
	return base
}

// resourceLayers are the resources of the main container, by who set them.
type resourceLayers struct {
	weak        corev1.ResourceRequirements // the pod and the runtime, in order: later wins
	accelerator corev1.ResourceRequirements // every matching accelerator configuration: max
	user        corev1.ResourceRequirements // the InferenceService, in order: later wins
}

// MergeResources computes the main container's resources: the runtime fills
// gaps, then per resource the larger of the user's and the accelerator's
// value wins. target, when set, is the chosen class's accelerator resource
// and every known GPU resource name is translated to it first.
func MergeResources(weak, accelerator, user corev1.ResourceRequirements, target corev1.ResourceName) corev1.ResourceRequirements {
	tr := func(l corev1.ResourceList) corev1.ResourceList { return TranslateAcceleratorResources(l, target) }
	strongReq := maxResources(maxResources(nil, tr(user.Requests)), tr(accelerator.Requests))
	strongLim := maxResources(maxResources(nil, tr(user.Limits)), tr(accelerator.Limits))
	out := corev1.ResourceRequirements{
		Requests: overlayResources(overlayResources(nil, tr(weak.Requests)), strongReq),
		Limits:   overlayResources(overlayResources(nil, tr(weak.Limits)), strongLim),
		Claims:   mergeClaims(mergeClaims(weak.Claims, accelerator.Claims), user.Claims),
	}
	reconcileRequestsAndLimits(&out, func(kind string, name corev1.ResourceName) bool {
		if kind == "requests" {
			_, ok := strongReq[name]
			return ok
		}
		_, ok := strongLim[name]
		return ok
	})
	if len(out.Requests) == 0 {
		out.Requests = nil
	}
	if len(out.Limits) == 0 {
		out.Limits = nil
	}
	return out
}

// reconcileRequestsAndLimits keeps requests at or below limits, and equal to
// them for extended resources (which Kubernetes cannot overcommit). When the
// two disagree, the value set by the stronger layer (user or accelerator
// over runtime) wins; between equals the larger wins, so a GPU the user asked
// for is never silently taken away. An extended resource with only a request
// gets the same limit, which Kubernetes requires.
func reconcileRequestsAndLimits(r *corev1.ResourceRequirements, strong func(kind string, name corev1.ResourceName) bool) {
	for name, req := range r.Requests {
		lim, hasLim := r.Limits[name]
		if !hasLim {
			if isExtendedResource(name) {
				if r.Limits == nil {
					r.Limits = corev1.ResourceList{}
				}
				r.Limits[name] = req.DeepCopy()
			}
			continue
		}
		c := req.Cmp(lim)
		if c == 0 || (c < 0 && !isExtendedResource(name)) {
			continue
		}
		var winner resource.Quantity
		reqStrong, limStrong := strong("requests", name), strong("limits", name)
		switch {
		case reqStrong && !limStrong:
			winner = req
		case limStrong && !reqStrong:
			winner = lim
		case c > 0:
			winner = req
		default:
			winner = lim
		}
		if isExtendedResource(name) {
			r.Requests[name] = winner.DeepCopy()
			r.Limits[name] = winner.DeepCopy()
			continue
		}
		// Not extended and request > limit: move whichever lost.
		if winner.Cmp(req) == 0 {
			r.Limits[name] = winner.DeepCopy()
		} else {
			r.Requests[name] = winner.DeepCopy()
		}
	}
}

// mergeClaims unions resource claims by name.
func mergeClaims(base, over []corev1.ResourceClaim) []corev1.ResourceClaim {
	if len(over) == 0 {
		return base
	}
	base = append([]corev1.ResourceClaim(nil), base...)
	for _, c := range over {
		found := false
		for i := range base {
			if base[i].Name == c.Name {
				base[i] = c
				found = true
			}
		}
		if !found {
			base = append(base, c)
		}
	}
	return base
}
