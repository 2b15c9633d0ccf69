package images

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/berthdev/berth/version"
)

// Source is berth's repository, for the images' source label.
const Source = "https://github.com/berthdev/berth"

// Image is one of berth's images: which program it carries, under which
// names, and how it starts.
type Image struct {
	// Name is the image's name under the registry (berth-webhook).
	Name string
	// Binary is the program (a file of the binaries folder, built from
	// ./cmd/<Binary>), installed as /usr/local/bin/<Binary>.
	Binary string
	// Aliases are more paths of the same program (symlinks).
	Aliases []string
	// Entrypoint of the container.
	Entrypoint []string
	// Description is the image's description label.
	Description string
}

// Images are every image `make images` builds, in order. A manifest or a
// default that names an image of berth's must name one of these
// (deploy's TestImagesAreBuilt).
var Images = []Image{
	{Name: "berth-webhook", Binary: "berth-webhook", Description: "berth's admission webhook"},
	{Name: "berth-reconciler", Binary: "berth-reconciler", Description: "berth's reconciler: serving groups, rollouts, status"},
	{Name: "berth", Binary: "berth", Description: "the berth CLI; also the pvc:// model inspector"},
	{Name: "berth-downloader", Binary: "berth", Entrypoint: []string{"/usr/local/bin/berth", "model", "download"},
		Description: "berth's model downloader: berth model download <uri> <dest>, KServe's storage-initializer contract"},
	{Name: "berth-test-engine", Binary: "berth-test-engine",
		Aliases:     []string{"/usr/bin/python3", "/usr/local/bin/vllm", "/usr/local/bin/ray"},
		Description: "berth's stand-in for vLLM and SGLang in test clusters: NOT an inference engine"},
	{Name: "berth-pause", Binary: "berth-pause", Description: "the sandbox (pause) process of the local real node's pods"},
	{Name: "berth-engine-sidecar", Binary: "berth-engine-sidecar",
		Description: "berth's engine runtime sidecar: router registration and LoRA adapters for SGLang and vLLM engines"},
}

// Binaries are the programs Images need, each once.
func Binaries() []string {
	var out []string
	seen := map[string]bool{}
	for _, im := range Images {
		if !seen[im.Binary] {
			seen[im.Binary] = true
			out = append(out, im.Binary)
		}
	}
	return out
}

// Ref is the image's reference at registry and tag.
func (im Image) Ref(registry, tag string) string { return registry + "/" + im.Name + ":" + tag }

// Spec is the image's build spec from the binaries in binDir.
func (im Image) Spec(binDir, revision string, epoch time.Time) (Spec, error) {
	data, err := os.ReadFile(filepath.Join(binDir, im.Binary))
	if err != nil {
		return Spec{}, fmt.Errorf("image %s: %w (build it: CGO_ENABLED=0 go build -o %s ./cmd/%s)", im.Name, err, binDir, im.Binary)
	}
	bin := "/usr/local/bin/" + im.Binary
	files := []File{{Path: bin, Mode: 0o755, Data: data}}
	for _, a := range im.Aliases {
		files = append(files, File{Path: a, Mode: 0o777, Link: bin})
	}
	entry := im.Entrypoint
	if len(entry) == 0 {
		entry = []string{bin}
	}
	return Spec{Entrypoint: entry, Files: files, Epoch: epoch, Labels: map[string]string{
		"org.opencontainers.image.title":       im.Name,
		"org.opencontainers.image.description": im.Description,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.revision":    revision,
		"org.opencontainers.image.version":     version.Version,
	}}, nil
}

// BuildAll builds every image from binDir.
func BuildAll(binDir, revision string, epoch time.Time) (map[string]v1.Image, error) {
	out := map[string]v1.Image{}
	for _, im := range Images {
		spec, err := im.Spec(binDir, revision, epoch)
		if err != nil {
			return nil, err
		}
		img, err := Build(spec)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", im.Name, err)
		}
		out[im.Name] = img
	}
	return out, nil
}
