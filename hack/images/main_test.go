package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/internal/images"
	"github.com/berthdev/berth/version"
)

func fakeBins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range images.Binaries() {
		require.NoError(t, os.WriteFile(filepath.Join(dir, b), bytes.Repeat([]byte("program "+b+"\n"), 1000), 0o755))
	}
	return dir
}

// Two builds of the same binaries at the same commit write byte-identical
// tarballs and the same index; every image is listed with its reference at
// berth's registry and version.
func TestBuildAllIsReproducible(t *testing.T) {
	bins := fakeBins(t)
	epoch := time.Unix(1_750_000_000, 0)
	a, b := t.TempDir(), t.TempDir()
	first, err := buildAll(bins, a, "0123abcd", epoch)
	require.NoError(t, err)
	second, err := buildAll(bins, b, "0123abcd", epoch)
	require.NoError(t, err)
	require.Len(t, first, len(images.Images))
	for i, e := range first {
		assert.Equal(t, version.Image(images.Images[i].Name), e.Ref)
		assert.Equal(t, e.Digest, second[i].Digest, e.Name)
		assert.Greater(t, e.Raw, e.Size, "%s: the layers compress", e.Name)
		da, err := os.ReadFile(e.File)
		require.NoError(t, err)
		db, err := os.ReadFile(second[i].File)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(da, db), "%s: the tarballs are byte-identical", e.Name)
	}
	var listed []entry
	data, err := os.ReadFile(filepath.Join(a, "index.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &listed))
	assert.Equal(t, first, listed)

	_, err = buildAll(t.TempDir(), a, "x", epoch)
	assert.ErrorContains(t, err, "go build", "missing binaries say how to build them")
}

// push sends every tarball to REGISTRY with TAG (go-containerregistry's
// in-memory registry on loopback) under the digests the index lists.
func TestPush(t *testing.T) {
	dir := t.TempDir()
	index, err := buildAll(fakeBins(t), dir, "0123abcd", time.Unix(0, 0))
	require.NoError(t, err)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)

	require.NoError(t, push([]string{"-in", dir, "-registry", u.Host + "/mirror", "-tag", "1.2.3", "-insecure"}))
	for _, e := range index {
		ref, err := name.ParseReference(u.Host+"/mirror/"+e.Name+":1.2.3", name.Insecure)
		require.NoError(t, err)
		img, err := remote.Image(ref)
		require.NoError(t, err, e.Name)
		d, err := img.Digest()
		require.NoError(t, err)
		assert.Equal(t, e.Digest, d.String(), e.Name)
	}

	err = push([]string{"-in", t.TempDir(), "-registry", u.Host + "/mirror", "-insecure"})
	assert.ErrorContains(t, err, "make images", "no tarballs: says what to run")
}
