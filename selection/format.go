package selection

import (
	"sort"
	"strconv"
	"strings"
	"time"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// runtimeEntry is a runtime with every string parsed once, at upsert.
type runtimeEntry struct {
	kind         string
	namespace    string // "" for ClusterServingRuntime
	name         string
	ref          string // "<Kind>/<name>"
	linePrefix   string // ref + ": ", for explanations
	created      time.Time
	spec         *v1beta1.ServingRuntimeSpec
	disabled     bool
	formats      []formatEntry
	sizes        sizeRange
	sizesText    string // sizes.String(), computed once
	sizeErr      string
	protocolText string
	protocols    []v1beta1.ProtocolVersion
	labels       map[string]string // the object's labels, for a Gate
}

// formatEntry is one supportedModelFormats item. The deprecated top-level
// name/version (the KServe shape) are used when modelFormat does not set them.
type formatEntry struct {
	index      int
	prefix     string // "supportedModelFormats[i]: ", for reasons
	name       string // lower case, for matching and indexing
	display    string // as written
	version    *versionRule
	fwName     string // lower case; "" = any framework
	fwDisplay  string
	fwVersion  *versionRule
	arch       *string // nil = any architecture
	quant      string  // "" = unquantized only
	autoSelect bool
	priority   *int32
	err        string   // first unparseable field, reported instead of a silent mismatch
	errField   []string // err's field under supportedModelFormats[i] ("modelFormat", "version")
	errDetail  string   // err without its field
}

func compileRuntime(kind, namespace, name string, created time.Time, spec *v1beta1.ServingRuntimeSpec) *runtimeEntry {
	spec = omeFolded(spec) // OME's and KServe's names in berth's fields (omeconstraints.go)
	e := &runtimeEntry{kind: kind, namespace: namespace, name: name, ref: kind + "/" + name, linePrefix: kind + "/" + name + ": ", created: created, spec: spec}
	e.disabled = spec.Disabled != nil && *spec.Disabled
	e.protocols = spec.ProtocolVersions
	if len(e.protocols) == 0 {
		e.protocols = []v1beta1.ProtocolVersion{v1beta1.ProtocolOpenAI}
	}
	if r := spec.ModelSizeRange; r != nil {
		if r.Min != nil {
			n, err := ParseSize(*r.Min)
			if err != nil {
				e.sizeErr = "spec.modelSizeRange.min: " + err.Error()
			} else {
				e.sizes.min = &n
			}
		}
		if r.Max != nil {
			n, err := ParseSize(*r.Max)
			if err != nil && e.sizeErr == "" {
				e.sizeErr = "spec.modelSizeRange.max: " + err.Error()
			} else if err == nil {
				e.sizes.max = &n
			}
		}
	}
	e.sizesText = e.sizes.String()
	e.protocolText = protocolList(spec.ProtocolVersions)
	for i := range spec.SupportedModelFormats {
		e.formats = append(e.formats, compileFormat(i, &spec.SupportedModelFormats[i]))
	}
	return e
}

func compileFormat(i int, f *v1beta1.SupportedModelFormat) formatEntry {
	fe := formatEntry{index: i, prefix: "supportedModelFormats[" + strconv.Itoa(i) + "]: ", autoSelect: f.AutoSelect != nil && *f.AutoSelect, priority: f.Priority, arch: f.ModelArchitecture}
	path := "spec.supportedModelFormats[" + strconv.Itoa(i) + "]"
	fe.display = f.Name
	version := f.Version
	var op *v1beta1.RuleOperator
	versionAt := []string{"version"}
	if mf := f.ModelFormat; mf != nil {
		if mf.Name != "" {
			fe.display = mf.Name
		}
		if mf.Version != nil {
			version = mf.Version
			versionAt = []string{"modelFormat", "version"}
		}
		op = mf.Operator
	}
	fe.name = strings.ToLower(strings.TrimSpace(fe.display))
	setErr := func(at []string, detail string) {
		if fe.err == "" {
			fe.err, fe.errField, fe.errDetail = path+"."+strings.Join(at, ".")+": "+detail, at, detail
		}
	}
	if version != nil {
		r, err := parseRule(*version, op)
		if err != nil {
			setErr(versionAt, err.Error())
		} else {
			fe.version = &r
		}
	}
	if fw := f.ModelFramework; fw != nil {
		fe.fwDisplay = fw.Name
		fe.fwName = strings.ToLower(strings.TrimSpace(fw.Name))
		if fw.Version != nil {
			r, err := parseRule(*fw.Version, fw.Operator)
			if err != nil {
				setErr([]string{"modelFramework", "version"}, err.Error())
			} else {
				fe.fwVersion = &r
			}
		}
	}
	if f.Quantization != nil {
		fe.quant = string(*f.Quantization)
	}
	return fe
}

func parseRule(s string, op *v1beta1.RuleOperator) (versionRule, error) {
	v, err := ParseVersion(s)
	if err != nil {
		return versionRule{}, err
	}
	o, err := parseOperator(op)
	if err != nil {
		return versionRule{}, err
	}
	r := versionRule{v: v, op: o}
	r.text = r.String()
	return r, nil
}

// formatNames are the distinct lower-case format names, for the index.
func (e *runtimeEntry) formatNames() []string {
	seen := make([]string, 0, len(e.formats))
	for _, f := range e.formats {
		if f.name == "" {
			continue
		}
		dup := false
		for _, s := range seen {
			if s == f.name {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, f.name)
		}
	}
	return seen
}

// why is a reason kept as the strings it is made of, so that a decision
// over many runtimes writes reasons straight into its explanation buffer
// instead of allocating one string per runtime.
type why struct {
	p [10]string
	n int
}

func because(parts ...string) why {
	var w why
	w.add(parts...)
	return w
}

func (w *why) add(parts ...string) {
	for _, s := range parts {
		if w.n < len(w.p) {
			w.p[w.n] = s
			w.n++
		}
	}
}

func (w *why) empty() bool { return w.n == 0 }

func (w *why) parts() []string { return w.p[:w.n] }

func (w *why) String() string { return strings.Join(w.p[:w.n], "") }

// mismatch returns an empty why when the entry serves the model.
// Architecture: an entry without one serves any architecture. Quantization:
// an entry without one serves unquantized models only, because a runtime
// that was never told about fp8 weights cannot be assumed to load them.
// Versions: a runtime version needs a model version to compare with, except
// for a KServe predictor's inline format, where an absent version means any
// (KServe's Serving Runtimes page: a predictor asking for "sklearn" gets the runtime of sklearn 1).
func (f *formatEntry) mismatch(m *modelEntry) why {
	if f.err != "" {
		return because(f.err)
	}
	if f.name != m.formatName {
		return because("format ", f.display, " is not the model's ", m.model.Spec.ModelFormat.Name)
	}
	if f.version != nil {
		if m.formatVersion == nil && m.model.Kind != KindPredictorModel {
			return because("format version ", f.version.text, " is required but the model declares none")
		}
		if m.formatVersion != nil && !f.version.matches(m.formatVersion) {
			return because("format version ", f.version.text, " does not match the model's ", m.formatVersionText)
		}
	}
	if f.fwName != "" {
		if m.fwName == "" {
			return because("framework ", f.fwDisplay, " is required but the model declares none")
		}
		if f.fwName != m.fwName {
			return because("framework ", f.fwDisplay, " is not the model's ", m.model.Spec.ModelFramework.Name)
		}
		if f.fwVersion != nil {
			if m.fwVersion == nil {
				return because("framework version ", f.fwVersion.text, " is required but the model declares none")
			}
			if m.fwDiscovered {
				if !f.fwVersion.matchesFloor(m.fwVersion) {
					rel := " is older than "
					if f.fwVersion.op == v1beta1.RuleOperatorGreaterThan {
						rel = " (GreaterThan) is not newer than "
					}
					return because("framework ", f.fwDisplay, " version ", f.fwVersion.v.String(), rel, m.fwVersionText,
						", the version the model was saved with (discovered from its files)")
				}
			} else if !f.fwVersion.matches(m.fwVersion) {
				return because("framework ", f.fwDisplay, " version ", f.fwVersion.text, " does not match the model's ", m.fwVersionText)
			}
		}
	}
	if f.arch != nil {
		ma := m.model.Spec.ModelArchitecture
		if ma == nil {
			return because("architecture ", *f.arch, " is required but the model declares none")
		}
		if *ma != *f.arch {
			return because("architecture ", *f.arch, " is not the model's ", *ma)
		}
	}
	mq := ""
	if m.model.Spec.Quantization != nil {
		mq = string(*m.model.Spec.Quantization)
	}
	if mq != f.quant {
		switch {
		case f.quant == "":
			return because("model is quantized ", mq, " but the entry serves unquantized models only")
		case mq == "":
			return because("quantization ", f.quant, " is required but the model is not quantized")
		}
		return because("quantization ", f.quant, " is not the model's ", mq)
	}
	return why{}
}

// compat is how one runtime relates to one model, independent of autoSelect.
type compat struct {
	ok     bool
	reason why    // why not, when !ok
	on     lossOn // the service's field reason is about
	// sizeUnknown: everything matches but the model declares no size and
	// the runtime has a range. A named runtime is used anyway (with a
	// warning); auto-selection cannot rank the range and leaves it out.
	sizeUnknown bool
	autoSelect  bool   // some matching entry has autoSelect
	priority    *int32 // highest priority among matching autoSelect entries
}

// check evaluates the runtime for a model and protocol: enabled, a matching
// format entry, size in range, protocol served.
func (e *runtimeEntry) check(m *modelEntry, proto v1beta1.ProtocolVersion) compat {
	if e.disabled {
		return compat{reason: because("disabled (spec.disabled is true)")}
	}
	var c compat
	var first why // the common case, one failing entry, needs no slice
	var reasons []string
	matched, modelMiss := false, false
	for i := range e.formats {
		f := &e.formats[i]
		if r := f.mismatch(m); !r.empty() {
			if f.name == m.formatName || f.err != "" {
				modelMiss = modelMiss || f.err == ""
				// f.err already names its field; other reasons get the entry.
				prefix := f.prefix
				if f.err != "" {
					prefix = ""
				}
				if first.empty() {
					first = because(prefix)
					first.add(r.parts()...)
				} else {
					reasons = append(reasons, prefix+r.String())
				}
			}
			continue
		}
		matched = true
		if f.autoSelect {
			c.autoSelect = true
			if f.priority != nil && (c.priority == nil || *f.priority > *c.priority) {
				c.priority = f.priority
			}
		}
	}
	if !matched {
		// The model's format, versions, architecture or quantization; an
		// entry of the runtime's own that does not parse is the runtime's.
		if modelMiss || first.empty() {
			c.on = lossOnModel
		}
		switch {
		case first.empty():
			c.reason = because("serves no format ", m.model.Spec.ModelFormat.Name)
		case len(reasons) == 0:
			c.reason = first
		default:
			reasons = append(reasons, first.String())
			sort.Strings(reasons)
			c.reason = because(strings.Join(reasons, "; "))
		}
		return c
	}
	e.checkServes(&c, m, proto)
	return c
}

// checkServes completes check for a runtime with an entry that matches the
// model: its size range holds the model's size, and it serves the protocol.
func (e *runtimeEntry) checkServes(c *compat, m *modelEntry, proto v1beta1.ProtocolVersion) {
	if e.sizeErr != "" {
		c.reason = because(e.sizeErr)
		return
	}
	if e.sizes.set() {
		if m.model.Size == 0 {
			c.sizeUnknown = true
		} else if !e.sizes.contains(m.model.Size) {
			c.reason, c.on = because("model size ", m.sizeText, " is outside ", e.sizesText), lossOnModel
			return
		}
	}
	served := false
	for _, p := range e.protocols {
		if p == proto {
			served = true
			break
		}
	}
	if !served {
		c.reason, c.sizeUnknown, c.on = because("does not serve protocol ", string(proto), " (serves ", e.protocolText, ")"), false, lossOnProtocol
		return
	}
	if c.sizeUnknown {
		c.reason, c.on = because("model declares no modelParameterSize but the runtime serves ", e.sizesText), lossOnModel
		return
	}
	c.ok = true
}

func protocolList(ps []v1beta1.ProtocolVersion) string {
	if len(ps) == 0 {
		return "openAI only: spec.protocolVersions is empty"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}
