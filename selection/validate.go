package selection

import (
	"sort"
	"strconv"
	"strings"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateRuntimeSpec checks one runtime on its own. path prefixes field
// names (usually "spec"). Errors deny admission; warnings are returned to
// kubectl.
func ValidateRuntimeSpec(path string, spec *v1beta1.ServingRuntimeSpec) (errs []string, warnings []string) {
	if spec == nil {
		return []string{path + ": is empty; set supportedModelFormats"}, nil
	}
	// One format name keeps one priority across its versions, otherwise the
	// runtime's rank would depend on which version a model has (OME's Serving Runtime page).
	firstPriority := map[string]int{}
	for i := range spec.SupportedModelFormats {
		f := &spec.SupportedModelFormats[i]
		p := path + ".supportedModelFormats[" + strconv.Itoa(i) + "]"
		fe := compileFormat(i, f)
		if fe.name == "" {
			errs = append(errs, p+": no format name; set modelFormat.name (or the deprecated name)")
		}
		if fe.err != "" {
			errs = append(errs, path+strings.TrimPrefix(fe.err, "spec"))
		}
		if f.Priority != nil {
			if *f.Priority < 1 {
				errs = append(errs, p+".priority: must be at least 1, got "+strconv.Itoa(int(*f.Priority)))
			}
			if !fe.autoSelect {
				warnings = append(warnings, p+".priority: has no effect without autoSelect: true")
			}
		}
		if f.ModelFormat != nil && f.ModelFormat.Name != "" && f.Name != "" && !strings.EqualFold(f.ModelFormat.Name, f.Name) {
			warnings = append(warnings, p+": name "+quote(f.Name)+" differs from modelFormat.name "+quote(f.ModelFormat.Name)+"; modelFormat.name is used")
		}
		if fe.name == "" || !fe.autoSelect {
			continue
		}
		if j, ok := firstPriority[fe.name]; ok {
			other := &spec.SupportedModelFormats[j]
			if !samePriority(other.Priority, f.Priority) {
				errs = append(errs, p+".priority: format "+fe.display+" has priority "+priorityText(f.Priority)+" here but "+priorityText(other.Priority)+" in "+path+".supportedModelFormats["+strconv.Itoa(j)+"]; one format keeps one priority across versions")
			}
		} else {
			firstPriority[fe.name] = i
		}
	}
	if r := spec.ModelSizeRange; r != nil {
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
				errs = append(errs, path+".modelSizeRange."+b.field+": "+err.Error())
				continue
			}
			*b.dst = &n
		}
		if lo != nil && hi != nil && *lo > *hi {
			errs = append(errs, path+".modelSizeRange: min "+FormatSize(*lo)+" is greater than max "+FormatSize(*hi))
		}
	}
	errs = append(errs, validateAcceleratorRequirements(path+".acceleratorRequirements", spec.AcceleratorRequirements)...)
	return errs, warnings
}

func validateAcceleratorRequirements(path string, ar *v1beta1.AcceleratorRequirements) (errs []string) {
	if ar == nil {
		return nil
	}
	req := newRequirement()
	req.add(path+".requiredCapabilities", ar.RequiredCapabilities)
	errs = append(errs, req.errs...)
	for i, p := range ar.PreferenceOrder {
		pp := path + ".preferenceOrder[" + strconv.Itoa(i) + "]"
		if p.Class == "" {
			errs = append(errs, pp+".class: is empty; name an AcceleratorClass")
		}
		for j, c := range p.Conditions {
			for _, cond := range []struct{ field, v string }{{"modelSize", c.ModelSize}, {"requestSize", c.RequestSize}} {
				if cond.v == "" {
					continue
				}
				if _, _, err := parseCondition(cond.v); err != nil {
					errs = append(errs, pp+".conditions["+strconv.Itoa(j)+"]."+cond.field+": "+err.Error()+" (write e.g. <30B or >=4096)")
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
// creation time or name, which nobody asked for. Each line names both
// runtimes and the entries. Disabled runtimes conflict with nothing.
func (x *Index) PriorityConflicts(kind, namespace, name string, spec *v1beta1.ServingRuntimeSpec) []string {
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
	var out []string
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
				out = append(out, "spec.supportedModelFormats["+strconv.Itoa(a.index)+"].priority: priority "+strconv.Itoa(int(*a.priority))+
					" for format "+a.display+" is also used by "+o.ref+" (supportedModelFormats["+strconv.Itoa(b.index)+"]), and both could serve the same model; give "+
					kind+"/"+name+" or "+o.ref+" a different priority")
			}
		}
	}
	sort.Strings(out)
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
