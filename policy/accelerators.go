package policy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// wellKnownAccelerators are accelerator resources whatever the classes say.
var wellKnownAccelerators = []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915"}

// Accelerators counts accelerators the roles request at their MaxGroups, by
// resource name (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915 and any
// resource an AcceleratorClass names: pass them via the classes), from
// container requests (limits when no request). A pod's count is what the
// scheduler reserves: the larger of its containers' sum and its largest
// init container.
func Accelerators(roles []merge.ComposedRole, classes ...*v1beta1.AcceleratorClass) map[corev1.ResourceName]int64 {
	names := acceleratorNames(classes)
	out := map[corev1.ResourceName]int64{}
	for i := range roles {
		addRole(out, &roles[i], names)
	}
	return out
}

// addRole adds one role's accelerators at its MaxGroups to out and
// returns their sum.
func addRole(out map[corev1.ResourceName]int64, r *merge.ComposedRole, names []corev1.ResourceName) int64 {
	if r.Pod == nil {
		return 0
	}
	pods := r.Pods(r.MaxGroups())
	var total int64
	for _, n := range names {
		if q := podRequest(&r.Pod.Spec, n); q > 0 {
			out[n] += q * pods
			total += q * pods
		}
	}
	return total
}

// AcceleratorResources is every accelerator resource, sorted: the
// well-known ones (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915) and
// every resource a class's spec.resources names. Accelerators counts these,
// and the reconciler's ResourceQuota backstop of a namespace budget caps
// each of them, so the two never disagree on what an accelerator is.
func AcceleratorResources(classes []*v1beta1.AcceleratorClass) []corev1.ResourceName {
	out := slices.Clone(acceleratorNames(classes))
	slices.Sort(out)
	return out
}

// acceleratorNames is the well-known accelerator resources and those the
// classes name (a new slice only when a class adds one).
func acceleratorNames(classes []*v1beta1.AcceleratorClass) []corev1.ResourceName {
	names := wellKnownAccelerators
	for _, c := range classes {
		names = addClassResources(names, c)
	}
	return names
}

// addClassResources adds to names the resources c names (a new slice only
// when it adds one).
func addClassResources(names []corev1.ResourceName, c *v1beta1.AcceleratorClass) []corev1.ResourceName {
	if c == nil {
		return names
	}
	for _, r := range c.Spec.Resources {
		if n := corev1.ResourceName(r.Name); n != "" && !containsResource(names, n) {
			names = append(names[:len(names):len(names)], n)
		}
	}
	return names
}

func containsResource(list []corev1.ResourceName, r corev1.ResourceName) bool {
	for _, v := range list {
		if v == r {
			return true
		}
	}
	return false
}

// podRequest is the pod's effective request of n.
func podRequest(spec *corev1.PodSpec, n corev1.ResourceName) int64 {
	var sum, initMax int64
	for i := range spec.Containers {
		sum += containerRequest(&spec.Containers[i], n)
	}
	for i := range spec.InitContainers {
		initMax = max(initMax, containerRequest(&spec.InitContainers[i], n))
	}
	return max(sum, initMax)
}

func containerRequest(c *corev1.Container, n corev1.ResourceName) int64 {
	if q, ok := c.Resources.Requests[n]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Limits[n]; ok {
		return q.Value()
	}
	return 0
}

// classFor is the class a component's pods run on: its own, else (for the
// decoder) the engine's.
func classFor(classes map[string]*v1beta1.AcceleratorClass, component string) *v1beta1.AcceleratorClass {
	if c := classes[component]; c != nil {
		return c
	}
	if component == v1beta1.ComponentDecoder {
		return classes[v1beta1.ComponentEngine]
	}
	return nil
}

// perHourMilli is the class's cost.perHour in thousandths, 0 without one.
func perHourMilli(c *v1beta1.AcceleratorClass) int64 {
	if c == nil || c.Spec.Cost == nil || c.Spec.Cost.PerHour == nil {
		return 0
	}
	return c.Spec.Cost.PerHour.MilliValue()
}

// serviceCost sums, per component, its accelerators (roleTotals: per
// role, as Accelerators counts them) × its class's perHour, in
// thousandths. With parts, it also says one "8 × nvidia-h100-80gb at
// 4/hour" per component that costs something (only a violation's message
// needs them).
func serviceCost(in *Service, roleTotals []int64, withParts bool) (milli int64, parts []string) {
	for i := range in.Roles {
		comp := in.Roles[i].Topology.Component
		if componentSeen(in.Roles[:i], comp) {
			continue
		}
		cl := classFor(in.Classes, comp)
		rate := perHourMilli(cl)
		if rate == 0 {
			continue
		}
		var n int64
		for j := i; j < len(in.Roles); j++ {
			if in.Roles[j].Topology.Component == comp {
				n += roleTotals[j]
			}
		}
		if n == 0 {
			continue
		}
		milli += n * rate
		if withParts {
			parts = append(parts, itoa(n)+" × "+cl.Name+" at "+formatMilli(rate)+"/hour")
		}
	}
	return milli, parts
}

// componentSeen: one of roles is of component comp.
func componentSeen(roles []merge.ComposedRole, comp string) bool {
	for i := range roles {
		if roles[i].Topology.Component == comp {
			return true
		}
	}
	return false
}
