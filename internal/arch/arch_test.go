package arch

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/berthdev/berth"

// graph maps each production package of the module (import path) to its
// direct imports. Test files, testdata and nested modules are left out.
func graph(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from %s: %v", root, err)
	}
	g := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "bin" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a module of its own (hack/…)
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := module
		if rel != "." {
			pkg += "/" + filepath.ToSlash(rel)
		}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			if !slices.Contains(g[pkg], p) {
				g[pkg] = append(g[pkg], p)
			}
		}
		if _, ok := g[pkg]; !ok {
			g[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// pathTo returns a chain of module packages from pkg to a package that
// imports something bad says is forbidden, or nil.
func pathTo(g map[string][]string, pkg string, bad func(string) bool) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if seen[p] {
			return nil
		}
		seen[p] = true
		for _, imp := range g[p] {
			if bad(imp) {
				return []string{p, imp}
			}
			if _, ours := g[imp]; ours {
				if rest := walk(imp); rest != nil {
					return append([]string{p}, rest...)
				}
			}
		}
		return nil
	}
	return walk(pkg)
}

func under(pkg, dir string) bool {
	full := module + "/" + dir
	return pkg == full || strings.HasPrefix(pkg, full+"/")
}

// clientLib says whether a package is an API client the pure cores may
// not reach: client-go, controller-runtime, and Kueue's packages, whose
// API types import controller-runtime (the graph holds only berth's own
// packages, so what they import in turn is named here).
func clientLib(p string) bool {
	for _, root := range []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "sigs.k8s.io/kueue"} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

func TestClientLib(t *testing.T) {
	for p, want := range map[string]bool{
		"k8s.io/client-go":                              true,
		"k8s.io/client-go/kubernetes":                   true,
		"sigs.k8s.io/controller-runtime/pkg/scheme":     true,
		"sigs.k8s.io/kueue/apis/kueue/v1beta1":          true,
		"k8s.io/apimachinery/pkg/apis/meta/v1":          false,
		"k8s.io/client-gofake":                          false,
		"sigs.k8s.io/controller-runtime-tools":          false,
		"sigs.k8s.io/scheduler-plugins/apis/scheduling": false,
	} {
		if got := clientLib(p); got != want {
			t.Errorf("clientLib(%s) = %v, want %v", p, got, want)
		}
	}
}

func TestPureCoresNeverReachClientGo(t *testing.T) {
	g := graph(t)
	cores := []string{"selection", "merge", "reconcile/plan", "pin"}
	clientGo := clientLib
	checked := 0
	for pkg := range g {
		for _, c := range cores {
			if !under(pkg, c) {
				continue
			}
			checked++
			if chain := pathTo(g, pkg, clientGo); chain != nil {
				t.Errorf("%s reaches client-go: %s", pkg, strings.Join(chain, " -> "))
			}
		}
	}
	if checked < 3 {
		t.Fatalf("found only %d core packages; the walk is broken", checked)
	}
}

// TestSelectionStandsOnTheAPIOnly: selection decides from the API types
// alone; everything else of berth's (merge, pin, the webhook) is above it.
func TestSelectionStandsOnTheAPIOnly(t *testing.T) {
	g := graph(t)
	for pkg, imps := range g {
		if !under(pkg, "selection") {
			continue
		}
		for _, imp := range imps {
			if strings.HasPrefix(imp, module+"/") && !under(imp, "api") && !under(imp, "selection") {
				t.Errorf("%s imports %s: selection may import only berth's api packages", pkg, imp)
			}
		}
	}
}

func TestOnlyItsCommandsUseTheLocalControlPlane(t *testing.T) {
	g := graph(t)
	allowed := []string{
		"internal/devenv",            // itself
		"cmd/berth",                  // berth up, berth demo
		"cmd/berth-reconcile-load",   // measures the reconciler on the local plane
		"cmd/berth-accelerator-load", // measures class discovery on the local plane
		"cmd/berth-admission-load",   // measures pod creates through the local plane's apiserver
		"e2e",                        // tests
	}
	devenv := func(p string) bool { return under(p, "internal/devenv") }
	for pkg, imps := range g {
		if slices.ContainsFunc(allowed, func(a string) bool { return under(pkg, a) }) {
			continue
		}
		for _, imp := range imps {
			if devenv(imp) {
				t.Errorf("%s imports %s: only berth up/demo, the load tools and tests may start the local control plane", pkg, imp)
			}
		}
	}
}

// TestControllersDoNotImportEachOther: a controller package under
// reconcile/ imports no other controller; the manager wires them, and
// reconcile/plan is shared. reconcile itself is only the index (doc.go):
// nothing imports it and it imports nothing.
func TestControllersDoNotImportEachOther(t *testing.T) {
	g := graph(t)
	var bad []string
	for pkg, imps := range g {
		if !under(pkg, "reconcile") || under(pkg, "reconcile/manager") {
			continue
		}
		for _, imp := range imps {
			if !under(imp, "reconcile") || under(imp, "reconcile/plan") || controllerOf(imp) == controllerOf(pkg) {
				continue
			}
			bad = append(bad, pkg+" -> "+imp)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("controller imports another controller (wire them in the manager): %s", b)
	}
}

// controllerOf names the controller a package under reconcile/ belongs to:
// its first path element ("" for the index package reconcile).
func controllerOf(p string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(p, module+"/reconcile"), "/")
	first, _, _ := strings.Cut(rest, "/")
	return first
}

func TestControllerOf(t *testing.T) {
	for in, want := range map[string]string{
		module + "/reconcile":                 "",
		module + "/reconcile/policy":          "policy",
		module + "/reconcile/servinggroups/x": "servinggroups",
		module + "/reconcile/classsync/x":     "classsync",
	} {
		if got := controllerOf(in); got != want {
			t.Errorf("controllerOf(%s) = %q, want %q", in, got, want)
		}
	}
}

// TestWalkFindsIndirectImports: the walk follows module packages, so a
// core that reaches client-go through a helper is caught.
func TestWalkFindsIndirectImports(t *testing.T) {
	g := map[string][]string{
		module + "/selection": {"fmt", module + "/helper"},
		module + "/helper":    {module + "/deeper"},
		module + "/deeper":    {"k8s.io/client-go/kubernetes"},
		module + "/clean":     {"k8s.io/apimachinery/pkg/util/validation/field"},
	}
	bad := func(p string) bool { return strings.HasPrefix(p, "k8s.io/client-go") }
	want := []string{module + "/selection", module + "/helper", module + "/deeper", "k8s.io/client-go/kubernetes"}
	if got := pathTo(g, module+"/selection", bad); !slices.Equal(got, want) {
		t.Errorf("pathTo(selection) = %v, want %v", got, want)
	}
	if got := pathTo(g, module+"/clean", bad); got != nil {
		t.Errorf("pathTo(clean) = %v, want nil", got)
	}
}
