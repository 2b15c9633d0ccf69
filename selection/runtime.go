package selection

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// candidate is a runtime that can serve the model, with what ranks it.
type candidate struct {
	e        *runtimeEntry
	priority *int32
	open     int
	dist     uint64
}

// rankRuntimes is the total order of design.md: namespaced before
// cluster-scoped → priority (set beats unset, higher first) → size range
// closest to the model → newest creationTimestamp → name. It returns the
// first criterion that differs, so a loser can be told why it lost.
func rankRuntimes(a, b *candidate) (int, string) {
	an, bn := a.e.namespace != "", b.e.namespace != ""
	if an != bn {
		if an {
			return -1, "scope"
		}
		return 1, "scope"
	}
	switch {
	case a.priority != nil && b.priority == nil:
		return -1, "priority"
	case a.priority == nil && b.priority != nil:
		return 1, "priority"
	case a.priority != nil && *a.priority != *b.priority:
		if *a.priority > *b.priority {
			return -1, "priority"
		}
		return 1, "priority"
	}
	if a.open != b.open {
		if a.open < b.open {
			return -1, "range"
		}
		return 1, "range"
	}
	if a.dist != b.dist {
		if a.dist < b.dist {
			return -1, "range"
		}
		return 1, "range"
	}
	if c := timeNewer(a.e.created, b.e.created); c != 0 {
		return c, "created"
	}
	switch {
	case a.e.name < b.e.name:
		return -1, "name"
	case a.e.name > b.e.name:
		return 1, "name"
	}
	// Same name in both scopes is settled by scope above; this is only
	// reached for the same object.
	return 0, ""
}

// lossReason says why c ranks below the winner w.
func lossReason(c, w *candidate, sizeText string) why {
	_, criterion := rankRuntimes(c, w)
	switch criterion {
	case "scope":
		return because("matches, but namespaced runtime ", w.e.ref, " outranks cluster-scoped runtimes")
	case "priority":
		if c.priority == nil {
			return because("matches, but has no priority and ", w.e.ref, " has priority ", strconv.Itoa(int(*w.priority)))
		}
		return because("matches, but priority ", strconv.Itoa(int(*c.priority)), " is below ", w.e.ref, "'s ", strconv.Itoa(int(*w.priority)))
	case "range":
		return because("matches, but its size range ", c.e.sizesText, " is less close to ", sizeText, " than ", w.e.ref, "'s ", w.e.sizesText)
	case "created":
		return because("matches, but ", w.e.ref, " ranks equally and is newer")
	}
	return because("matches, but ", w.e.ref, " ranks equally and its name sorts first")
}

// runtimeChoice is the outcome of runtime selection.
type runtimeChoice struct {
	e            *runtimeEntry
	autoSelected bool
	scratch      *runtimeScratch // losers, for the explanation; nil when named
	warnings     []string
}

func requestedProtocol(isvc *v1beta1.InferenceService) v1beta1.ProtocolVersion {
	if p := isvc.Spec.ProtocolVersion; p != nil && *p != "" {
		return *p
	}
	return v1beta1.DefaultProtocolVersion
}

// selectRuntimeLocked picks the runtime: the named one, fully checked, or
// the best auto-selectable one. Every other runtime that lists the model's
// format gets one line saying why it lost.
func (x *Index) selectRuntimeLocked(isvc *v1beta1.InferenceService, m *modelEntry, proto v1beta1.ProtocolVersion, gate Gate) (*runtimeChoice, *Error) {
	if ref := isvc.Spec.Runtime; ref != nil && ref.Name != "" {
		return x.namedRuntimeLocked(isvc, ref, m, proto, gate)
	}

	// Cluster runtimes first: "ClusterServingRuntime/..." lines sort before
	// "ServingRuntime/..." ones, and each bucket is sorted, so losers are
	// collected in explanation order.
	buckets := [2][]*runtimeEntry{x.byFormat[formatKey("", m.formatName)]}
	if isvc.Namespace != "" {
		buckets[1] = x.byFormat[formatKey(isvc.Namespace, m.formatName)]
	}
	// One pass checks every runtime, keeping failures in order with a
	// placeholder for each candidate; once the winner is known the
	// candidates' placeholders get their reason.
	sc := runtimeScratchPool.Get().(*runtimeScratch)
	var forbidden []string // the policies that forbid a runtime that could serve
	for _, b := range buckets {
		for _, e := range b {
			c := e.check(m, proto)
			var policy, pwhy string
			if gate != nil && c.ok && c.autoSelect {
				policy, pwhy = gate.Runtime(e.kind, e.name, e.labels, e.spec)
			}
			switch {
			case !c.ok:
				sc.losers = append(sc.losers, runtimeLoser{e: e, why: c.reason, on: c.on, cand: -1})
			case !c.autoSelect:
				sc.losers = append(sc.losers, runtimeLoser{e: e, why: because("matches, but no matching supportedModelFormats entry has autoSelect: true (name it in spec.runtime to use it)"), cand: -1})
			case policy != "":
				sc.losers = append(sc.losers, runtimeLoser{e: e, why: forbiddenBecause(policy, pwhy), cand: -1})
				forbidden = appendUnique(forbidden, policy)
			default:
				cand := candidate{e: e, priority: c.priority}
				cand.open, cand.dist = e.sizes.closeness(m.model.Size)
				sc.losers = append(sc.losers, runtimeLoser{e: e, cand: len(sc.cands)})
				sc.cands = append(sc.cands, cand)
			}
		}
	}
	best := -1
	for i := range sc.cands {
		if best < 0 {
			best = i
		} else if r, _ := rankRuntimes(&sc.cands[i], &sc.cands[best]); r < 0 {
			best = i
		}
	}
	for i := range sc.losers {
		if l := &sc.losers[i]; l.cand >= 0 && l.cand != best {
			l.why = lossReason(&sc.cands[l.cand], &sc.cands[best], m.sizeText)
		}
	}
	if best < 0 {
		return nil, noRuntimeError(isvc, m, proto, sc, forbidden)
	}
	return &runtimeChoice{e: sc.cands[best].e, autoSelected: true, scratch: sc}, nil
}

// noRuntimeError is auto-selection's failure: no runtime can serve the
// model, one line per runtime that lists its format (sc, released here).
func noRuntimeError(isvc *v1beta1.InferenceService, m *modelEntry, proto v1beta1.ProtocolVersion, sc *runtimeScratch, forbidden []string) *Error {
	svc := serviceRef(isvc)
	lb := getLineBuf()
	sc.writeTo(lb)
	fields := sc.fields(modelField(isvc))
	sc.release()
	losers := lb.lines()
	reason := svc + ": no runtime can serve " + m.model.Ref() + " (" + m.describe() + ", protocol " + string(proto) + ")"
	err := &Error{Code: CodeNoRuntime, Service: serviceRef(isvc), Field: fieldRuntimeName, Candidates: losers, CandidateFields: fields}
	switch {
	case len(forbidden) > 0:
		sort.Strings(forbidden)
		reason += ": every runtime that could is forbidden by " + strings.Join(forbidden, ", ") + "; ask the cluster admin, or fix one of these runtimes"
		err.Code = CodeForbiddenByPolicy
	case len(losers) == 0:
		reason += ": no ServingRuntime in namespace " + quoteNS(isvc.Namespace) + " and no ClusterServingRuntime lists format " + m.model.Spec.ModelFormat.Name + "; create one with an autoSelect entry for it"
		err.Field = modelField(isvc) // no runtime serves the model's format
	default:
		reason += "; fix one of these runtimes or name one in spec.runtime"
	}
	err.Reason = reason
	return err
}

// namedRuntimeLocked checks the runtime spec.runtime names: it must serve
// the model (autoSelect is not required; an unknown model size is a
// warning) and no policy may forbid it.
func (x *Index) namedRuntimeLocked(isvc *v1beta1.InferenceService, ref *v1beta1.ServingRuntimeRef, m *modelEntry, proto v1beta1.ProtocolVersion, gate Gate) (*runtimeChoice, *Error) {
	svc := serviceRef(isvc)
	e, err := x.lookupRuntimeLocked(isvc, ref)
	if err != nil {
		return nil, err
	}
	c := e.check(m, proto)
	if !c.ok && !c.sizeUnknown {
		return nil, &Error{Code: CodeRuntimeIncompatible, Service: serviceRef(isvc), Field: fieldRuntimeName, Reason: svc + ": spec.runtime.name: " + e.ref + " cannot serve " + m.model.Ref() + " (" + m.describe() + ", protocol " + string(proto) + "): " + c.reason.String() + "; fix the runtime or remove spec.runtime to auto-select one"}
	}
	if gate != nil {
		if policy, why := gate.Runtime(e.kind, e.name, e.labels, e.spec); policy != "" {
			return nil, &Error{Code: CodeForbiddenByPolicy, Service: serviceRef(isvc), Field: fieldRuntimeName, Reason: svc + ": spec.runtime.name: " + e.ref + " is " + forbiddenWhy(policy, why) + "; name an allowed runtime or remove spec.runtime to auto-select one"}
		}
	}
	if c.sizeUnknown {
		return &runtimeChoice{e: e, warnings: []string{m.model.Ref() + " declares no spec.modelParameterSize, so it was not checked against the size range " + e.sizesText + " of " + e.ref}}, nil
	}
	return &runtimeChoice{e: e}, nil
}

// runtimeLoser is a runtime that lost and why, kept as parts until the
// decision writes its explanation.
type runtimeLoser struct {
	e    *runtimeEntry
	why  why
	on   lossOn // the service's field why is about
	cand int    // index in cands, -1 when the runtime did not match
}

// runtimeScratch is the per-decision working set of auto-selection,
// pooled: a decision should leave little for the GC, whose cycles scan the
// whole (large) index.
type runtimeScratch struct {
	cands  []candidate
	losers []runtimeLoser
}

var runtimeScratchPool = sync.Pool{New: func() any { return &runtimeScratch{} }}

// writeTo appends one line per loser, in order.
func (s *runtimeScratch) writeTo(lb *lineBuf) {
	for i := range s.losers {
		if s.losers[i].why.empty() {
			continue // the winner
		}
		lb.write(s.losers[i].e.linePrefix)
		lb.write(s.losers[i].why.parts()...)
		lb.end()
	}
}

// fields is, per line writeTo writes, the service's field that made that
// runtime lose (model: the service's model field).
func (s *runtimeScratch) fields(model string) []string {
	var out []string
	for i := range s.losers {
		if !s.losers[i].why.empty() {
			out = append(out, s.losers[i].on.path(model))
		}
	}
	return out
}

// release returns s to the pool (see classScratch.release on why stale
// references are not cleared).
func (s *runtimeScratch) release() {
	if s == nil {
		return
	}
	s.cands, s.losers = s.cands[:0], s.losers[:0]
	runtimeScratchPool.Put(s)
}

// lookupRuntimeLocked finds a named runtime: a ServingRuntime in the
// service's namespace first, then a ClusterServingRuntime; spec.runtime.kind
// restricts the lookup to one of them.
func (x *Index) lookupRuntimeLocked(isvc *v1beta1.InferenceService, ref *v1beta1.ServingRuntimeRef) (*runtimeEntry, *Error) {
	svc := serviceRef(isvc)
	kind := ""
	if ref.Kind != nil {
		kind = *ref.Kind
	}
	e, where, ok := x.findRuntimeLocked(isvc.Namespace, ref.Name, kind)
	if !ok {
		return nil, &Error{Code: CodeInvalidInput, Service: serviceRef(isvc), Field: fieldRuntimeKind, Reason: svc + ": spec.runtime.kind " + quote(kind) + " is not ServingRuntime or ClusterServingRuntime"}
	}
	if e == nil {
		return nil, &Error{Code: CodeRuntimeNotFound, Service: serviceRef(isvc), Field: fieldRuntimeName, Reason: svc + ": spec.runtime.name: " + where + "; create it or fix the name"}
	}
	return e, nil
}

// findRuntimeLocked finds a runtime by name as spec.runtime names it: kind
// ServingRuntime (in namespace), ClusterServingRuntime, or "" (the
// ServingRuntime, else the ClusterServingRuntime). where says what does
// not exist when e is nil; ok is false for an unknown kind.
func (x *Index) findRuntimeLocked(namespace, name, kind string) (e *runtimeEntry, where string, ok bool) {
	switch kind {
	case KindServingRuntime:
		return x.runtimes[objKey(namespace, name)], "no ServingRuntime " + quote(name) + " in namespace " + quoteNS(namespace), true
	case KindClusterServingRuntime:
		return x.runtimes[objKey("", name)], "no ClusterServingRuntime " + quote(name), true
	case "":
		if namespace != "" {
			e = x.runtimes[objKey(namespace, name)]
		}
		if e == nil {
			e = x.runtimes[objKey("", name)]
		}
		return e, "no ServingRuntime " + quote(name) + " in namespace " + quoteNS(namespace) + " and no ClusterServingRuntime " + quote(name), true
	}
	return nil, "", false
}
