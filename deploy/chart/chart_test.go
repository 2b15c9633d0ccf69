package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	deployDir = ".."
	chartDir  = "berth"
	release   = "berth"
)

// bin finds a tool `make deps` builds into bin/<versioned>/, or on PATH.
func bin(t *testing.T, versioned, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "bin", versioned, name))
	require.NoError(t, err)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	p, err = exec.LookPath(name)
	require.NoError(t, err, "these tests need %s: run `make deps`", filepath.Join("bin", versioned, name))
	return p
}

func kubectlBin(t *testing.T) string { return bin(t, "k8s-v1.34.4", "kubectl") }
func helmBin(t *testing.T) string    { return bin(t, "helm-v3.22.0", "helm") }

// kustomize renders deploy/<dir> once per test binary (a build of the
// default install is 6 MB of CRDs).
func kustomize(t *testing.T, dir string) []Object {
	t.Helper()
	kustomizeMu.Lock()
	once, ok := kustomizeOnce[dir]
	if !ok {
		once = &kustomizeResult{}
		kustomizeOnce[dir] = once
	}
	kustomizeMu.Unlock()
	once.once.Do(func() { once.objs, once.err = Kustomize(kubectlBin(t), filepath.Join(deployDir, dir)) })
	require.NoError(t, once.err)
	require.NotEmpty(t, once.objs, dir)
	return once.objs
}

type kustomizeResult struct {
	once sync.Once
	objs []Object
	err  error
}

var (
	kustomizeMu   sync.Mutex
	kustomizeOnce = map[string]*kustomizeResult{}
)

// helmTemplate runs `helm template` of the chart with args.
func helmTemplate(t *testing.T, args ...string) ([]Object, error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(helmBin(t), append([]string{"template", release, chartDir}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return Split(out)
}

func mustTemplate(t *testing.T, args ...string) []Object {
	t.Helper()
	objs, err := helmTemplate(t, args...)
	require.NoError(t, err)
	return objs
}

// assertSameObjects compares two renders object by object: the same keys,
// and each object equal as decoded YAML (printed: the first difference).
func assertSameObjects(t *testing.T, want, got []Object) {
	t.Helper()
	wantKeys, gotKeys := sortedKeys(want), sortedKeys(got)
	assert.Empty(t, without(wantKeys, gotKeys), "objects kustomize renders and the chart does not")
	assert.Empty(t, without(gotKeys, wantKeys), "objects the chart renders and kustomize does not")
	for _, w := range want {
		g, ok := find(got, w.Key())
		if !ok {
			continue
		}
		if d := firstDiff(w.Obj, g.Obj, ""); d != "" {
			t.Errorf("%s differs between kustomize and the chart: %s", w, d)
		}
	}
	assert.Len(t, got, len(gotKeys), "the chart renders an object twice")
}

func sortedKeys(objs []Object) []string {
	var ks []string
	for _, o := range objs {
		if !slices.Contains(ks, o.Key()) {
			ks = append(ks, o.Key())
		}
	}
	sort.Strings(ks)
	return ks
}

func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// firstDiff names the first path where a and b differ, "" when equal.
func firstDiff(a, b any, path string) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %T vs %T", path, a, b)
		}
		ks := make([]string, 0, len(x)+len(y))
		for k := range x {
			ks = append(ks, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		for _, k := range ks {
			if d := firstDiff(x[k], y[k], path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s: %v vs %v", path, short(a), short(b))
		}
		for i := range x {
			if d := firstDiff(x[i], y[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("%s: %v vs %v", path, short(a), short(b))
	}
	return ""
}

func short(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// TestDefaultValuesRenderTheDefaultInstall: `helm template` with the
// default values (and the CRDs) is `kubectl kustomize deploy`, object by
// object: the chart cannot drift from the manifests.
func TestDefaultValuesRenderTheDefaultInstall(t *testing.T) {
	t.Parallel()
	assertSameObjects(t, kustomize(t, defaultInstall), mustTemplate(t, "--include-crds"))
}

// TestRuntimesOffRendersTheOMECatalogueOverlay: runtimes.enabled=false is
// overlays/ome-catalogue, the install without the berth-runtimes component.
func TestRuntimesOffRendersTheOMECatalogueOverlay(t *testing.T) {
	t.Parallel()
	assertSameObjects(t, kustomize(t, withoutRuntime), mustTemplate(t, "--include-crds", "--set", "runtimes.enabled=false"))
}

// TestCertManagerModeRendersTheCertManagerOverlay: certificates.mode
// cert-manager is overlays/cert-manager (its Issuers and Certificates, the
// Secret mount, cainjector's annotation), here without CRDs and catalogue.
func TestCertManagerModeRendersTheCertManagerOverlay(t *testing.T) {
	t.Parallel()
	got := mustTemplate(t, "--set", "certificates.mode=cert-manager,runtimes.enabled=false,acceleratorClasses.enabled=false")
	assertSameObjects(t, kustomize(t, certManager), got)
}

// TestChartIsGenerated: the chart's generated files are what Generate
// makes of the manifests today (run `make chart` when this fails), and no
// stale generated file is left.
func TestChartIsGenerated(t *testing.T) {
	t.Parallel()
	src := sources{def: kustomize(t, defaultInstall), noRuntimes: kustomize(t, withoutRuntime),
		self: kustomize(t, selfManaged), certMgr: kustomize(t, certManager)}
	files, err := render(src)
	require.NoError(t, err)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(chartDir, name))
		if assert.NoError(t, err, "run `make chart`") {
			assert.True(t, bytes.Equal(want, got), "%s is stale: run `make chart`", name)
		}
	}
	for _, pattern := range generatedFiles {
		onDisk, err := filepath.Glob(filepath.Join(chartDir, pattern))
		require.NoError(t, err)
		for _, p := range onDisk {
			rel, err := filepath.Rel(chartDir, p)
			require.NoError(t, err)
			assert.Contains(t, files, filepath.ToSlash(rel), "%s is not generated any more: run `make chart`", rel)
		}
	}
	assert.Contains(t, files, "crds/servingpolicies.policy.berth.dev.json", "policy.berth.dev's CRD is in the chart")
}
