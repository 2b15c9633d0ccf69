package pin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The pin's annotations, as api/v1beta1 names them: only this package
// (and api/v1beta1, which defines them) may refer to them.
var ownedConstants = map[string]bool{
	"AnnotationResolvedRuntime":                 true,
	"AnnotationResolvedAcceleratorClass":        true,
	"AnnotationResolvedDecoderAcceleratorClass": true,
	"AnnotationResolvedInputs":                  true,
	"AnnotationRepin":                           true,
	"AnnotationModelMetadataRevision":           true,
	"AnnotationRuntimeRevision":                 true,
}

// ownedPrefixes are the values of those annotations, spelled as literals.
var ownedPrefixes = []string{"ome.io/resolved-", "ome.io/repin", "ome.io/model-metadata-revision", "ome.io/runtime-revision"}

// namesForMessages are this package's annotation names: fine in a message,
// not as a key (reading or writing the annotation behind Read's back).
var namesForMessages = map[string]bool{
	"RuntimeAnnotation": true, "ClassAnnotation": true, "DecoderClassAnnotation": true, "InputsAnnotation": true,
	"RepinAnnotation": true, "ModelNudgeAnnotation": true, "RuntimeNudgeAnnotation": true,
}

const (
	modulePath = "github.com/berthdev/berth"
	apiPath    = modulePath + "/api/v1beta1"
	pinPath    = modulePath + "/pin"
)

// TestOnlyPinReadsThePin fails, naming file:line, where code outside this
// package reads or writes the pin's annotations other than through it.
func TestOnlyPinReadsThePin(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		dir := filepath.ToSlash(filepath.Dir(rel))
		if dir == "pin" || dir == "api/v1beta1" {
			return nil
		}
		found = append(found, ownershipViolations(t, path, rel)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
}

// ownershipViolations lists file:line: what, for one file.
func ownershipViolations(t *testing.T, path, rel string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", rel, err)
	}
	api, pins := importNames(f)
	var out []string
	report := func(n ast.Node, what string) {
		out = append(out, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+what)
	}
	isPinName := func(e ast.Expr) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := s.X.(*ast.Ident)
		return ok && pins[x.Name] && namesForMessages[s.Sel.Name]
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && api[x.Name] && ownedConstants[n.Sel.Name] {
				report(n, "refers to v1beta1."+n.Sel.Name+"; read and write it with package pin")
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				if v, err := strconv.Unquote(n.Value); err == nil {
					for _, p := range ownedPrefixes {
						if strings.HasPrefix(v, p) {
							report(n, "spells annotation "+strconv.Quote(v)+"; read and write it with package pin")
						}
					}
				}
			}
		case *ast.IndexExpr:
			if isPinName(n.Index) {
				report(n, "indexes by a pin annotation name; use pin.Read, pin.Write or pin.ReadNudge")
			}
		case *ast.KeyValueExpr:
			if isPinName(n.Key) {
				report(n, "uses a pin annotation name as a key; use pin.Write, Nudge.MergePatch or pin.RepinPatch")
			}
		}
		return true
	})
	return out
}

// importNames are the names a file imports api/v1beta1 and pin under.
func importNames(f *ast.File) (api, pins map[string]bool) {
	api, pins = map[string]bool{}, map[string]bool{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		switch p {
		case apiPath:
			api[name] = true
		case pinPath:
			pins[name] = true
		}
	}
	return api, pins
}

// moduleRoot walks up from this package's directory to go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if !strings.Contains(string(b), "module "+modulePath+"\n") {
				t.Fatalf("%s/go.mod is not module %s", dir, modulePath)
			}
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the pin package")
		}
		dir = parent
	}
}

// The check finds each way around package pin, and nothing in messages.
func TestOwnershipViolationsFindEachWayAround(t *testing.T) {
	src := `package x

import (
	api "github.com/berthdev/berth/api/v1beta1"
	p "github.com/berthdev/berth/pin"
)

func f(m map[string]string) string {
	_ = m[api.AnnotationResolvedRuntime]
	_ = m["ome.io/resolved-accelerator-class"]
	_ = m[p.ClassAnnotation]
	_ = map[string]string{p.ModelNudgeAnnotation: "x"}
	_ = "ome.io/repin"
	return "remove annotation " + p.RuntimeAnnotation + " or " + api.AnnotationAcceleratorClass
}
`
	path := filepath.Join(t.TempDir(), "x.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got := ownershipViolations(t, path, "x.go")
	want := []string{
		"x.go:9: refers to v1beta1.AnnotationResolvedRuntime; read and write it with package pin",
		"x.go:10: spells annotation \"ome.io/resolved-accelerator-class\"; read and write it with package pin",
		"x.go:11: indexes by a pin annotation name; use pin.Read, pin.Write or pin.ReadNudge",
		"x.go:12: uses a pin annotation name as a key; use pin.Write, Nudge.MergePatch or pin.RepinPatch",
		"x.go:13: spells annotation \"ome.io/repin\"; read and write it with package pin",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
