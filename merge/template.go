package merge

import (
	"fmt"
	"strconv"
	"strings"
)

// TemplateData is what runtime strings may refer to: the InferenceService's
// name, namespace, labels and annotations, and the pod's pairing. Nothing
// else is exposed, so a template can never read a spec field that is not
// part of the revision.
type TemplateData struct {
	Name        string
	Namespace   string
	Labels      map[string]string
	Annotations map[string]string
	// Pairing is the pod's ome.io/pairing label (GroupIdentity.Pairing);
	// "" for a pod without one. Revision composes with "", so the pairing
	// a router is rendered for never changes its revision.
	Pairing string
}

// object names the InferenceService in error messages.
func (d TemplateData) object() string {
	if d.Namespace == "" {
		return "InferenceService " + d.Name
	}
	return "InferenceService " + d.Namespace + "/" + d.Name
}

// RenderTemplate replaces the supported template actions in s and leaves
// every other brace text literal. It works on one string at a time and never
// escapes anything: KServe and OME run text/template (or html/template) over
// the JSON of a whole container, which breaks quoted operands (KServe #3851),
// HTML-escapes values and chokes on Jinja chat templates. Supported actions,
// with optional spaces inside the braces:
//
//	{{.Name}} {{.Namespace}} {{.Pairing}} {{.Labels.k}} {{.Annotations.k}}
//	{{index .Labels "k"}} {{index .Annotations "k"}}
//
// {{.Pairing}} is the pod's pairing (TemplateData.Pairing), "" when it has
// none: a prefill/decode runtime's router selects the engine and decoder
// pods of its own pairing with ome.io/pairing={{.Pairing}}.
//
// A supported action whose key is missing is an error (never "<no value>").
func RenderTemplate(s string, data TemplateData) (string, error) {
	out, _, err := render(s, data, false)
	return out, err
}

// renderKServe renders s as KServe renders the strings of a KServe-shaped
// runtime's containers (html/template over the service's metadata): a
// label or annotation the service lacks renders as "". missing lists each
// such reference, in order, as the error RenderTemplate would return.
func renderKServe(s string, data TemplateData) (out string, missing []*MissingKeyError) {
	out, missing, _ = render(s, data, true)
	return out, missing
}

// MissingKeyError is a template action whose label or annotation the
// service does not have.
type MissingKeyError struct {
	ref    actionRef
	object string // "InferenceService ns/name"
}

// Error says which key is missing where, and the fix.
func (e *MissingKeyError) Error() string {
	return e.what() + "; add the " + e.kind() + " or remove the reference"
}

func (e *MissingKeyError) what() string {
	return fmt.Sprintf("template key %s not found on %s", e.ref.String(), e.object)
}

// kind is "label" or "annotation".
func (e *MissingKeyError) kind() string {
	return strings.ToLower(strings.TrimSuffix(e.ref.field, "s"))
}

// render replaces the supported actions in s; with emptyMissing a missing
// key renders as "" and is listed, else it is the error.
func render(s string, data TemplateData, emptyMissing bool) (string, []*MissingKeyError, error) {
	if !strings.Contains(s, "{{") {
		return s, nil, nil
	}
	var missing []*MissingKeyError
	var b strings.Builder
	b.Grow(len(s))
	rest := s
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			b.WriteString(rest)
			return b.String(), missing, nil
		}
		end := strings.Index(rest[open+2:], "}}")
		if end < 0 {
			b.WriteString(rest)
			return b.String(), missing, nil
		}
		action := rest[open+2 : open+2+end]
		value, ok, err := evalAction(action, data)
		if err != nil {
			if !emptyMissing {
				return "", nil, err
			}
			missing = append(missing, err)
			value = ""
		}
		if !ok {
			// Not ours (Jinja, shell, Go templates we do not support): keep
			// one brace literally and scan on from the next, so that a
			// supported action inside literal text ("{{{.Name}}", "{{ {{.Name}} }}")
			// is still found.
			b.WriteString(rest[:open+1])
			rest = rest[open+1:]
			continue
		}
		b.WriteString(rest[:open])
		b.WriteString(value)
		rest = rest[open+2+end+2:]
	}
}

// TemplateKeys lists the label and annotation keys s refers to, as
// "Labels.k" / "Annotations.k", in order of appearance.
func TemplateKeys(s string) []string {
	var keys []string
	rest := s
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			return keys
		}
		end := strings.Index(rest[open+2:], "}}")
		if end < 0 {
			return keys
		}
		if ref, ok := parseAction(rest[open+2 : open+2+end]); ok && ref.field != "" && !selfField(ref.field) {
			keys = append(keys, ref.field+"."+ref.key)
			rest = rest[open+2+end+2:]
			continue
		}
		rest = rest[open+1:]
	}
}

type actionRef struct {
	field string // Name, Namespace, Pairing, Labels, Annotations
	key   string // for Labels and Annotations
}

// selfField: a field that is a value of its own, not a map of keys.
func selfField(f string) bool { return f == "Name" || f == "Namespace" || f == "Pairing" }

// String prints the reference the way a user would write it.
func (r actionRef) String() string {
	switch {
	case r.key == "" && selfField(r.field):
		return "." + r.field
	case isIdentifier(r.key):
		return "." + r.field + "." + r.key
	default:
		return "index ." + r.field + " " + strconv.Quote(r.key)
	}
}

// parseAction recognises the supported actions; ok is false for any other text.
func parseAction(action string) (actionRef, bool) {
	a := strings.TrimSpace(action)
	switch a {
	case ".Name":
		return actionRef{field: "Name"}, true
	case ".Namespace":
		return actionRef{field: "Namespace"}, true
	case ".Pairing":
		return actionRef{field: "Pairing"}, true
	}
	for _, field := range []string{"Labels", "Annotations"} {
		if key, found := strings.CutPrefix(a, "."+field+"."); found && isIdentifier(key) {
			return actionRef{field: field, key: key}, true
		}
		if rest, found := strings.CutPrefix(a, "index ."+field+" "); found {
			key, err := strconv.Unquote(strings.TrimSpace(rest))
			if err == nil {
				return actionRef{field: field, key: key}, true
			}
		}
	}
	return actionRef{}, false
}

// evalAction renders a supported action; ok is false when action is not one.
func evalAction(action string, data TemplateData) (string, bool, *MissingKeyError) {
	ref, ok := parseAction(action)
	if !ok {
		return "", false, nil
	}
	var m map[string]string
	switch ref.field {
	case "Name":
		return data.Name, true, nil
	case "Namespace":
		return data.Namespace, true, nil
	case "Pairing":
		return data.Pairing, true, nil
	case "Labels":
		m = data.Labels
	default:
		m = data.Annotations
	}
	v, found := m[ref.key]
	if !found {
		return "", true, &MissingKeyError{ref: ref, object: data.object()}
	}
	return v, true, nil
}

// isIdentifier reports whether k can follow a dot in a Go template field
// chain: letters, digits and underscores only. Keys with '-', '.' or '/'
// need the index form.
func isIdentifier(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
