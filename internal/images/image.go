package images

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// NonRoot is the user and group every image runs as.
const NonRoot = 65532

// CACertsPath is where the CA certificates are (SSL_CERT_FILE points there).
const CACertsPath = "/etc/ssl/certs/ca-certificates.crt"

// File is one file of an image. Link, when set, makes it a symlink to Link
// (Data is then ignored).
type File struct {
	Path string
	Mode int64
	Data []byte
	Link string
}

// Spec describes one image.
type Spec struct {
	// Entrypoint is the command the container runs.
	Entrypoint []string
	// Files are the image's own files (its binaries).
	Files []File
	// Labels are OCI annotations on the config.
	Labels map[string]string
	// Epoch is every file's time and the image's creation time.
	Epoch time.Time
}

// Build makes the image of spec for linux/amd64.
func Build(spec Spec) (v1.Image, error) {
	if len(spec.Entrypoint) == 0 {
		return nil, fmt.Errorf("image spec: no entrypoint")
	}
	base, err := layer(baseFiles(), spec.Epoch)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	own, err := layer(spec.Files, spec.Epoch)
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.DockerManifestSchema2), base, own)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: spec.Epoch.UTC()}
	cf.Config = v1.Config{
		Entrypoint: spec.Entrypoint,
		User:       fmt.Sprintf("%d:%d", NonRoot, NonRoot),
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CACertsPath},
		Labels:     spec.Labels,
	}
	cf.History = nil
	return mutate.ConfigFile(img, cf)
}

// baseFiles are the minimal base every image shares.
func baseFiles() []File {
	return []File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot))},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRoot))},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
		{Path: CACertsPath, Mode: 0o644, Data: CACerts()},
		{Path: "/tmp/", Mode: 0o1777},
		{Path: "/home/nonroot/", Mode: 0o755},
	}
}

// CACerts is the PEM bundle of the pinned x509roots module's roots.
func CACerts() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

// layer writes files (and their parent folders) as one sorted,
// deterministic tar layer.
func layer(files []File, epoch time.Time) (v1.Layer, error) {
	entries := map[string]*tar.Header{}
	data := map[string][]byte{}
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		for dir := path.Dir(p); dir != "." && dir != "/"; dir = path.Dir(dir) {
			if _, ok := entries[dir+"/"]; !ok {
				entries[dir+"/"] = &tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755}
			}
		}
		h := &tar.Header{Name: p, Mode: f.Mode}
		switch {
		case strings.HasSuffix(f.Path, "/"):
			h.Name, h.Typeflag = p+"/", tar.TypeDir
		case f.Link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
			data[p] = f.Data
		}
		if _, dup := entries[h.Name]; dup && h.Typeflag != tar.TypeDir {
			return nil, fmt.Errorf("%s given twice", f.Path)
		}
		entries[h.Name] = h
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := entries[n]
		h.ModTime, h.Uid, h.Gid, h.Format = epoch.UTC(), 0, 0, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data[strings.TrimSuffix(n, "/")]); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// WriteTarball writes img tagged ref as a docker-archive tarball.
func WriteTarball(img v1.Image, ref, file string) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	return tarball.WriteToFile(file, tag, img)
}

// Sizes are the sums of img's layers, compressed (what a registry stores
// and a pull downloads) and uncompressed (the tar streams).
func Sizes(img v1.Image) (compressed, uncompressed int64, err error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, 0, err
	}
	for _, l := range layers {
		c, err := l.Size()
		if err != nil {
			return 0, 0, err
		}
		u, err := partial.UncompressedSize(l)
		if err != nil {
			return 0, 0, err
		}
		compressed += c
		uncompressed += u
	}
	return compressed, uncompressed, nil
}
