package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/internal/images"
	"github.com/berthdev/berth/version"
)

// berthImageRef finds references to berth's registry in text.
var berthImageRef = regexp.MustCompile(`ghcr\.io/berthdev/[a-z0-9-]+(:[A-Za-z0-9._-]+)?`)

// Every image of berth's that the manifests, the chart and the commands'
// defaults name is one `make images` builds, at version/VERSION: none is
// :latest, none is missing.
func TestImagesAreBuilt(t *testing.T) {
	built := map[string]bool{}
	for _, im := range images.Images {
		built[im.Ref(version.Registry, version.Version)] = true
	}
	var roots = []string{".", "../cmd", "../webhook", "../reconcile"}
	found := 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
				return nil
			}
			if ext := filepath.Ext(path); ext != ".yaml" && ext != ".go" && ext != ".md" && ext != ".json" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, ref := range berthImageRef.FindAllString(string(data), -1) {
				if !strings.Contains(ref, ":") {
					continue // a repository without a tag (Helm values, prose)
				}
				found++
				assert.True(t, built[ref], "%s names %s, which make images does not build (images: %v at %s)", path, ref, imageNames(), version.Version)
			}
			return nil
		})
		require.NoError(t, err)
	}
	assert.Greater(t, found, 3, "the manifests name berth's images")
}

func imageNames() []string {
	var names []string
	for _, im := range images.Images {
		names = append(names, im.Name)
	}
	return names
}
