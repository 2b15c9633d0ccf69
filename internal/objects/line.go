package objects

import (
	"strconv"
	"strings"

	yaml3 "sigs.k8s.io/yaml/goyaml.v3"
)

// LineOf is the line of the field at path (a field.Path string such as
// "spec.supportedModelFormats[0].priority") in document d, or of the
// deepest part of path the document has; the document's first line when
// none is found.
func (d *Doc) LineOf(path string) int {
	if d.Line == 0 {
		return 0
	}
	var root yaml3.Node
	if err := yaml3.Unmarshal(d.YAML, &root); err != nil || len(root.Content) == 0 {
		return d.Line
	}
	n, line := root.Content[0], 0
	for _, seg := range pathSegments(path) {
		next, at := child(n, seg)
		if next == nil {
			break
		}
		n, line = next, at
	}
	if line == 0 {
		return d.Line
	}
	return d.Line + line - 1
}

// pathSegments splits "a.b[0].c" into a, b, [0], c; a key in brackets
// (metadata.labels[app]) is a segment too.
func pathSegments(path string) []string {
	var out []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				out = append(out, part)
				break
			}
			if i > 0 {
				out = append(out, part[:i])
			}
			j := strings.IndexByte(part[i:], ']')
			if j < 0 {
				break
			}
			out = append(out, part[i:i+j+1])
			part = part[i+j+1:]
		}
	}
	return out
}

// child is the node seg names under n, and the line that names it (a
// mapping key's, or a sequence item's).
func child(n *yaml3.Node, seg string) (*yaml3.Node, int) {
	if strings.HasPrefix(seg, "[") {
		inner := strings.Trim(seg, "[]")
		if i, err := strconv.Atoi(inner); err == nil && n.Kind == yaml3.SequenceNode {
			if i >= 0 && i < len(n.Content) {
				return n.Content[i], n.Content[i].Line
			}
			return nil, 0
		}
		seg = inner
	}
	if n.Kind != yaml3.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == seg {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}
