package wrappers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSupport is the tree of test-only packages; production code never
// imports from it.
const testSupport = "github.com/berthdev/berth/internal/testing"

// productionImporters walks the module at root and lists each non-test Go
// file outside internal/testing that imports a package of testSupport,
// with the import, and how many non-test files it read. Nested modules
// and testdata are skipped, as go build skips them.
func productionImporters(t *testing.T, root string) (bad []string, read int) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || rel == "internal/testing" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		read++
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			if p == testSupport || strings.HasPrefix(p, testSupport+"/") {
				bad = append(bad, rel+" imports "+p)
			}
		}
		return nil
	})
	require.NoError(t, err)
	return bad, read
}

// No production file imports the test builders: they may panic on a bad
// literal and have no place in a binary.
func TestNoProductionImports(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "module root expected at %s", root)
	bad, read := productionImporters(t, root)
	assert.Empty(t, bad, "production code imports test support")
	assert.Greater(t, read, 100, "the walk read the module's production files")
}

// The check sees an import from a production file, and leaves test files
// and internal/testing itself alone.
func TestProductionImportersFindsOne(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	imp := "import _ \"" + testSupport + "/wrappers\"\n"
	write("go.mod", "module github.com/berthdev/berth\n")
	write("merge/merge.go", "package merge\n"+imp)
	write("merge/merge_test.go", "package merge\n"+imp)
	write("internal/testing/other/other.go", "package other\n"+imp)
	write("merge/testdata/x.go", "package x\n"+imp)
	bad, read := productionImporters(t, root)
	assert.Equal(t, []string{"merge/merge.go imports " + testSupport + "/wrappers"}, bad)
	assert.Equal(t, 1, read)
}
