// Package objects loads berth's objects from YAML or JSON files and
// directories (recursively, multi-document, kustomization.yaml skipped)
// and from a cluster (read-only lists), into one Set that feeds a
// selection.Index exactly as the webhook's cache does (webhook/cache): the
// same Upsert calls, nodes and pods reduced by selection.NodeInfoOf and
// selection.PodAcceleratorRequests. `berth explain`, `render` and `lint` read
// through it.
//
// Every object remembers the file and line its document starts at, so
// what is wrong with it can be said as file:line.
package objects

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Source is where an object was read: file and the line its document
// starts at (1-based), or "cluster" and 0.
type Source struct {
	File string
	Line int
}

func (s Source) String() string {
	if s.Line == 0 {
		return s.File
	}
	return fmt.Sprintf("%s:%d", s.File, s.Line)
}

// Doc is one document of a file.
type Doc struct {
	Source
	APIVersion, Kind, Namespace, Name string
	// YAML is the document's text; Obj the typed object (nil for kinds
	// berth does not read).
	YAML []byte
	Obj  any
}

// Ref is Kind/name or Kind/namespace/name.
func (d *Doc) Ref() string {
	if d.Namespace == "" {
		return d.Kind + "/" + d.Name
	}
	return d.Kind + "/" + d.Namespace + "/" + d.Name
}

// Problem is something wrong with a document: it could not be read or
// decoded strictly.
type Problem struct {
	Source
	Message string
}

func (p Problem) String() string { return p.Source.String() + ": " + p.Message }

// Set is every object read, by kind, in reading order.
type Set struct {
	Docs                   []*Doc
	ServingRuntimes        []*v1beta1.ServingRuntime
	ClusterServingRuntimes []*v1beta1.ClusterServingRuntime
	BaseModels             []*v1beta1.BaseModel
	ClusterBaseModels      []*v1beta1.ClusterBaseModel
	AcceleratorClasses     []*v1beta1.AcceleratorClass
	Profiles               []*v1beta1.ClusterEngineRuntimeProfile
	InferenceServices      []*v1beta1.InferenceService
	ServingPolicies        []*policyv1alpha1.ServingPolicy
	Nodes                  []*corev1.Node
	Pods                   []*corev1.Pod
	Namespaces             []*corev1.Namespace
	// Problems are documents that could not be decoded, strictly, into
	// their kind's Go type.
	Problems []Problem
}

// LoadPaths reads every file named, and every .yaml, .yml and .json file
// under every directory named (recursively; kustomization.yaml and Helm
// charts, directories with a Chart.yaml, skipped; a list document, such as
// a kustomize JSON patch, is no object and skipped too).
// An unreadable path is an error; a document that does not decode is a
// Problem of the set.
func LoadPaths(paths ...string) (*Set, error) {
	s := &Set{}
	for _, p := range paths {
		files, err := filesUnder(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			s.AddFile(f, data)
		}
	}
	return s, nil
}

// filesUnder is path itself when it is a file, else the manifest files
// under it in lexical order.
func filesUnder(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && isChart(p) {
				return filepath.SkipDir // Helm templates are not manifests until rendered
			}
			return nil
		}
		switch base := strings.ToLower(d.Name()); {
		case base == "kustomization.yaml" || base == "kustomization.yml":
		case strings.HasSuffix(base, ".yaml"), strings.HasSuffix(base, ".yml"), strings.HasSuffix(base, ".json"):
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// isChart says whether dir is a Helm chart (holds Chart.yaml).
func isChart(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "Chart.yaml"))
	return err == nil
}

// AddFile adds every document of one file's content.
func (s *Set) AddFile(file string, data []byte) {
	for _, d := range splitDocs(data) {
		s.addDoc(file, d.line, d.text)
	}
}

type rawDoc struct {
	line int
	text []byte
}

// splitDocs splits multi-document YAML at "---" lines, remembering the
// line each document starts at. Documents of only comments are dropped.
func splitDocs(data []byte) []rawDoc {
	var out []rawDoc
	var cur bytes.Buffer
	start, n := 1, 0
	flush := func(next int) {
		if hasContent(cur.Bytes()) {
			out = append(out, rawDoc{line: start, text: bytes.Clone(cur.Bytes())})
		}
		cur.Reset()
		start = next
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "---" || strings.HasPrefix(line, "--- ") {
			flush(n + 1)
			continue
		}
		if cur.Len() == 0 && !hasContent([]byte(line)) {
			start = n + 1 // the document starts at its first line of content
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	flush(n + 1)
	return out
}

// firstContent is the first line that is neither blank nor a comment.
func firstContent(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") {
			return l
		}
	}
	return ""
}

func hasContent(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []any `json:"items"`
}

func (s *Set) addDoc(file string, line int, text []byte) {
	src := Source{File: file, Line: line}
	var h header
	if t := strings.TrimSpace(firstContent(text)); strings.HasPrefix(t, "- ") || t == "-" || strings.HasPrefix(t, "[") {
		return // a list, not an object: a kustomize JSON patch
	}
	if err := yaml.Unmarshal(text, &h); err != nil {
		s.Problems = append(s.Problems, Problem{src, "not YAML: " + err.Error()})
		return
	}
	if strings.HasSuffix(h.Kind, "List") && h.Items != nil {
		for _, it := range h.Items {
			b, err := yaml.Marshal(it)
			if err != nil {
				s.Problems = append(s.Problems, Problem{src, err.Error()})
				continue
			}
			s.addDoc(file, line, b)
		}
		return
	}
	d := &Doc{Source: src, APIVersion: h.APIVersion, Kind: h.Kind, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name, YAML: text}
	obj, err := s.decode(d)
	if err != nil {
		off, msg := locate(text, err)
		s.Problems = append(s.Problems, Problem{Source{file, line + off}, fmt.Sprintf("%s/%s: %s", h.Kind, h.Metadata.Name, msg)})
		return
	}
	d.Obj = obj
	s.Docs = append(s.Docs, d)
}

// decode decodes a document strictly into its kind's type and files it.
func (s *Set) decode(d *Doc) (any, error) {
	group, _, _ := strings.Cut(d.APIVersion, "/")
	switch {
	case d.APIVersion == v1beta1.SchemeGroupVersion.String():
		return s.decodeBerth(d)
	case d.APIVersion == policyv1alpha1.SchemeGroupVersion.String() && d.Kind == "ServingPolicy":
		return into(d, &s.ServingPolicies)
	case d.APIVersion == "v1" && d.Kind == "Node":
		return into(d, &s.Nodes)
	case d.APIVersion == "v1" && d.Kind == "Pod":
		return into(d, &s.Pods)
	case d.APIVersion == "v1" && d.Kind == "Namespace":
		return into(d, &s.Namespaces)
	case group == v1beta1.SchemeGroupVersion.Group:
		return nil, fmt.Errorf("apiVersion %s is not served; berth serves %s", d.APIVersion, v1beta1.SchemeGroupVersion)
	}
	return nil, nil // another kind: not berth's to read
}

func (s *Set) decodeBerth(d *Doc) (any, error) {
	switch d.Kind {
	case "ServingRuntime":
		return into(d, &s.ServingRuntimes)
	case "ClusterServingRuntime":
		return into(d, &s.ClusterServingRuntimes)
	case "BaseModel":
		return into(d, &s.BaseModels)
	case "ClusterBaseModel":
		return into(d, &s.ClusterBaseModels)
	case "AcceleratorClass":
		return into(d, &s.AcceleratorClasses)
	case "ClusterEngineRuntimeProfile":
		return into(d, &s.Profiles)
	case "InferenceService":
		return into(d, &s.InferenceServices)
	}
	return nil, fmt.Errorf("kind %s is not a kind of %s", d.Kind, v1beta1.SchemeGroupVersion)
}

// into decodes d strictly into a new T and appends it to list.
func into[T any](d *Doc, list *[]*T) (any, error) {
	obj := new(T)
	if err := yaml.UnmarshalStrict(d.YAML, obj); err != nil {
		return nil, err
	}
	*list = append(*list, obj)
	return obj, nil
}

// Find is the document of kind and name (namespace "" matches any).
func (s *Set) Find(kind, namespace, name string) *Doc {
	for _, d := range s.Docs {
		if d.Kind == kind && d.Name == name && (namespace == "" || d.Namespace == namespace) {
			return d
		}
	}
	return nil
}

// locate finds the line, relative to the document's first, of the field a
// strict decoding error names ("unknown field \"x\"", "duplicate field"),
// and shortens the message to what a person needs.
func locate(text []byte, err error) (int, string) {
	msg := err.Error()
	for _, p := range []string{"error unmarshaling JSON: while decoding JSON: ", "json: ", "error converting YAML to JSON: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	_, rest, ok := strings.Cut(msg, "field \"")
	if !ok {
		return 0, msg
	}
	name, _, _ := strings.Cut(rest, "\"")
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	for i, l := range strings.Split(string(text), "\n") {
		t := strings.TrimLeft(strings.TrimSpace(l), "- ")
		if strings.HasPrefix(t, name+":") || strings.HasPrefix(t, "\""+name+"\":") {
			return i, msg
		}
	}
	return 0, msg
}

// Merge is one set holding every object of sets, in order. The objects
// are shared, not copied.
func Merge(sets ...*Set) *Set {
	out := &Set{}
	for _, s := range sets {
		out.Docs = append(out.Docs, s.Docs...)
		out.ServingRuntimes = append(out.ServingRuntimes, s.ServingRuntimes...)
		out.ClusterServingRuntimes = append(out.ClusterServingRuntimes, s.ClusterServingRuntimes...)
		out.BaseModels = append(out.BaseModels, s.BaseModels...)
		out.ClusterBaseModels = append(out.ClusterBaseModels, s.ClusterBaseModels...)
		out.AcceleratorClasses = append(out.AcceleratorClasses, s.AcceleratorClasses...)
		out.Profiles = append(out.Profiles, s.Profiles...)
		out.InferenceServices = append(out.InferenceServices, s.InferenceServices...)
		out.ServingPolicies = append(out.ServingPolicies, s.ServingPolicies...)
		out.Nodes = append(out.Nodes, s.Nodes...)
		out.Pods = append(out.Pods, s.Pods...)
		out.Namespaces = append(out.Namespaces, s.Namespaces...)
		out.Problems = append(out.Problems, s.Problems...)
	}
	return out
}

// DefaultNamespace puts the namespaced objects that name no namespace in
// ns, as `kubectl apply -n ns` would.
func (s *Set) DefaultNamespace(ns string) {
	for _, d := range s.Docs {
		if d.Namespace != "" {
			continue
		}
		switch o := d.Obj.(type) {
		case *v1beta1.ServingRuntime:
			o.Namespace, d.Namespace = ns, ns
		case *v1beta1.BaseModel:
			o.Namespace, d.Namespace = ns, ns
		case *v1beta1.InferenceService:
			o.Namespace, d.Namespace = ns, ns
		case *corev1.Pod:
			o.Namespace, d.Namespace = ns, ns
		}
	}
}
