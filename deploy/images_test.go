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

var (
	// berthImageRef finds references to berth's registry in text.
	berthImageRef = regexp.MustCompile(`ghcr\.io/berthdev/[a-z0-9-]+(:[A-Za-z0-9._-]+)?`)
	// versionImageCall finds version.Image("name") in Go code.
	versionImageCall = regexp.MustCompile(`version\.Image\("([^"]*)"\)`)
	// latestTag finds an image reference tagged latest.
	latestTag = regexp.MustCompile(`[a-z0-9./-]+:latest\b`)
)

// allowedForeign are the images not berth's that berth's own defaults may
// name, each with its reason. The webhook's --model-downloader-image
// default is still KServe's storage initializer (webhook/handlers:
// DefaultModelDownloaderImage) until it becomes
// version.Image("berth-downloader"); the manifests already pass
// berth-downloader.
var allowedForeign = map[string]string{
	"kserve/storage-initializer:v0.16.0": "the webhook's downloader flag default (handlers.DefaultModelDownloaderImage)",
}

// imageRoots are the folders whose manifests, chart values and command
// defaults may name berth's images.
var imageRoots = []string{".", "../cmd", "../webhook", "../reconcile", "../internal/devenv"}

// Every image of berth's that the manifests, the chart and the commands'
// defaults name is one `make images` builds, at version/VERSION: none is
// :latest, none is missing.
func TestImagesAreBuilt(t *testing.T) {
	built := map[string]bool{}
	for _, im := range images.Images {
		built[im.Ref(version.Registry, version.Version)] = true
	}
	found := 0
	walkImageSources(t, func(path, text string) {
		refs := berthImageRef.FindAllString(text, -1)
		if strings.HasSuffix(path, ".go") {
			for _, m := range versionImageCall.FindAllStringSubmatch(text, -1) {
				refs = append(refs, version.Image(m[1]))
			}
		}
		for _, ref := range refs {
			if !strings.Contains(ref, ":") {
				continue // a repository without a tag (Helm values, prose)
			}
			found++
			assert.True(t, built[ref], "%s names %s, which make images does not build (images: %v at %s)", path, ref, imageNames(), version.Version)
		}
		for _, ref := range latestTag.FindAllString(text, -1) {
			assert.Fail(t, "an image at :latest", "%s names %s: pin a version (berth's images: version.Image)", path, ref)
		}
	})
	assert.Greater(t, found, 5, "the manifests and commands name berth's images")
}

// The webhook's default downloader is berth-downloader, or one of the
// allowed foreign images while that switch has not landed.
func TestDownloaderDefault(t *testing.T) {
	data, err := os.ReadFile("../webhook/handlers/model.go")
	require.NoError(t, err)
	m := regexp.MustCompile(`DefaultModelDownloaderImage\s*=\s*(.*)`).FindStringSubmatch(string(data))
	require.NotNil(t, m, "webhook/handlers/model.go declares DefaultModelDownloaderImage")
	def := strings.TrimSpace(m[1])
	if def == `version.Image("berth-downloader")` {
		return
	}
	ref := strings.Trim(def, `"`)
	_, ok := allowedForeign[ref]
	assert.True(t, ok, "the downloader default %s is neither berth-downloader nor an allowed foreign image %v", def, allowedForeign)
}

// walkImageSources calls f with every manifest, chart file, doc and
// non-test Go file under imageRoots.
func walkImageSources(t *testing.T, f func(path, text string)) {
	t.Helper()
	for _, root := range imageRoots {
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
			f(path, string(data))
			return nil
		})
		require.NoError(t, err)
	}
}

func imageNames() []string {
	var names []string
	for _, im := range images.Images {
		names = append(names, im.Name)
	}
	return names
}
