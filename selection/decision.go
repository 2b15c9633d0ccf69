package selection

import (
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Runtime is the chosen runtime.
type Runtime struct {
	Kind      string // "ServingRuntime" or "ClusterServingRuntime"
	Name      string
	Namespace string // empty for ClusterServingRuntime
	Spec      *v1beta1.ServingRuntimeSpec
	// Labels are the runtime object's labels (shared with the index: read
	// only), what a ServingPolicy's runtimes rule may select by.
	Labels       map[string]string
	AutoSelected bool
}

// Decision is what Select resolved and why every other candidate lost.
type Decision struct {
	Model   Model
	Runtime Runtime
	// AcceleratorClass is nil when the service asks for no accelerator (no
	// accelerator resource in its engine or decoder, no class annotation,
	// no acceleratorSelector, no runtime acceleratorRequirements), or when
	// the cluster has no AcceleratorClass and nothing requires one.
	AcceleratorClass *v1beta1.AcceleratorClass
	// AcceleratorAvailable: the class's ready matching nodes have room for
	// a whole serving group right now.
	AcceleratorAvailable bool
	Protocol             v1beta1.ProtocolVersion
	// Explanation has one sorted line per losing runtime and per losing
	// class, e.g. "ClusterServingRuntime/srt-llama-70b: model size 8B is
	// outside [60B, 80B]".
	Explanation []string
	Warnings    []string
	// ClassChosenBy says how the class was chosen (a ChosenBy* constant),
	// and Strategy which strategy was in force when classes were ranked
	// ("" when none was); see Metrics.
	ClassChosenBy string
	Strategy      v1beta1.AcceleratorSelectionStrategy
}

// RuntimeRef is "ServingRuntime/<name>" or "ClusterServingRuntime/<name>",
// the value pinned in the ome.io/resolved-runtime annotation.
func (d *Decision) RuntimeRef() string { return d.Runtime.Kind + "/" + d.Runtime.Name }

// AcceleratorClassName is the chosen class's name, or "" for none.
func (d *Decision) AcceleratorClassName() string {
	if d.AcceleratorClass == nil {
		return ""
	}
	return d.AcceleratorClass.Name
}

// Error is returned when nothing can be resolved. Reason names the service,
// what was asked and the fix; Candidates has one sorted line per candidate
// and why it failed. Field and CandidateFields say where in the
// InferenceService each is (Errors).
type Error struct {
	// Code says what kind of failure it is (a Code* constant), for metrics.
	Code       string
	Reason     string
	Candidates []string
	// Service is how Reason names the service ("InferenceService ns/name"),
	// "" when it names none. Failures build it afresh (serviceRef): storing
	// a string the success path also uses would move it to the heap on
	// every decision (BenchmarkSelect's allocs/op).
	Service string
	// Field is the path of the service's field the failure is about
	// (spec.model.name, spec.runtime.name, ...; see the package doc), ""
	// for none.
	Field string
	// CandidateFields[i] is the path of the service's field that made
	// Candidates[i] lose; "" or missing: Field.
	CandidateFields []string
}

func (e *Error) Error() string {
	if len(e.Candidates) == 0 {
		return e.Reason
	}
	var b strings.Builder
	b.WriteString(e.Reason)
	b.WriteString(":")
	for _, c := range e.Candidates {
		b.WriteString("\n  - ")
		b.WriteString(c)
	}
	return b.String()
}

// Errors is the error as a field.ErrorList: the reason at Field, then one
// error per candidate at its field, its line (name and why it lost) as the
// detail. Each is Invalid without a value: its detail says what is wrong.
// The reason's detail leaves out the service and the field, which the
// error names already.
func (e *Error) Errors() field.ErrorList {
	reason := strings.TrimPrefix(e.Reason, e.Service+": ")
	if e.Service == "" {
		reason = e.Reason
	}
	if e.Field != "" {
		reason = strings.TrimPrefix(reason, e.Field+": ")
	}
	out := make(field.ErrorList, 0, 1+len(e.Candidates))
	out = append(out, invalidAt(e.Field, reason))
	for i, c := range e.Candidates {
		at := e.Field
		if i < len(e.CandidateFields) && e.CandidateFields[i] != "" {
			at = e.CandidateFields[i]
		}
		out = append(out, invalidAt(at, c))
	}
	return out
}

// invalidAt is an Invalid error at path at, without a value.
func invalidAt(at, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: at, BadValue: field.OmitValueType{}, Detail: detail}
}

// Select resolves model, runtime and AcceleratorClass for an
// InferenceService. It reads only x, never mutates its argument, and gives
// the same Decision for the same objects in any insertion order. On failure
// the error is an *Error. It is SelectWith with no options.
func (x *Index) Select(isvc *v1beta1.InferenceService) (*Decision, error) {
	return x.SelectWith(isvc, SelectOptions{})
}

// SelectWith is Select with options: a Gate makes the runtimes and classes
// it forbids lose ("forbidden by ServingPolicy/<name>: <why>"), so
// auto-selection picks an allowed one; see the package doc.
func (x *Index) SelectWith(isvc *v1beta1.InferenceService, opts SelectOptions) (*Decision, error) {
	if isvc == nil {
		return nil, &Error{Code: CodeInvalidInput, Reason: "no InferenceService given"}
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	m, err := x.selectModelLocked(isvc)
	if err != nil {
		return nil, err
	}
	proto := requestedProtocol(isvc)
	rc, err := x.selectRuntimeLocked(isvc, m, proto, opts.Gate)
	if err != nil {
		return nil, err
	}
	defer rc.scratch.release()
	// One buffer holds every explanation line, written in sorted order:
	// class lines ("AcceleratorClass/<name>: ", classes ordered by that
	// prefix) before runtime lines ("ClusterServingRuntime/...",
	// "ServingRuntime/...", losers ordered by prefix). No string sort needed.
	lb := getLineBuf()
	cc, err := x.selectClassLocked(isvc, rc.e, m, lb, opts.Gate)
	if err != nil {
		lb.release()
		return nil, err
	}
	if rc.scratch != nil {
		rc.scratch.writeTo(lb)
	}
	d := &Decision{
		Model:                m.model,
		Runtime:              Runtime{Kind: rc.e.kind, Name: rc.e.name, Namespace: rc.e.namespace, Spec: rc.e.spec, Labels: rc.e.labels, AutoSelected: rc.autoSelected},
		AcceleratorAvailable: cc.available,
		Protocol:             proto,
		Explanation:          lb.lines(),
		ClassChosenBy:        cc.chosenBy,
		Strategy:             cc.strategy,
	}
	if cc.c != nil {
		d.AcceleratorClass = cc.c.obj
	}
	if rc.autoSelected {
		d.Warnings = append(d.Warnings, "runtime "+d.RuntimeRef()+" was auto-selected for "+m.model.Ref())
	}
	d.Warnings = append(d.Warnings, rc.warnings...)
	d.Warnings = append(d.Warnings, cc.warnings...)
	sort.Strings(d.Warnings)
	return d, nil
}

// decideAgain is the remedy for a pin that no longer resolves. How a pin
// is stored is package pin's business; selection names the command.
const decideAgain = "ask berth to decide again (berth repin isvc/NAME -n NAMESPACE)"

// Resolve re-reads a pinned decision: the model, the runtime by kind and
// name, and the class by name (empty: none). It does not re-run selection,
// so a newly created runtime never moves a pinned service; it fails only
// when something pinned disappeared, naming it.
func (x *Index) Resolve(isvc *v1beta1.InferenceService, runtimeKind, runtimeName, className string) (*Decision, error) {
	if isvc == nil {
		return nil, &Error{Code: CodeInvalidInput, Reason: "no InferenceService given"}
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	svc := serviceRef(isvc)
	m, err := x.resolveModelLocked(isvc)
	if err != nil {
		return nil, err
	}
	var e *runtimeEntry
	switch runtimeKind {
	case KindServingRuntime:
		e = x.runtimes[objKey(isvc.Namespace, runtimeName)]
	case KindClusterServingRuntime:
		e = x.runtimes[objKey("", runtimeName)]
	default:
		return nil, &Error{Code: CodeInvalidInput, Service: serviceRef(isvc), Field: fieldPinnedRuntime, Reason: svc + ": the pinned runtime's kind " + quote(runtimeKind) + " is not ServingRuntime or ClusterServingRuntime; " + decideAgain}
	}
	if e == nil {
		return nil, &Error{Code: CodePinnedObjectMissing, Service: serviceRef(isvc), Field: fieldPinnedRuntime, Reason: svc + ": pinned runtime " + runtimeKind + "/" + runtimeName + " no longer exists; recreate it, or " + decideAgain}
	}
	d := &Decision{
		Model:    m.model,
		Runtime:  Runtime{Kind: e.kind, Name: e.name, Namespace: e.namespace, Spec: e.spec, Labels: e.labels},
		Protocol: requestedProtocol(isvc),
	}
	if e.disabled {
		d.Warnings = append(d.Warnings, "pinned runtime "+e.ref+" is disabled")
	}
	nd := x.podNeed(e.spec, isvc)
	// A pinned service's running pods already hold their accelerators:
	// counting every group again would say "no room" on each update of a
	// service that fills its class. Room for one more group is the
	// question here (a recreated or added group).
	nd.groups = 1
	d.ClassChosenBy = ChosenByNone
	if className == "" {
		d.AcceleratorAvailable = nd.perPod == 0
		return d, nil
	}
	d.ClassChosenBy = ChosenByPin
	c := x.classes[className]
	if c == nil {
		return nil, &Error{Code: CodePinnedObjectMissing, Service: serviceRef(isvc), Field: fieldPinnedClass, Reason: svc + ": pinned AcceleratorClass " + quote(className) + " no longer exists; recreate it, or " + decideAgain}
	}
	d.AcceleratorClass = c.obj
	var nodeSel map[string]string
	if s := isvc.Spec.AcceleratorSelector; s != nil {
		nodeSel = s.NodeSelector
	}
	d.AcceleratorAvailable = x.fits(c, nd, nodeSel)
	if !d.AcceleratorAvailable {
		d.Warnings = append(d.Warnings, noRoomWarning(c, nd, nodeSel, x.hasReadyNode(c, nodeSel)))
	}
	return d, nil
}

// lineBuf builds many explanation lines into one allocation. Its scratch
// space is pooled: the garbage a decision leaves behind costs GC time
// proportional to the (large) index, so a decision allocates only the final
// string and the slice of lines.
type lineBuf struct {
	b    []byte
	ends []int
}

var linePool = sync.Pool{New: func() any { return &lineBuf{} }}

func getLineBuf() *lineBuf {
	l := linePool.Get().(*lineBuf)
	l.b, l.ends = l.b[:0], l.ends[:0]
	return l
}

// add appends a whole line.
func (l *lineBuf) add(parts ...string) {
	l.write(parts...)
	l.end()
}

// write appends to the current line; end closes it.
func (l *lineBuf) write(parts ...string) {
	for _, p := range parts {
		l.b = append(l.b, p...)
	}
}

func (l *lineBuf) end() { l.ends = append(l.ends, len(l.b)) }

// lines returns the lines and gives the scratch back to the pool; l must
// not be used afterwards.
func (l *lineBuf) lines() []string {
	var out []string
	if len(l.ends) > 0 {
		s := string(l.b)
		out = make([]string, len(l.ends))
		start := 0
		for i, e := range l.ends {
			out[i] = s[start:e]
			start = e
		}
	}
	l.release()
	return out
}

// release gives the scratch back to the pool; l must not be used afterwards.
func (l *lineBuf) release() {
	if cap(l.b) <= 1<<20 {
		linePool.Put(l)
	}
}
