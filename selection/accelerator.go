package selection

import (
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// AnnotationRequestSize gives the expected request size in tokens (e.g.
// "2048" or "4K"), which preferenceOrder requestSize conditions compare. The
// API has no field for it; without the annotation those conditions do not
// hold.
const AnnotationRequestSize = "ome.io/request-size"

// classEval is one candidate class with what the decision needs about it.
type classEval struct {
	c         *classEntry
	unmet     string // "" when the class meets the merged requirements
	foreign   bool   // another vendor than the request, and nothing opted in
	noFit     bool   // the group's accelerator memory does not hold the model
	perPod    int64  // accelerators per pod on this class (its configurations applied)
	available bool
	// policy is the policy a Gate named for the class ("" when allowed)
	// and policyWhy its reason; the line reads "forbidden by <policy>:
	// <policyWhy>" (kept apart so that a decision builds no string per
	// forbidden class).
	policy    string
	policyWhy string
}

// qualifies: the class may run the service (room aside).
func (ce *classEval) qualifies() bool { return ce.servable() && ce.policy == "" }

// servable: the class could run the service were no policy in force.
func (ce *classEval) servable() bool { return ce.unmet == "" && !ce.foreign && !ce.noFit }

// classScratch is the per-decision working set for "every class" (200 in
// the benchmark), pooled so that a decision does not leave it to the GC.
type classScratch struct {
	evals []classEval
	ptrs  []*classEval
}

var classScratchPool = sync.Pool{New: func() any { return &classScratch{} }}

// release returns s to the pool. Its stale references are not cleared:
// sync.Pool drops idle items within two GC cycles, so they pin nothing for
// long, and clearing 200 entries per decision costs write barriers.
func (s *classScratch) release() {
	classScratchPool.Put(s)
}

// classChoice is the outcome of class selection.
type classChoice struct {
	c         *classEntry
	available bool
	warnings  []string
	chosenBy  string // a ChosenBy* constant
	strategy  v1beta1.AcceleratorSelectionStrategy
}

var chosenByMode = [...]string{modeAnnotation: ChosenByAnnotation, modePreferred: ChosenByPreferredClasses, modePreference: ChosenByPreferenceOrder, modeStrategy: ChosenByStrategy}

type classMode int

const (
	modeAnnotation classMode = iota
	modePreferred
	modePreference
	modeStrategy
)

// classRequest is what a service and its runtime ask of an AcceleratorClass,
// read once per decision.
type classRequest struct {
	isvc          *v1beta1.InferenceService
	rt            *runtimeEntry
	reqs          *v1beta1.AcceleratorRequirements
	req           requirement
	nodeSel       map[string]string
	preferred     []string
	strategy      v1beta1.AcceleratorSelectionStrategy
	annotated     string
	supported     []string
	supportedList string
	nd            need
	// configs are the acceleratorConfigurations of engine and decoder;
	// optedIn the classes they select (foreign vendors allowed).
	configs []*v1beta1.AcceleratorConfiguration
	optedIn []string
	// gpus are the classes whose engine acceleratorConfigurations set the
	// accelerators per pod; fit is what the model needs of a group.
	gpus  []classGPUs
	fit   fitNeed
	model *modelEntry
	// selCap: per class, pods that fit on its Ready nodes carrying the
	// service's nodeSelector labels; a class is a key when it has any such
	// node. Nil without a nodeSelector.
	selCap map[*classEntry]int64
	// gate, when set, forbids classes; runtime is the chosen runtime, for
	// its ClassUse.
	gate    Gate
	runtime *v1beta1.ServingRuntimeSpec
}

// hasReadyNode: the class has a Ready node (with the service's
// nodeSelector labels, when it has one).
func (cr *classRequest) hasReadyNode(c *classEntry) bool {
	if cr.selCap == nil {
		return len(c.hist) > 0 // addFree drops empty buckets
	}
	_, ok := cr.selCap[c]
	return ok
}

// svc names the service in errors.
func (cr *classRequest) svc() string { return serviceRef(cr.isvc) }

// classGPUs: an engine configuration gives class name perPod accelerators.
type classGPUs struct {
	name   string
	perPod int64
}

// perPodFor is the engine's accelerators per pod on c, as merge composes
// them: a configuration for c sets them (the larger of it and the
// service's own request), else the runner's request holds.
func (cr *classRequest) perPodFor(c *classEntry) int64 {
	for _, g := range cr.gpus {
		if g.name == c.name {
			return max(g.perPod, cr.nd.user)
		}
	}
	return cr.nd.perPod
}

// gpusPerClass collects the accelerators per pod the engine's
// acceleratorConfigurations set, per class (the largest wins, as in merge).
func (x *Index) gpusPerClass(isvc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec) []classGPUs {
	var out []classGPUs
	for _, ac := range accelConfigs(isvc, rt, false) {
		q, _ := x.acceleratorQuantity(&ac.Resources)
		if ac.Runner != nil {
			if r, _ := x.acceleratorQuantity(&ac.Runner.Resources); r > q {
				q = r
			}
		}
		if q <= 0 {
			continue
		}
		name := ac.Selector.AcceleratorClass
		if i := slices.IndexFunc(out, func(g classGPUs) bool { return g.name == name }); i >= 0 {
			out[i].perPod = max(out[i].perPod, q)
		} else {
			out = append(out, classGPUs{name: name, perPod: q})
		}
	}
	return out
}

// groupGPUs is accelerators per pod × pods per group on the class.
func (cr *classRequest) groupGPUs(ce *classEval) int64 { return mulDiv(ce.perPod, cr.nd.pods, 1) }

// classNeed is the group's need on the class.
func (cr *classRequest) classNeed(ce *classEval) need {
	nd := cr.nd
	nd.perPod = ce.perPod
	return nd
}

// classRequestLocked reads the merged requirements, the strategy and the
// explicit names, and checks that every explicitly named class exists: a
// typo should fail at admission, not silently fall through to another class.
func (x *Index) classRequestLocked(cr *classRequest, isvc *v1beta1.InferenceService, rt *runtimeEntry, m *modelEntry) *Error {
	*cr = classRequest{isvc: isvc, rt: rt, model: m, reqs: rt.spec.AcceleratorRequirements, req: newRequirement(), strategy: v1beta1.DefaultStrategy}
	if cr.reqs != nil {
		cr.req.add(rt.ref+" spec.acceleratorRequirements.requiredCapabilities", cr.reqs.RequiredCapabilities)
		cr.supported = cr.reqs.SupportedClasses
	}
	if sel := isvc.Spec.AcceleratorSelector; sel != nil {
		cr.req.add("spec.acceleratorSelector.requiredCapabilities", sel.RequiredCapabilities)
		cr.nodeSel, cr.preferred = sel.NodeSelector, sel.PreferredClasses
		if sel.Strategy != "" {
			cr.strategy = sel.Strategy
		}
	}
	cr.req.finish()
	if len(cr.req.errs) > 0 {
		return &Error{Code: CodeInvalidAcceleratorRequest, Service: cr.svc(), Field: fieldSelector + ".requiredCapabilities", Reason: cr.svc() + ": invalid accelerator requirements: " + strings.Join(cr.req.errs, "; ")}
	}
	strategyFrom, strategyField := fieldStrategy, fieldStrategy
	if s, ok := isvc.Annotations[v1beta1.AnnotationSelectionStrategy]; ok && s != "" {
		cr.strategy, strategyFrom, strategyField = v1beta1.AcceleratorSelectionStrategy(s), "annotation "+v1beta1.AnnotationSelectionStrategy, fieldStrategyAnnotation
	}
	switch cr.strategy {
	case v1beta1.StrategyPerformance, v1beta1.StrategyCost, v1beta1.StrategyBalanced:
	default:
		return &Error{Code: CodeInvalidAcceleratorRequest, Service: cr.svc(), Field: strategyField, Reason: cr.svc() + ": " + strategyFrom + ": " + quote(string(cr.strategy)) + " is not performance, cost or balanced"}
	}
	cr.annotated = strings.TrimSpace(isvc.Annotations[v1beta1.AnnotationAcceleratorClass])
	var missing []string
	at := "" // the first field naming a missing class
	if cr.annotated != "" && x.classes[cr.annotated] == nil {
		missing, at = append(missing, "annotation "+v1beta1.AnnotationAcceleratorClass+" names AcceleratorClass "+quote(cr.annotated)+", which does not exist"), fieldClassAnnotation
	}
	for i, p := range cr.preferred {
		if x.classes[p] == nil {
			missing = append(missing, "spec.acceleratorSelector.preferredClasses["+strconv.Itoa(i)+"] names AcceleratorClass "+quote(p)+", which does not exist")
			if at == "" {
				at = preferredField(i)
			}
		}
	}
	if len(missing) > 0 {
		return &Error{Code: CodeAcceleratorClassNotFound, Service: cr.svc(), Field: at, Reason: cr.svc() + ": " + strings.Join(missing, "; ") + "; create it or fix the name (kubectl get acceleratorclasses)"}
	}
	cr.supportedList = "all classes"
	if len(cr.supported) > 0 {
		cr.supportedList = strings.Join(cr.supported, ", ")
	}
	cr.nd = x.podNeed(rt.spec, isvc)
	cr.configs = accelConfigs(isvc, rt.spec, true)
	cr.optedIn = configuredClasses(cr)
	cr.gpus = x.gpusPerClass(isvc, rt.spec)
	cr.fit = x.fitNeedFor(m)
	return nil
}

// selectClassLocked chooses the AcceleratorClass: the annotation, else the
// first fitting preferredClasses entry, else the runtime's applicable
// preferenceOrder, else the strategy. Among equals a class whose nodes have
// room for a whole group comes first; when none has room the best class is
// still chosen and marked unavailable.
func (x *Index) selectClassLocked(isvc *v1beta1.InferenceService, rt *runtimeEntry, m *modelEntry, lb *lineBuf, gate Gate) (*classChoice, *Error) {
	// On the stack: a decision allocates only what it returns.
	var request classRequest
	cr := &request
	if err := x.classRequestLocked(cr, isvc, rt, m); err != nil {
		return nil, err
	}
	if gate != nil {
		cr.gate, cr.runtime = gate, rt.spec
	}
	if !x.asksForAccelerator(isvc, rt.spec, cr.nd) {
		return &classChoice{available: true, chosenBy: ChosenByNone}, nil
	}
	if len(x.classes) == 0 {
		requiresClass := len(cr.supported) > 0 || (cr.reqs != nil && cr.reqs.RequiredCapabilities != nil) ||
			(isvc.Spec.AcceleratorSelector != nil && isvc.Spec.AcceleratorSelector.RequiredCapabilities != nil)
		if requiresClass {
			return nil, &Error{Code: CodeNoAcceleratorClass, Service: cr.svc(), Field: fieldSelector, Reason: cr.svc() + ": " + rt.ref + " requires an AcceleratorClass but the cluster has none; create AcceleratorClasses for its accelerators"}
		}
		ch := &classChoice{available: cr.nd.perPod == 0, chosenBy: ChosenByNoClasses}
		if cr.nd.perPod > 0 {
			ch.warnings = append(ch.warnings, "the cluster has no AcceleratorClass, so free "+string(cr.nd.resource)+" was not checked")
		}
		return ch, nil
	}
	cands, warnings, sc := x.classCandidatesLocked(cr)
	if sc != nil {
		defer sc.release()
	}
	x.evaluateClassesLocked(cr, cands)

	var p classPick
	var err *Error
	switch {
	case cr.annotated != "":
		p, err = pickAnnotated(cr, cands)
	case len(cr.preferred) > 0:
		p, err = pickPreferred(cr, cands)
	default:
		p = pickRanked(cr, cands, m, isvc)
	}
	if err != nil {
		return nil, err
	}
	if p.winner == nil {
		return nil, noClassError(cr, cands)
	}
	ch := &classChoice{c: p.winner.c, available: p.winner.available, warnings: append(warnings, x.winnerWarnings(cr, p.winner)...),
		chosenBy: chosenByMode[p.mode], strategy: cr.strategy}
	x.explainClasses(lb, cr, cands, p)
	return ch, nil
}

// classCandidatesLocked returns the runtime's supportedClasses, else every
// class, in explanation order; sc, when not nil, is pooled scratch to
// release once the decision is made.
func (x *Index) classCandidatesLocked(cr *classRequest) (cands []*classEval, warnings []string, sc *classScratch) {
	if len(cr.supported) > 0 {
		seen := map[string]bool{}
		for _, n := range cr.supported {
			if seen[n] {
				continue
			}
			seen[n] = true
			if c := x.classes[n]; c != nil {
				cands = append(cands, &classEval{c: c})
			} else {
				warnings = append(warnings, cr.rt.ref+" spec.acceleratorRequirements.supportedClasses lists AcceleratorClass "+quote(n)+", which does not exist")
			}
		}
		sort.Slice(cands, func(i, j int) bool { return cands[i].c.linePrefix < cands[j].c.linePrefix })
		return cands, warnings, nil
	}
	sc = classScratchPool.Get().(*classScratch)
	sc.evals = slices.Grow(sc.evals[:0], len(x.classList))[:len(x.classList)]
	sc.ptrs = slices.Grow(sc.ptrs[:0], len(x.classList))[:len(x.classList)]
	// Pointers are written only when they change (rarely: the class list
	// and the pooled arrays are stable), because during GC every pointer
	// write costs a write barrier; evaluateClassesLocked sets every other
	// field.
	for i, c := range x.classList {
		if e := &sc.evals[i]; e.c != c {
			e.c = c
		}
		if sc.ptrs[i] != &sc.evals[i] {
			sc.ptrs[i] = &sc.evals[i]
		}
	}
	return sc.ptrs, nil, sc
}

// evaluateClassesLocked sets, per candidate, what it lacks and whether its
// nodes have room for a group.
func (x *Index) evaluateClassesLocked(cr *classRequest, cands []*classEval) {
	// A service nodeSelector defeats the per-class histograms; one pass over
	// the nodes then counts, per class, how many pods fit on the nodes that
	// carry the selector's labels, instead of one pass per class.
	if len(cr.nodeSel) > 0 {
		cr.selCap = x.capacityUnder(cr.nodeSel, cr.nd)
	}
	selCap := cr.selCap
	// Per class this loop runs 200 times a decision: what does not depend
	// on the class is settled once.
	vendorCheck := len(cr.supported) == 0 && cr.nd.resource != ""
	// With no per-class configuration every class has the same group, so
	// the fit is a bound on memory per accelerator.
	var minMemory int64
	if cr.fit.bytes > 0 && cr.nd.perPod > 0 {
		g := cr.nd.perPod * cr.nd.pods
		minMemory = (cr.fit.bytes + g - 1) / g
	}
	for _, ce := range cands {
		c := ce.c
		if u := classUnmet(cr, c); u != ce.unmet { // no write barrier when unchanged; classUnmet adds OME's constraints (omeconstraints.go)
			ce.unmet = u
		}
		ce.noFit, ce.available = false, false
		ce.foreign = vendorCheck && c.resource != cr.nd.resource && !c.sameVendor(cr.nd.resource) && !containsString(cr.optedIn, c.name)
		ce.perPod = cr.nd.perPod
		if len(cr.gpus) > 0 {
			ce.perPod = cr.perPodFor(c)
		}
		switch {
		case c.memory == 0 || cr.fit.bytes == 0 || ce.perPod == 0:
		case ce.perPod == cr.nd.perPod:
			ce.noFit = c.memory < minMemory
		default:
			ce.noFit = groupMemory(cr.groupGPUs(ce), c.memory) < cr.fit.bytes
		}
		if cr.gate != nil {
			cr.askGate(ce)
		} else if ce.policy != "" {
			ce.policy, ce.policyWhy = "", ""
		}
		if !ce.qualifies() {
			continue
		}
		if selCap != nil && ce.perPod == cr.nd.perPod {
			ce.available = selCap[ce.c] >= cr.nd.allPods()
		} else {
			ce.available = x.fits(ce.c, cr.classNeed(ce), cr.nodeSel)
		}
	}
}

// classPick is the winner and how it was chosen.
type classPick struct {
	winner *classEval
	mode   classMode
	scores map[string]int32 // preferenceOrder scores, modePreference only
}

// byName finds an explicitly named candidate (a handful per decision).
func byName(cands []*classEval, n string) *classEval {
	for _, ce := range cands {
		if ce.c.name == n {
			return ce
		}
	}
	return nil
}

func pickAnnotated(cr *classRequest, cands []*classEval) (classPick, *Error) {
	ce := byName(cands, cr.annotated)
	if ce == nil {
		return classPick{}, &Error{Code: CodeAcceleratorClassNotQualified, Service: cr.svc(), Field: fieldClassAnnotation, Reason: cr.svc() + ": annotation " + v1beta1.AnnotationAcceleratorClass + ": AcceleratorClass " + cr.annotated + " is not supported by " + cr.rt.ref + " (supportedClasses: " + cr.supportedList + "); choose one of those or another runtime"}
	}
	if ce.policy != "" {
		return classPick{}, &Error{Code: CodeForbiddenByPolicy, Service: cr.svc(), Field: fieldClassAnnotation, Reason: cr.svc() + ": annotation " + v1beta1.AnnotationAcceleratorClass + ": AcceleratorClass " + cr.annotated + " is " + whyNot(cr, ce) + "; choose an allowed class or remove the annotation to auto-select one"}
	}
	if !ce.qualifies() {
		return classPick{}, &Error{Code: CodeAcceleratorClassNotQualified, Service: cr.svc(), Field: fieldClassAnnotation, Reason: cr.svc() + ": annotation " + v1beta1.AnnotationAcceleratorClass + ": AcceleratorClass " + cr.annotated + " does not qualify: " + whyNot(cr, ce)}
	}
	return classPick{winner: ce, mode: modeAnnotation}, nil
}

// pickPreferred takes the first preferredClasses entry that fits, an
// available one before one without room.
func pickPreferred(cr *classRequest, cands []*classEval) (classPick, *Error) {
	var winner *classEval
	var why []lossLine
	var forbidden []string
	for i, p := range cr.preferred {
		ce := byName(cands, p)
		if ce != nil && ce.policy != "" && ce.servable() {
			forbidden = appendUnique(forbidden, ce.policy)
		}
		switch {
		case ce == nil:
			why = append(why, lossLine{"AcceleratorClass/" + p + ": not supported by " + cr.rt.ref + " (supportedClasses: " + cr.supportedList + ")", preferredField(i)})
		case !ce.qualifies():
			why = append(why, lossLine{"AcceleratorClass/" + p + ": " + whyNot(cr, ce), preferredField(i)})
		case winner == nil || (ce.available && !winner.available):
			winner = ce
		}
	}
	if winner == nil {
		lines, fields := sortLosses(why)
		err := &Error{Code: CodeAcceleratorClassNotQualified, Service: cr.svc(), Field: fieldPreferred, Candidates: lines, CandidateFields: fields,
			Reason: cr.svc() + ": no class in spec.acceleratorSelector.preferredClasses fits; relax requiredCapabilities or list another class"}
		if len(forbidden) > 0 {
			err.Code = CodeForbiddenByPolicy
			err.Reason = cr.svc() + ": no class in spec.acceleratorSelector.preferredClasses fits and is allowed (forbidden by " + strings.Join(forbidden, ", ") + "); list an allowed class"
		}
		return classPick{}, err
	}
	return classPick{winner: winner, mode: modePreferred}, nil
}

// pickRanked takes the best applicable preferenceOrder score, else the
// strategy's first class. The winner is nil when no class fits.
func pickRanked(cr *classRequest, cands []*classEval, m *modelEntry, isvc *v1beta1.InferenceService) classPick {
	p := classPick{mode: modePreference, scores: applicablePreferences(cr.reqs, m, isvc)}
	if len(p.scores) > 0 {
		for _, ce := range cands {
			s, ok := p.scores[ce.c.name]
			if !ok || !ce.qualifies() {
				continue
			}
			if p.winner == nil || betterScored(ce, s, p.winner, p.scores[p.winner.c.name]) {
				p.winner = ce
			}
		}
	}
	if p.winner != nil {
		return p
	}
	p.mode = modeStrategy
	for _, ce := range cands {
		if ce.qualifies() && (p.winner == nil || strategyLess(cr.strategy, ce, p.winner)) {
			p.winner = ce
		}
	}
	return p
}

func noClassError(cr *classRequest, cands []*classEval) *Error {
	var why []lossLine
	var forbidden []string
	for _, ce := range cands {
		why = append(why, lossLine{"AcceleratorClass/" + ce.c.name + ": " + whyNot(cr, ce), classLossField(cr, ce)})
		if ce.policy != "" && ce.servable() {
			forbidden = appendUnique(forbidden, ce.policy)
		}
	}
	lines, fields := sortLosses(why)
	err := &Error{Code: CodeNoAcceleratorClass, Service: cr.svc(), Field: fieldSelector, Candidates: lines, CandidateFields: fields}
	if len(forbidden) > 0 {
		sort.Strings(forbidden)
		err.Code = CodeForbiddenByPolicy
		err.Reason = cr.svc() + ": every AcceleratorClass that could serve it with " + cr.rt.ref + " is forbidden by " + strings.Join(forbidden, ", ") + "; ask the cluster admin, or change the service to fit an allowed class"
		return err
	}
	reason := cr.svc() + ": no AcceleratorClass qualifies for " + cr.rt.ref
	if len(cands) == 0 {
		reason = cr.svc() + ": " + cr.rt.ref + " spec.acceleratorRequirements.supportedClasses names no existing AcceleratorClass (" + cr.supportedList + ")"
		err.Field = fieldRuntimeName // the runtime's list: name another runtime
	}
	err.Reason = reason + "; relax the requirements or add a class that meets them"
	return err
}

// explainClasses writes one line per losing class. All lines share one
// buffer: 200 classes would otherwise cost 200 allocations per decision,
// and most losers share their reason, so each shared text is built once.
func (x *Index) explainClasses(lb *lineBuf, cr *classRequest, cands []*classEval, p classPick) {
	w := p.winner
	winnerScore := strconv.Itoa(int(p.scores[w.c.name]))
	var needRes, needTxt, shared string
	var needPerPod int64
	switch p.mode {
	case modeAnnotation:
		shared = "fits, but annotation " + v1beta1.AnnotationAcceleratorClass + " chose " + w.c.name
	case modeStrategy:
		shared = "fits, but strategy " + string(cr.strategy) + " ranks " + w.c.name + " first"
	case modePreferred:
		shared = "fits, but spec.acceleratorSelector.preferredClasses lists " + w.c.name + " first"
	case modePreference:
		shared = "fits, but no applicable preferenceOrder entry of " + cr.rt.ref + " names it; " + w.c.name + " scores " + winnerScore
	}
	for _, ce := range cands {
		if ce == w {
			continue
		}
		name := ce.c.name
		switch {
		case !ce.qualifies():
			lb.write(ce.c.linePrefix)
			lb.b = appendWhyNot(lb.b, cr, ce)
			lb.end()
		case w.available && !ce.available && p.mode != modeAnnotation:
			if !cr.hasReadyNode(ce.c) {
				lb.add(ce.c.linePrefix, "fits, but ", noReadyNode(cr.nodeSel), "; ", w.c.name, " has room")
				break
			}
			if r := string(ce.c.resourceFor(cr.nd)); r != needRes || ce.perPod != needPerPod || needTxt == "" {
				needRes, needPerPod, needTxt = r, ce.perPod, needText(ce.c, cr.classNeed(ce))
			}
			lb.add(ce.c.linePrefix, "fits, but its ready nodes lack ", needTxt, statusCounts(ce.c, cr.classNeed(ce), cr.nodeSel), "; ", w.c.name, " has room")
		case p.mode == modePreferred && !containsString(cr.preferred, name):
			lb.add(ce.c.linePrefix, "fits, but is not in spec.acceleratorSelector.preferredClasses")
		case p.mode == modePreference:
			if s, ok := p.scores[name]; ok {
				lb.add(ce.c.linePrefix, "fits, but its preferenceOrder score ", strconv.Itoa(int(s)), " does not beat ", w.c.name, "'s ", winnerScore)
			} else {
				lb.add(ce.c.linePrefix, shared)
			}
		default:
			lb.add(ce.c.linePrefix, shared)
		}
	}
}

// needText is what the service needs of a class: "1 pod(s) × 4
// nvidia.com/gpu" for one group, "6 group(s) × 1 pod(s) × 1
// nvidia.com/gpu" for several.
func needText(c *classEntry, nd need) string {
	s := strconv.FormatInt(nd.pods, 10) + " pod(s) × " + strconv.FormatInt(nd.perPod, 10) + " " + string(c.resourceFor(nd))
	if nd.groups > 1 {
		s = strconv.FormatInt(nd.groups, 10) + " group(s) × " + s
	}
	return s
}

// betterScored: available first, then the higher score, then the name.
func betterScored(a *classEval, as int32, b *classEval, bs int32) bool {
	if a.available != b.available {
		return a.available
	}
	if as != bs {
		return as > bs
	}
	return a.c.name < b.c.name
}

// applicablePreferences returns the best score per class among the
// runtime's preferenceOrder entries whose conditions all hold.
func applicablePreferences(reqs *v1beta1.AcceleratorRequirements, m *modelEntry, isvc *v1beta1.InferenceService) map[string]int32 {
	if reqs == nil || len(reqs.PreferenceOrder) == 0 {
		return nil
	}
	var reqSize *int64
	if s, ok := isvc.Annotations[AnnotationRequestSize]; ok {
		if n, err := ParseSize(s); err == nil {
			reqSize = &n
		}
	}
	out := map[string]int32{}
	for _, p := range reqs.PreferenceOrder {
		holds := true
		for _, c := range p.Conditions {
			if c.ModelSize != "" && (m.model.Size == 0 || !conditionHolds(c.ModelSize, m.model.Size)) {
				holds = false
			}
			if c.RequestSize != "" && (reqSize == nil || !conditionHolds(c.RequestSize, *reqSize)) {
				holds = false
			}
		}
		if holds {
			if s, ok := out[p.Class]; !ok || p.Score > s {
				out[p.Class] = p.Score
			}
		}
	}
	return out
}

// parseCondition reads "<30B", ">=4096", "=7B" or "7B" (equality).
func parseCondition(s string) (string, int64, error) {
	t := strings.TrimSpace(s)
	op := "="
	for _, o := range []string{"<=", ">=", "<", ">", "="} {
		if strings.HasPrefix(t, o) {
			op, t = o, t[len(o):]
			break
		}
	}
	n, err := ParseSize(t)
	return op, n, err
}

func conditionHolds(s string, v int64) bool {
	op, n, err := parseCondition(s)
	if err != nil {
		return false
	}
	switch op {
	case "<":
		return v < n
	case "<=":
		return v <= n
	case ">":
		return v > n
	case ">=":
		return v >= n
	}
	return v == n
}

// strategyLess orders fitting classes: available first, then the strategy.
//   - performance: fastest (max fp16/bf16 TFLOPS, else fp32), then most
//     memory, then highest compute capability;
//   - cost: cheapest per hour, then per million tokens, then tier;
//   - balanced: most TFLOPS per dollar-hour, then the cost order.
//
// Unknown figures rank after known ones, and the name settles every tie, so
// a strategy always yields a class when one fits (a peer returned none or
// panicked when classes had no figures).
func strategyLess(s v1beta1.AcceleratorSelectionStrategy, a, b *classEval) bool {
	if a.available != b.available {
		return a.available
	}
	return a.c.rank[strategyIndex(s)] < b.c.rank[strategyIndex(s)]
}

// strategyIndex numbers the strategies for classEntry.rank.
func strategyIndex(s v1beta1.AcceleratorSelectionStrategy) int {
	switch s {
	case v1beta1.StrategyPerformance:
		return 0
	case v1beta1.StrategyCost:
		return 1
	}
	return 2
}

var strategiesByIndex = []v1beta1.AcceleratorSelectionStrategy{v1beta1.StrategyPerformance, v1beta1.StrategyCost, v1beta1.StrategyBalanced}

// strategyOrder is the static part of a strategy (availability aside), a
// total order; the Index ranks every class by it when classes change, so
// a decision compares two integers per class.
func strategyOrder(s v1beta1.AcceleratorSelectionStrategy, x, y *classEntry) int {
	var c int
	switch s {
	case v1beta1.StrategyPerformance:
		c = firstNonZero(descKnown(x.speed, y.speed), cmpInt(y.memory, x.memory), cmpInt(y.cc, x.cc))
	case v1beta1.StrategyCost:
		c = costOrder(x, y)
	default:
		c = firstNonZero(ratioOrder(x, y), costOrder(x, y))
	}
	if c != 0 {
		return c
	}
	return strings.Compare(x.name, y.name)
}

func costOrder(x, y *classEntry) int {
	return firstNonZero(ascKnown(x.perHour, y.perHour), ascKnown(x.perMTokens, y.perMTokens), cmpInt(int64(x.tier), int64(y.tier)))
}

// ratioOrder compares speed/perHour exactly (128-bit cross products).
func ratioOrder(x, y *classEntry) int {
	xk, yk := x.speed > 0 && x.perHour > 0, y.speed > 0 && y.perHour > 0
	switch {
	case xk && !yk:
		return -1
	case !xk && yk:
		return 1
	case !xk && !yk:
		return 0
	}
	// x.speed/x.perHour vs y.speed/y.perHour  ⇔  x.speed*y.perHour vs y.speed*x.perHour
	h1, l1 := bits.Mul64(uint64(x.speed), uint64(y.perHour))
	h2, l2 := bits.Mul64(uint64(y.speed), uint64(x.perHour))
	switch {
	case h1 > h2 || (h1 == h2 && l1 > l2):
		return -1
	case h1 < h2 || (h1 == h2 && l1 < l2):
		return 1
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// descKnown: larger first, zero (unknown) last.
func descKnown(a, b int64) int {
	switch {
	case a > 0 && b <= 0:
		return -1
	case a <= 0 && b > 0:
		return 1
	}
	return cmpInt(b, a)
}

// ascKnown: smaller first, negative (unknown) last.
func ascKnown(a, b int64) int {
	switch {
	case a >= 0 && b < 0:
		return -1
	case a < 0 && b >= 0:
		return 1
	}
	return cmpInt(a, b)
}

func firstNonZero(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

// winnerWarnings: the chosen class has no room, or the fit was not
// checked (the model declares no size, or the class no memory).
func (x *Index) winnerWarnings(cr *classRequest, w *classEval) []string {
	var out []string
	if !w.available {
		out = append(out, noRoomWarning(w.c, cr.classNeed(w), cr.nodeSel, cr.hasReadyNode(w.c)))
	}
	if w.perPod > 0 {
		switch {
		case cr.fit.bytes == 0:
			out = append(out, cr.model.model.Ref()+" declares no spec.modelParameterSize, so whether it fits in the memory of AcceleratorClass "+w.c.name+" was not checked")
		case w.c.memory == 0:
			out = append(out, "AcceleratorClass "+w.c.name+" declares no capabilities.memoryGB, so whether "+cr.model.model.Ref()+" fits in it was not checked")
		}
	}
	return out
}
