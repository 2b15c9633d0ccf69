package policy

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// Service is a resolved InferenceService as policy sees it.
type Service struct {
	Subject
	Service       *v1beta1.InferenceService
	RuntimeKind   string // ServingRuntime | ClusterServingRuntime
	RuntimeName   string
	RuntimeLabels map[string]string
	// RuntimeSpec, when set, lets an image the runtime sets be named by
	// its field in the runtime (ClusterServingRuntime/x
	// spec.engineConfig.runner.image); without it the composed pod's
	// container is named.
	RuntimeSpec *v1beta1.ServingRuntimeSpec
	Classes     map[string]*v1beta1.AcceleratorClass // by component, the classes pinned (engine; decoder when its own)
	Roles       []merge.ComposedRole                 // merge.ComposeService's result for the pinned decision
	// NamespaceInUse: accelerators (by resource name) of the *other*
	// InferenceServices pinned in the namespace, each counted by
	// Accelerators.
	NamespaceInUse map[corev1.ResourceName]int64
}

// serviceCheck is one CheckService call's shared facts, computed the
// first time a policy needs them, so that 100 policies cost 100 rule
// comparisons and not 100 countings.
type serviceCheck struct {
	in      *Service // &service
	service Service

	accDone    bool
	use        []resourceUse // what Accelerators counts, sorted by resource, each > 0
	total      int64         // use summed
	roleTotals []int64       // per role, its accelerators at MaxGroups
	// Backing arrays of use and roleTotals for the usual sizes.
	useBuf  [2]resourceUse
	roleBuf [4]int64
	compBuf [2]string

	costDone  bool
	costMilli int64

	imagesDone bool
	images     []roleImage

	componentsDone bool
	components     []string // the keys of in.Classes, sorted
}

// roleImage is one container image of a composed role, read once.
type roleImage struct {
	role      *merge.ComposedRole
	container *corev1.Container
	ref       imageRef
	where     string // located lazily, when a policy refuses it
	field     *field.Path
	located   bool
}

// knownComponents are the components, sorted.
var knownComponents = []string{v1beta1.ComponentDecoder, v1beta1.ComponentEngine, v1beta1.ComponentRouter}

// resourceUse is a service's accelerators of one resource.
type resourceUse struct {
	name corev1.ResourceName
	n    int64
}

// accelerators counts the service's accelerators once, as Accelerators
// does, without a map: a check that breaks no budget needs only sums.
func (sc *serviceCheck) accelerators() []resourceUse {
	if sc.accDone {
		return sc.use
	}
	sc.accDone = true
	names := wellKnownAccelerators
	for _, c := range sc.in.Classes {
		names = addClassResources(names, c)
	}
	sc.use, sc.roleTotals = sc.useBuf[:0], sc.roleBuf[:0]
	for i := range sc.in.Roles {
		r := &sc.in.Roles[i]
		var roleTotal int64
		if r.Pod != nil {
			pods := r.Pods(r.MaxGroups())
			for _, n := range names {
				if q := podRequest(&r.Pod.Spec, n) * pods; q > 0 {
					sc.use = addUse(sc.use, n, q)
					roleTotal += q
				}
			}
		}
		sc.roleTotals = append(sc.roleTotals, roleTotal)
		sc.total += roleTotal
	}
	return sc.use
}

// addUse adds n of name to use, kept sorted by name.
func addUse(use []resourceUse, name corev1.ResourceName, n int64) []resourceUse {
	i := 0
	for ; i < len(use) && use[i].name < name; i++ {
	}
	if i < len(use) && use[i].name == name {
		use[i].n += n
		return use
	}
	return slices.Insert(use, i, resourceUse{name: name, n: n})
}

// cost is the service's cost per hour in thousandths, counted once.
func (sc *serviceCheck) cost() int64 {
	if !sc.costDone {
		sc.accelerators()
		sc.costMilli, _ = serviceCost(sc.in, sc.roleTotals, false)
		sc.costDone = true
	}
	return sc.costMilli
}

// costParts says what the cost is made of (a violation's message).
func (sc *serviceCheck) costParts() []string {
	sc.accelerators()
	_, parts := serviceCost(sc.in, sc.roleTotals, true)
	return parts
}

// svcRef is "InferenceService <ns>/<name>", for messages.
func (sc *serviceCheck) svcRef() string {
	ref := "InferenceService " + sc.in.Namespace + "/"
	if sc.in.Service != nil {
		ref += sc.in.Service.Name
	}
	return ref
}

// pinnedComponents are the components with a pinned class, sorted.
func (sc *serviceCheck) pinnedComponents() []string {
	if !sc.componentsDone {
		sc.componentsDone = true
		sc.components = sc.compBuf[:0]
		// The usual keys looked up in sorted order: cheaper than ranging
		// over the map and sorting.
		for _, k := range knownComponents {
			if _, ok := sc.in.Classes[k]; ok {
				sc.components = append(sc.components, k)
			}
		}
		if len(sc.components) != len(sc.in.Classes) {
			sc.components = sc.components[:0]
			for k := range sc.in.Classes {
				sc.components = append(sc.components, k)
			}
			sort.Strings(sc.components)
		}
	}
	return sc.components
}

func (sc *serviceCheck) roleImages() []roleImage {
	if !sc.imagesDone {
		sc.imagesDone = true
		for i := range sc.in.Roles {
			r := &sc.in.Roles[i]
			if r.Pod == nil {
				continue
			}
			for _, list := range [][]corev1.Container{r.Pod.Spec.InitContainers, r.Pod.Spec.Containers} {
				for j := range list {
					sc.images = append(sc.images, roleImage{role: r, container: &list[j], ref: readImage(list[j].Image)})
				}
			}
		}
	}
	return sc.images
}

// locate names where an image comes from, once.
func (sc *serviceCheck) locate(im *roleImage) {
	if im.located {
		return
	}
	im.located = true
	sources := serviceImageSources(sc.in)
	im.where, im.field = locateImage(sources, *im.role, im.container)
}

// CheckService checks a resolved service against every policy that
// applies to it. Violations are sorted by policy, then rule, then message.
func (s *Set) CheckService(in Service) []Violation {
	if in.Service != nil && in.ServiceLabels == nil {
		in.ServiceLabels = in.Service.Labels
		if in.ServiceLabels == nil {
			in.ServiceLabels = noLabels
		}
	}
	pols := s.applicable(in.Subject)
	if len(pols) == 0 {
		return nil
	}
	sc := &serviceCheck{service: in} // one allocation for both
	sc.in = &sc.service
	var vs []Violation
	for _, c := range pols {
		vs = c.checkPlacement(sc, vs)
		vs = c.checkImagesOf(sc, vs)
		vs = c.checkBudgets(sc, vs)
		vs = c.checkLabels(sc, vs)
		vs = c.checkCommands(sc, vs)
	}
	return sortViolations(vs)
}

// checkPlacement: the pinned classes and runtime are allowed.
func (c *compiled) checkPlacement(sc *serviceCheck, vs []Violation) []Violation {
	in := sc.in
	if c.classes != nil {
		for _, comp := range sc.pinnedComponents() {
			cl := in.Classes[comp]
			if cl == nil {
				continue
			}
			if why := c.classes.check(cl.Name, cl.Labels); why != "" {
				vs = append(vs, c.violation(RuleAcceleratorClasses, nil, "AcceleratorClass "+cl.Name+" is not allowed in namespace "+in.Namespace+": "+why))
			}
		}
	}
	if c.runtimes != nil && in.RuntimeName != "" {
		if why := c.runtimes.check(in.RuntimeName, in.RuntimeLabels); why != "" {
			var f *field.Path
			if in.Service != nil && in.Service.Spec.Runtime != nil && in.Service.Spec.Runtime.Name != "" {
				f = field.NewPath("spec", "runtime", "name")
			}
			vs = append(vs, c.violation(RuleRuntimes, f, runtimeKind(in.RuntimeKind)+" "+in.RuntimeName+" is not allowed in namespace "+in.Namespace+": "+why))
		}
	}
	return vs
}

func runtimeKind(k string) string {
	if k == "" {
		return "runtime"
	}
	return k
}

// checkImagesOf checks every container and init container of every
// composed role.
func (c *compiled) checkImagesOf(sc *serviceCheck, vs []Violation) []Violation {
	if c.images == nil {
		return vs
	}
	images := sc.roleImages()
	for i := range images {
		im := &images[i]
		why := c.images.checkRef(&im.ref)
		if why == "" {
			continue
		}
		sc.locate(im)
		vs = append(vs, c.violation(RuleImages, im.field, im.where+": "+why))
	}
	return vs
}

// checkBudgets: accelerators per service and per namespace, and cost.
func (c *compiled) checkBudgets(sc *serviceCheck, vs []Violation) []Violation {
	if c.maxSvc == nil && c.maxNS == nil && c.maxCost == nil {
		return vs
	}
	in := sc.in
	use := sc.accelerators()
	if c.maxSvc != nil && sc.total > *c.maxSvc {
		vs = append(vs, c.violation(RuleMaxAcceleratorsPerService, nil, sc.svcRef()+" would use "+describeUse(use, sc.total)+", above the maximum of "+itoa(*c.maxSvc)+" per service"))
	}
	if c.maxNS != nil {
		for _, u := range use {
			if why := namespaceOver(in.Namespace, u.name, in.NamespaceInUse[u.name], u.n, *c.maxNS); why != "" {
				vs = append(vs, c.violation(RuleMaxAcceleratorsPerNamespace, nil, why))
			}
		}
	}
	if c.maxCost != nil {
		if milli, max := sc.cost(), c.maxCostMilli; milli > max {
			vs = append(vs, c.violation(RuleMaxCostPerHour, nil, sc.svcRef()+" would cost "+formatMilli(milli)+"/hour ("+strings.Join(sc.costParts(), " + ")+"), above the maximum of "+formatMilli(max)+"/hour"))
		}
	}
	return vs
}

// namespaceOver says why adding use of r to inUse breaks the budget, ""
// when it does not: "namespace team-a would use 24 nvidia.com/gpu, above
// its budget of 16 (16 of 16 nvidia.com/gpu in use)".
func namespaceOver(ns string, r corev1.ResourceName, inUse, use, budget int64) string {
	if use <= 0 || inUse+use <= budget {
		return ""
	}
	msg := "namespace " + ns + " would use " + itoa(inUse+use) + " " + string(r) + ", above its budget of " + itoa(budget)
	if inUse > budget { // admitted before the policy, or past the webhook in a burst
		return msg + " (" + itoa(inUse) + " " + string(r) + " already in use, over the budget)"
	}
	return msg + " (" + itoa(inUse) + " of " + itoa(budget) + " " + string(r) + " in use)"
}

// checkLabels: every required label is set, non-empty.
func (c *compiled) checkLabels(sc *serviceCheck, vs []Violation) []Violation {
	if sc.in.Service == nil {
		return vs
	}
	for _, l := range c.required {
		if sc.in.Service.Labels[l] == "" {
			vs = append(vs, c.violation(RuleRequiredLabels, field.NewPath("metadata", "labels").Key(l), "label "+l+" is required on every InferenceService in namespace "+sc.in.Namespace+", with a non-empty value"))
		}
	}
	return vs
}

// checkCommands: with allowCommand false, no command set by the service.
func (c *compiled) checkCommands(sc *serviceCheck, vs []Violation) []Violation {
	if !c.noCmd || sc.in.Service == nil {
		return vs
	}
	for _, f := range ServiceCommands(sc.in.Service) {
		vs = append(vs, c.violation(RuleAllowCommand, f, f.String()+": setting a container command is not allowed in namespace "+sc.in.Namespace))
	}
	return vs
}

// describeUse: "24 nvidia.com/gpu", or "24 accelerators (16 amd.com/gpu,
// 8 nvidia.com/gpu)" for several resources (use sorted, total its sum).
func describeUse(use []resourceUse, total int64) string {
	if len(use) == 1 {
		return itoa(use[0].n) + " " + string(use[0].name)
	}
	parts := make([]string, 0, len(use))
	for _, u := range use {
		parts = append(parts, itoa(u.n)+" "+string(u.name))
	}
	return itoa(total) + " accelerators (" + strings.Join(parts, ", ") + ")"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// formatMilli writes thousandths as a decimal: 3500 is "3.5".
func formatMilli(m int64) string {
	neg := m < 0
	if neg {
		m = -m
	}
	s := strconv.FormatInt(m/1000, 10)
	if f := m % 1000; f != 0 {
		s += strings.TrimRight("."+strconv.FormatInt(1000+f, 10)[1:], "0")
	}
	if neg {
		return "-" + s
	}
	return s
}
