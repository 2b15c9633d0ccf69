package selection

import (
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateRuntimeSpec checks one runtime on its own. path is the spec's
// field (usually spec). Errors deny admission; each names its field and
// prints as "<field>: <detail>" (fieldError). Warnings are returned to
// kubectl.
func ValidateRuntimeSpec(path *field.Path, spec *v1beta1.ServingRuntimeSpec) (errs field.ErrorList, warnings []string) {
	if spec == nil {
		return field.ErrorList{fieldError(path, "is empty; set supportedModelFormats")}, nil
	}
	// One format name keeps one priority across its versions, otherwise the
	// runtime's rank would depend on which version a model has (OME's Serving Runtime page).
	firstPriority := map[string]int{}
	formats := path.Child("supportedModelFormats")
	for i := range spec.SupportedModelFormats {
		f := &spec.SupportedModelFormats[i]
		p := formats.Index(i)
		fe := compileFormat(i, f)
		if fe.name == "" {
			errs = append(errs, fieldError(p, "no format name; set modelFormat.name (or the deprecated name)"))
		}
		if fe.err != "" {
			errs = append(errs, fieldError(p.Child(fe.errField[0], fe.errField[1:]...), fe.errDetail))
		}
		if f.Priority != nil {
			if *f.Priority < 1 {
				errs = append(errs, fieldError(p.Child("priority"), "must be at least 1, got "+strconv.Itoa(int(*f.Priority))))
			}
			if !fe.autoSelect {
				warnings = append(warnings, p.Child("priority").String()+": has no effect without autoSelect: true")
			}
		}
		if f.ModelFormat != nil && f.ModelFormat.Name != "" && f.Name != "" && !strings.EqualFold(f.ModelFormat.Name, f.Name) {
			warnings = append(warnings, p.String()+": name "+quote(f.Name)+" differs from modelFormat.name "+quote(f.ModelFormat.Name)+"; modelFormat.name is used")
		}
		if fe.name == "" || !fe.autoSelect {
			continue
		}
		if j, ok := firstPriority[fe.name]; ok {
			other := &spec.SupportedModelFormats[j]
			if !samePriority(other.Priority, f.Priority) {
				errs = append(errs, fieldError(p.Child("priority"), "format "+fe.display+" has priority "+priorityText(f.Priority)+" here but "+priorityText(other.Priority)+" in "+formats.Index(j).String()+"; one format keeps one priority across versions"))
			}
		} else {
			firstPriority[fe.name] = i
		}
	}
	errs = append(errs, validateSizeRange(path.Child("modelSizeRange"), spec.ModelSizeRange)...)
	errs = append(errs, validateAcceleratorRequirements(path.Child("acceleratorRequirements"), spec.AcceleratorRequirements)...)
	return errs, warnings
}

// fieldError is a validation error whose detail already says what is
// wrong with the value: the webhook prints it as "<field>: <detail>", and
// its Status cause carries the field. Every error of this package is one.
func fieldError(p *field.Path, detail string) *field.Error {
	return field.Invalid(p, field.OmitValueType{}, detail)
}

func validateSizeRange(path *field.Path, r *v1beta1.ModelSizeRangeSpec) (errs field.ErrorList) {
	if r == nil {
		return nil
	}
	var lo, hi *int64
	for _, b := range []struct {
		field string
		v     *string
		dst   **int64
	}{{"min", r.Min, &lo}, {"max", r.Max, &hi}} {
		if b.v == nil {
			continue
		}
		n, err := ParseSize(*b.v)
		if err != nil {
			errs = append(errs, fieldError(path.Child(b.field), err.Error()))
			continue
		}
		*b.dst = &n
	}
	if lo != nil && hi != nil && *lo > *hi {
		errs = append(errs, fieldError(path, "min "+FormatSize(*lo)+" is greater than max "+FormatSize(*hi)))
	}
	return errs
}

func validateAcceleratorRequirements(path *field.Path, ar *v1beta1.AcceleratorRequirements) (errs field.ErrorList) {
	if ar == nil {
		return nil
	}
	if c := ar.RequiredCapabilities; c != nil {
		for _, cc := range computeCapabilities(c) {
			if _, err := parseDecimal(cc.v); err != nil {
				errs = append(errs, fieldError(path.Child("requiredCapabilities", cc.field), "compute capability "+err.Error()))
			}
		}
	}
	for i, p := range ar.PreferenceOrder {
		pp := path.Child("preferenceOrder").Index(i)
		if p.Class == "" {
			errs = append(errs, fieldError(pp.Child("class"), "is empty; name an AcceleratorClass"))
		}
		for j, c := range p.Conditions {
			for _, cond := range []struct{ field, v string }{{"modelSize", c.ModelSize}, {"requestSize", c.RequestSize}} {
				if cond.v == "" {
					continue
				}
				if _, _, err := parseCondition(cond.v); err != nil {
					errs = append(errs, fieldError(pp.Child("conditions").Index(j).Child(cond.field), err.Error()+" (write e.g. <30B or >=4096)"))
				}
			}
		}
	}
	return errs
}

func samePriority(a, b *int32) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func priorityText(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

// PriorityConflicts lists the runtimes of the same scope (the cluster for a
// ClusterServingRuntime, the namespace for a ServingRuntime) that hold an
// enabled auto-select entry with the same priority as one of spec's, where
// both entries could match one model. Such a tie would leave the choice to
// creation time or name, which nobody asked for. Each error is at
// spec.supportedModelFormats[i].priority and names both runtimes and the
// entries. Disabled runtimes conflict with nothing.
func (x *Index) PriorityConflicts(kind, namespace, name string, spec *v1beta1.ServingRuntimeSpec) field.ErrorList {
	if spec == nil || (spec.Disabled != nil && *spec.Disabled) {
		return nil
	}
	scope := namespace
	if kind == KindClusterServingRuntime {
		scope = ""
	} else if namespace == "" {
		// A namespaced runtime always has a namespace; "" is the cluster's
		// scope key and must not be compared with cluster runtimes.
		return nil
	}
	self := compileRuntime(kind, scope, name, timeZero, spec)
	if self.sizeErr != "" {
		return nil // ValidateRuntimeSpec reports it
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	selfKey := objKey(scope, name)
	var out field.ErrorList
	formats := field.NewPath("spec", "supportedModelFormats")
	for i := range self.formats {
		a := &self.formats[i]
		if !a.autoSelect || a.priority == nil || a.err != "" || a.name == "" {
			continue
		}
		for _, o := range x.byFormat[formatKey(scope, a.name)] {
			if objKey(o.namespace, o.name) == selfKey || o.disabled || o.sizeErr != "" || !o.sizes.overlaps(self.sizes) || !shareProtocol(self.protocols, o.protocols) {
				continue
			}
			for j := range o.formats {
				b := &o.formats[j]
				if !b.autoSelect || b.priority == nil || *b.priority != *a.priority || b.err != "" || !entriesOverlap(a, b) {
					continue
				}
				out = append(out, fieldError(formats.Index(a.index).Child("priority"), "priority "+strconv.Itoa(int(*a.priority))+
					" for format "+a.display+" is also used by "+o.ref+" (supportedModelFormats["+strconv.Itoa(b.index)+"]), and both could serve the same model; give "+
					kind+"/"+name+" or "+o.ref+" a different priority"))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Field != out[j].Field {
			return out[i].Field < out[j].Field
		}
		return out[i].Detail < out[j].Detail
	})
	return out
}

// entriesOverlap: some model could match both entries. Names are already
// equal (same index bucket). An entry without a version, framework or
// architecture accepts any, so it overlaps with every value.
func entriesOverlap(a, b *formatEntry) bool {
	if a.name != b.name {
		return false
	}
	if a.version != nil && b.version != nil && !a.version.compatible(*b.version) {
		return false
	}
	if a.fwName != "" && b.fwName != "" {
		if a.fwName != b.fwName {
			return false
		}
		if a.fwVersion != nil && b.fwVersion != nil && !a.fwVersion.compatible(*b.fwVersion) {
			return false
		}
	}
	if a.arch != nil && b.arch != nil && *a.arch != *b.arch {
		return false
	}
	return a.quant == b.quant
}

func shareProtocol(a, b []v1beta1.ProtocolVersion) bool {
	for _, p := range a {
		for _, q := range b {
			if p == q {
				return true
			}
		}
	}
	return false
}
