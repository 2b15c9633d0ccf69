package modelmeta

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/internal/hubtest"
)

// tinyHub serves the public and the gated tiny repositories.
func tinyHub(t *testing.T) *hubtest.Server {
	t.Helper()
	hub := hubtest.NewServer(hubtest.Tiny(false), hubtest.Tiny(true))
	t.Cleanup(hub.Close)
	return hub
}

// assertTree checks that dir holds exactly repo's files with their content.
func assertTree(t *testing.T, repo *hubtest.Repo, dir string) {
	t.Helper()
	var got []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	}))
	var want []string
	for _, f := range repo.Files {
		want = append(want, f.Path)
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		require.NoError(t, err)
		exp := make([]byte, f.Size)
		_, _ = f.ReadAt(exp, 0)
		assert.True(t, bytes.Equal(exp, b), "content of %s", f.Path)
	}
	assert.ElementsMatch(t, want, got, "every file, no temporary ones")
}

func TestDownloadHF(t *testing.T) {
	hub := tinyHub(t)
	tests := []struct {
		name, uri, token string
		repo             *hubtest.Repo
		reason           Reason // "" for success
	}{
		{name: "public", uri: "hf://" + hubtest.TinyID, repo: hubtest.Tiny(false)},
		{name: "public at a revision", uri: "hf://" + hubtest.TinyID + "@" + hubtest.Tiny(false).SHA, repo: hubtest.Tiny(false)},
		{name: "gated with the token", uri: "hf://" + hubtest.TinyPrivateID, token: hubtest.Token, repo: hubtest.Tiny(true)},
		{name: "gated without a token", uri: "hf://" + hubtest.TinyPrivateID, reason: ReasonUnauthorized},
		{name: "gated with a wrong token", uri: "hf://" + hubtest.TinyPrivateID, token: "hf_wrong", reason: ReasonUnauthorized},
		{name: "missing revision", uri: "hf://" + hubtest.TinyID + "@v9", reason: ReasonNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, err := NewHF(tc.uri, HFOptions{Endpoint: hub.URL, Token: tc.token})
			require.NoError(t, err)
			dest := t.TempDir()
			var log strings.Builder
			sum, err := Download(context.Background(), src, dest, DownloadOptions{Progress: &log})
			if tc.reason != "" {
				require.Error(t, err)
				assert.Equal(t, tc.reason, ReasonOf(err), "%v", err)
				return
			}
			require.NoError(t, err)
			assertTree(t, tc.repo, dest)
			assert.Equal(t, len(tc.repo.Files), sum.Fetched)
			assert.Contains(t, log.String(), "fetched model-00001-of-00002.safetensors")
		})
	}
}

// TestDownloadIdempotent: a re-run fetches only what is missing or of the
// wrong size.
func TestDownloadIdempotent(t *testing.T) {
	hub := tinyHub(t)
	src, err := NewHF("hf://"+hubtest.TinyID, HFOptions{Endpoint: hub.URL})
	require.NoError(t, err)
	dest := t.TempDir()
	_, err = Download(context.Background(), src, dest, DownloadOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dest, "tokenizer.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dest, "config.json"), []byte("{}"), 0o644))
	before := hub.BytesServed()
	sum, err := Download(context.Background(), src, dest, DownloadOptions{Concurrency: 1})
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Fetched)
	assert.Equal(t, len(hubtest.Tiny(false).Files)-2, sum.Skipped)
	assert.Less(t, hub.BytesServed()-before, int64(20_000), "the shards are not fetched again")
	assertTree(t, hubtest.Tiny(false), dest)
}

// damaged cuts or flips the bytes of one file.
type damaged struct {
	Source
	file string
	cut  bool
}

func (d damaged) ReadRange(ctx context.Context, path string, offset, length int64) (io.ReadCloser, error) {
	rc, err := d.Source.ReadRange(ctx, path, offset, length)
	if err != nil || path != d.file {
		return rc, err
	}
	b, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		return nil, err
	}
	if d.cut {
		b = b[:len(b)-10]
	} else {
		b[len(b)-1] ^= 0xff
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (d damaged) SHA256(path string) string { return d.Source.(checksummer).SHA256(path) }

func TestDownloadDetectsDamage(t *testing.T) {
	hub := tinyHub(t)
	for name, tc := range map[string]struct {
		cut  bool
		want string
	}{
		"truncated": {cut: true, want: "the transfer was cut short"},
		"corrupt":   {cut: false, want: "sha256"},
	} {
		t.Run(name, func(t *testing.T) {
			hf, err := NewHF("hf://"+hubtest.TinyID, HFOptions{Endpoint: hub.URL})
			require.NoError(t, err)
			dest := t.TempDir()
			_, err = Download(context.Background(), damaged{Source: hf, file: "model-00002-of-00002.safetensors", cut: tc.cut}, dest, DownloadOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "model-00002-of-00002.safetensors")
			_, statErr := os.Stat(filepath.Join(dest, "model-00002-of-00002.safetensors"))
			assert.True(t, os.IsNotExist(statErr), "a damaged file never gets its real name")
			left, _ := filepath.Glob(filepath.Join(dest, ".*.part-*"))
			assert.Empty(t, left, "temporary files are removed")
		})
	}
}

func TestDownloadS3(t *testing.T) {
	fake := newFakeS3(t, testS3Creds, DefaultS3Region)
	objects := map[string][]byte{"llama/config.json": []byte(`{"a":1}`), "llama/model.safetensors": bytes.Repeat([]byte("w"), 300_000),
		"llama/original/params.json": []byte("{}"), "other/x": []byte("no")}
	fake.put(t, "models", objects)
	src, err := NewS3("s3://models/llama", fake.options(true, testS3Creds))
	require.NoError(t, err)
	dest := t.TempDir()
	sum, err := Download(context.Background(), src, dest, DownloadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Fetched)
	for key, body := range objects {
		rel, ok := strings.CutPrefix(key, "llama/")
		if !ok {
			assert.NoFileExists(t, filepath.Join(dest, "x"))
			continue
		}
		b, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(rel)))
		require.NoError(t, err)
		assert.Equal(t, body, b, rel)
	}

	wrong, err := NewS3("s3://models/llama", fake.options(true, S3Credentials{AccessKeyID: "AKIDBERTHTEST", SecretAccessKey: "nope"}))
	require.NoError(t, err)
	_, err = Download(context.Background(), wrong, t.TempDir(), DownloadOptions{})
	require.Error(t, err)
	assert.Equal(t, ReasonUnauthorized, ReasonOf(err), "%v", err)
}

func TestDownloadRefusesEscapingPaths(t *testing.T) {
	src := &memSource{repo: repoOf(map[string][]byte{"../evil": []byte("x")})}
	_, err := Download(context.Background(), src, t.TempDir(), DownloadOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a relative path inside the model")
}
