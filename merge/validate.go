package merge

import (
	"encoding/json"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateRuntimeTemplates checks the strings berth renders in a runtime
// (renderedStrings: command and args items and env values, wherever the
// spec has them; probes and lifecycle hooks are not rendered) for template
// actions that look like berth's ({{.Field...}} or {{index ...}}) but that
// it would not render:
//
//  1. a closed action that is not one berth renders, such as
//     {{.Spec.Model}} or {{.Labels.team-name}} (field.Invalid without the
//     value; the detail quotes the action and lists the supported ones);
//  2. an action that is opened and never closed ({{.Name without }}),
//     field.Invalid with the whole string.
//
// Either would reach the engine literally, braces and all; better to say so
// when the runtime is applied. Other brace text (Jinja, shell) is not
// looked at. path is the spec's field (usually spec); errors are in field
// order.
func ValidateRuntimeTemplates(spec *v1beta1.ServingRuntimeSpec, path *field.Path) field.ErrorList {
	if spec == nil {
		return nil
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	var errs field.ErrorList
	renderedStrings(tree, path, func(p *field.Path, s string) {
		errs = append(errs, unsupportedActions(p, s)...)
		errs = append(errs, unclosedAction(p, s)...)
	})
	return errs
}

// notRendered are container fields whose strings berth never renders
// (renderContainer renders command, args and env values only).
var notRendered = map[string]bool{"livenessProbe": true, "readinessProbe": true, "startupProbe": true, "lifecycle": true}

// renderedStrings calls fn, in field order, for every string of a runtime
// spec's JSON tree that berth renders as a template: the items of command
// and args, and env values, of every container, runner and accelerator
// configuration. It is the one statement of which runtime strings are
// templates; renderContainer renders the same fields of each container.
func renderedStrings(node any, path *field.Path, fn func(p *field.Path, s string)) {
	switch v := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path.Child(k)
			switch {
			case notRendered[k]:
			case k == "command" || k == "args":
				list, _ := v[k].([]any)
				for i, item := range list {
					if s, ok := item.(string); ok {
						fn(p.Index(i), s)
					}
				}
			case k == "env":
				list, _ := v[k].([]any)
				for i, item := range list {
					e, _ := item.(map[string]any)
					if s, ok := e["value"].(string); ok {
						fn(p.Index(i).Child("value"), s)
					}
				}
			default:
				renderedStrings(v[k], p, fn)
			}
		}
	case []any:
		for i, item := range v {
			renderedStrings(item, path.Index(i), fn)
		}
	}
}

// berthLike reports whether an action's text reads like one of berth's:
// a field reference or an index call.
func berthLike(action string) bool {
	a := strings.TrimSpace(action)
	return strings.HasPrefix(a, ".") || strings.HasPrefix(a, "index ")
}

// unsupportedActions reports each closed berth-like action of s that
// RenderTemplate would leave literal.
func unsupportedActions(p *field.Path, s string) field.ErrorList {
	var errs field.ErrorList
	for _, action := range templateActions(s) {
		if _, ok := parseAction(action); ok || !berthLike(action) {
			continue
		}
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "template {{"+action+`}} is not one berth renders; use {{.Name}}, {{.Namespace}}, {{.Labels.key}}, {{.Annotations.key}} or {{index .Labels "key-with-dashes"}}`))
	}
	return errs
}

// unclosedAction reports a "{{" with no "}}" after it whose action is one
// berth would render (berthLike). Other brace text stays literal by design
// and is not reported.
func unclosedAction(p *field.Path, s string) field.ErrorList {
	rest := s
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			return nil
		}
		if end := strings.Index(rest[open+2:], "}}"); end >= 0 {
			rest = rest[open+2+end+2:]
			continue
		}
		// Nothing closes from here on: any berth-like action in the tail
		// is unterminated.
		tail := rest[open:]
		for i := 0; i < len(tail); {
			j := strings.Index(tail[i:], "{{")
			if j < 0 {
				return nil
			}
			if berthLike(tail[i+j+2:]) {
				return field.ErrorList{field.Invalid(p, s, "template action "+tail[i+j:]+" is not closed: berth would pass it to the engine literally; add }}")}
			}
			i += j + 2
		}
		return nil
	}
}

// templateActions returns the text between each "{{" and the next "}}".
func templateActions(s string) []string {
	var out []string
	for {
		open := strings.Index(s, "{{")
		if open < 0 {
			return out
		}
		end := strings.Index(s[open+2:], "}}")
		if end < 0 {
			return out
		}
		out = append(out, s[open+2:open+2+end])
		s = s[open+2+end+2:]
	}
}
