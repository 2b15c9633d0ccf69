package images

import (
	"archive/tar"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fakeBins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range Binaries() {
		require.NoError(t, os.WriteFile(filepath.Join(dir, b), []byte("#!program "+b), 0o755))
	}
	return dir
}

// The same inputs give the same digests; another epoch or revision does not.
func TestBuildIsReproducible(t *testing.T) {
	bins := fakeBins(t)
	epoch := time.Unix(1_700_000_000, 0)
	a, err := BuildAll(bins, "abc", epoch)
	require.NoError(t, err)
	b, err := BuildAll(bins, "abc", epoch)
	require.NoError(t, err)
	c, err := BuildAll(bins, "abd", epoch)
	require.NoError(t, err)
	for _, im := range Images {
		da, _ := a[im.Name].Digest()
		db, _ := b[im.Name].Digest()
		dc, _ := c[im.Name].Digest()
		assert.Equal(t, da, db, im.Name)
		assert.NotEqual(t, da, dc, "%s: the revision label is part of the image", im.Name)
	}
}

// files lists the flattened image's entries: path -> header.
func files(t *testing.T, spec Spec) map[string]*tar.Header {
	t.Helper()
	img, err := Build(spec)
	require.NoError(t, err)
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out[h.Name] = h
	}
}

func TestImageContents(t *testing.T) {
	var engine Image
	for _, im := range Images {
		if im.Name == "berth-test-engine" {
			engine = im
		}
	}
	spec, err := engine.Spec(fakeBins(t), "abc", time.Unix(5, 0))
	require.NoError(t, err)
	got := files(t, spec)
	for _, p := range []string{"etc/passwd", "etc/group", "etc/ssl/certs/ca-certificates.crt", "usr/local/bin/berth-test-engine"} {
		require.Contains(t, got, p)
		assert.Equal(t, int64(5), got[p].ModTime.Unix(), p)
		assert.Equal(t, 0, got[p].Uid, p)
	}
	assert.Equal(t, "/usr/local/bin/berth-test-engine", got["usr/bin/python3"].Linkname, "runtimes run python3 -m sglang...")
	assert.Greater(t, got["etc/ssl/certs/ca-certificates.crt"].Size, int64(100_000), "a real CA bundle")
	tmp := got["tmp/"]
	if tmp == nil {
		tmp = got["tmp"]
	}
	require.NotNil(t, tmp, "/tmp exists")
	assert.Equal(t, int64(0o1777), tmp.Mode&0o7777)

	img, err := Build(spec)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, []string{"/usr/local/bin/berth-test-engine"}, cf.Config.Entrypoint)
	assert.Equal(t, "abc", cf.Config.Labels["org.opencontainers.image.revision"])
	assert.Equal(t, "linux", cf.OS)
}

func TestBuildErrors(t *testing.T) {
	_, err := Build(Spec{})
	assert.ErrorContains(t, err, "no entrypoint")
	_, err = Images[0].Spec(t.TempDir(), "x", time.Unix(0, 0))
	assert.ErrorContains(t, err, "go build", "a missing binary says how to build it")
}

// A tarball reads back as the same image, and push writes it to a
// registry (go-containerregistry's in-memory one on loopback).
func TestTarballAndPush(t *testing.T) {
	spec, err := Images[0].Spec(fakeBins(t), "abc", time.Unix(5, 0))
	require.NoError(t, err)
	img, err := Build(spec)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "i.tar")
	require.NoError(t, WriteTarball(img, "ghcr.io/berthdev/berth-webhook:0.1.0", file))
	back, err := tarball.ImageFromPath(file, nil)
	require.NoError(t, err)
	want, _ := img.Digest()
	got, _ := back.Digest()
	assert.Equal(t, want, got)
	assert.Error(t, WriteTarball(img, "not a reference!", file))

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ref := u.Host + "/berthdev/berth-webhook:test"
	require.NoError(t, Push(context.Background(), back, ref, true))
	parsed, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	pulled, err := remote.Image(parsed)
	require.NoError(t, err)
	pd, _ := pulled.Digest()
	assert.Equal(t, want, pd)
}

// Push authenticates with the docker config's credentials
// (authn.DefaultKeychain, $DOCKER_CONFIG): a registry that wants them
// refuses the push without, and takes it with.
func TestPushUsesDockerConfig(t *testing.T) {
	spec, err := Images[0].Spec(fakeBins(t), "abc", time.Unix(5, 0))
	require.NoError(t, err)
	img, err := Build(spec)
	require.NoError(t, err)
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "berth" || pass != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "credentials, please", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	ref := u.Host + "/berthdev/berth-webhook:test"

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	err = Push(context.Background(), img, ref, true)
	require.Error(t, err, "no credentials")
	assert.Contains(t, err.Error(), "push "+ref)

	cfg := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, u.Host, base64.StdEncoding.EncodeToString([]byte("berth:s3cret")))
	require.NoError(t, os.WriteFile(filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json"), []byte(cfg), 0o600))
	require.NoError(t, Push(context.Background(), img, ref, true))
}
