package crddocs

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Prune removes descriptions from the schema (an openAPIV3Schema decoded
// into maps and slices) below every Go type not declared in a package whose
// import path starts with ownModule. t is the Go type the schema was
// generated from. The schema is changed in place.
func Prune(schema map[string]any, t reflect.Type, ownModule string) error {
	w := walker{own: ownModule}
	return w.walk(schema, t, "")
}

type walker struct{ own string }

// foreign reports whether t is a named type declared outside berth's module.
// Builtin and unnamed types (string, []T, map[K]V) have no package path.
func (w walker) foreign(t reflect.Type) bool {
	p := t.PkgPath()
	return p != "" && p != w.own && !strings.HasPrefix(p, w.own+"/")
}

func (w walker) walk(node map[string]any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if w.foreign(t) {
		stripBelow(node)
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return w.walkStruct(node, t, path)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string
		}
		return w.walkElem(node, "items", t.Elem(), path+"[]")
	case reflect.Map:
		return w.walkElem(node, "additionalProperties", t.Elem(), path+"{}")
	default:
		return nil
	}
}

// walkElem descends into the items or additionalProperties of a list or
// map. The element's own description is the Go type's doc, so a foreign
// element loses it as well.
func (w walker) walkElem(node map[string]any, key string, elem reflect.Type, path string) error {
	sub, ok := node[key].(map[string]any)
	if !ok {
		return nil
	}
	e := elem
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	if w.foreign(e) {
		delete(sub, "description")
		stripBelow(sub)
		return nil
	}
	return w.walk(sub, elem, path)
}

func (w walker) walkStruct(node map[string]any, t reflect.Type, path string) error {
	props, _ := node["properties"].(map[string]any)
	if len(props) == 0 {
		return nil
	}
	fields := map[string]field{}
	w.jsonFields(t, false, fields)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p, ok := props[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s.%s: schema property is not an object", path, name)
		}
		f, ok := fields[name]
		if !ok {
			return fmt.Errorf("%s.%s: schema property has no json field in Go type %s", path, name, t)
		}
		if f.foreignParent {
			// A field of a foreign struct inlined into a berth type
			// (metav1.TypeMeta's apiVersion and kind): keep its own line,
			// drop everything below it.
			stripBelow(p)
			continue
		}
		if err := w.walk(p, f.typ, path+"."+name); err != nil {
			return err
		}
	}
	return nil
}

type field struct {
	typ           reflect.Type
	foreignParent bool
}

// jsonFields lists t's fields by json name as encoding/json sees them:
// embedded structs without a name (or with ",inline") are flattened, "-"
// and unexported fields are left out.
func (w walker) jsonFields(t reflect.Type, foreignParent bool, out map[string]field) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := sf.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			w.jsonFields(ft, foreignParent || w.foreign(ft), out)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = field{typ: sf.Type, foreignParent: foreignParent}
	}
}

// schemaKeys are the keywords whose values are schemas or lists of schemas.
var schemaKeys = []string{"items", "additionalProperties", "not"}
var schemaListKeys = []string{"allOf", "anyOf", "oneOf"}

// stripBelow deletes the description of every schema under node, keeping
// node's own. It follows only schema keywords, so a property that happens to
// be named "description" survives.
func stripBelow(node map[string]any) {
	if props, ok := node["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				strip(m)
			}
		}
	}
	for _, k := range schemaKeys {
		if m, ok := node[k].(map[string]any); ok {
			strip(m)
		}
	}
	for _, k := range schemaListKeys {
		if l, ok := node[k].([]any); ok {
			for _, s := range l {
				if m, ok := s.(map[string]any); ok {
					strip(m)
				}
			}
		}
	}
}

func strip(node map[string]any) {
	delete(node, "description")
	stripBelow(node)
}

// TypeOf finds the Go type of a kind by group, version and kind.
type TypeOf func(group, version, kind string) (reflect.Type, error)

// PruneCRD prunes the openAPIV3Schema of every version of a
// CustomResourceDefinition decoded into maps and slices.
func PruneCRD(crd map[string]any, typeOf TypeOf, ownModule string) error {
	spec, _ := crd["spec"].(map[string]any)
	group, _ := spec["group"].(string)
	names, _ := spec["names"].(map[string]any)
	kind, _ := names["kind"].(string)
	versions, _ := spec["versions"].([]any)
	if group == "" || kind == "" || len(versions) == 0 {
		return fmt.Errorf("not a CustomResourceDefinition with a group, a kind and versions")
	}
	for _, v := range versions {
		ver, _ := v.(map[string]any)
		name, _ := ver["name"].(string)
		s, _ := ver["schema"].(map[string]any)
		schema, ok := s["openAPIV3Schema"].(map[string]any)
		if !ok {
			return fmt.Errorf("%s/%s %s: no openAPIV3Schema", group, name, kind)
		}
		t, err := typeOf(group, name, kind)
		if err != nil {
			return fmt.Errorf("%s/%s %s: %w", group, name, kind, err)
		}
		if err := Prune(schema, t, ownModule); err != nil {
			return fmt.Errorf("%s/%s %s: %w", group, name, kind, err)
		}
	}
	return nil
}
