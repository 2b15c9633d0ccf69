package merge

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateRuntimeTemplates checks every command, args and env value of a
// runtime for template actions that look like berth's ({{.Field...}} or
// {{index ...}}) but are not one it renders, such as {{.Spec.Model}} or
// {{.Labels.team-name}}. Those would stay literal in the pod and the engine
// would receive the braces; better to say so when the runtime is applied.
// Other brace text (Jinja, shell) is not looked at. Messages name the field.
func ValidateRuntimeTemplates(spec *v1beta1.ServingRuntimeSpec) []string {
	raw, err := json.Marshal(spec)
	if err != nil {
		return []string{fmt.Sprintf("spec: cannot encode runtime to check templates: %v", err)}
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return []string{fmt.Sprintf("spec: cannot decode runtime to check templates: %v", err)}
	}
	var errs []string
	walkTemplateStrings(tree, "spec", false, func(path, s string) {
		for _, action := range templateActions(s) {
			if _, ok := parseAction(action); ok {
				continue
			}
			a := strings.TrimSpace(action)
			if strings.HasPrefix(a, ".") || strings.HasPrefix(a, "index ") {
				errs = append(errs, fmt.Sprintf("%s: template {{%s}} is not one berth renders; use {{.Name}}, {{.Namespace}}, {{.Labels.key}}, {{.Annotations.key}} or {{index .Labels \"key-with-dashes\"}}", path, action))
			}
		}
	})
	sort.Strings(errs)
	return errs
}

// walkTemplateStrings calls fn for every string that is rendered as a
// template: items of command and args, and env values.
func walkTemplateStrings(node any, path string, rendered bool, fn func(path, s string)) {
	switch v := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			r := k == "command" || k == "args" || (k == "value" && strings.HasSuffix(path, "]") && strings.Contains(path, ".env["))
			walkTemplateStrings(v[k], path+"."+k, r, fn)
		}
	case []any:
		for i, item := range v {
			walkTemplateStrings(item, fmt.Sprintf("%s[%d]", path, i), rendered, fn)
		}
	case string:
		if rendered {
			fn(path, v)
		}
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
