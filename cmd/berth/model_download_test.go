package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/internal/hubtest"
)

func runDownload(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"model", "download"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestModelDownloadHub: the pod's env as merge writes it. Whether the
// Secret holds the token under "token" (OME's form, read by secretKeyRef)
// or "HF_TOKEN" (KServe's, through envFrom), the downloader sees HF_TOKEN.
func TestModelDownloadHub(t *testing.T) {
	hub := hubtest.NewServer(hubtest.Tiny(false), hubtest.Tiny(true))
	defer hub.Close()
	t.Setenv("HF_ENDPOINT", hub.URL)
	tests := []struct {
		name, uri, token string
		wantCode         int
		wantErr          []string
	}{
		{name: "public", uri: "hf://" + hubtest.TinyID},
		{name: "KServe's revision form", uri: "hf://" + hubtest.TinyID + ":" + hubtest.Tiny(false).SHA},
		{name: "gated with the token", uri: "hf://" + hubtest.TinyPrivateID, token: hubtest.Token},
		{name: "gated without a token", uri: "hf://" + hubtest.TinyPrivateID, wantCode: 1,
			wantErr: []string{"berth model download hf://" + hubtest.TinyPrivateID, "$HF_TOKEN is not set", "Unauthorized"}},
		{name: "gated with a wrong token", uri: "hf://" + hubtest.TinyPrivateID, token: "hf_wrong", wantCode: 1,
			wantErr: []string{"hf://" + hubtest.TinyPrivateID, "the token in $HF_TOKEN", "refused the token"}},
		{name: "unknown scheme", uri: "gs://b/m", wantCode: 1, wantErr: []string{"reads hf:// and s3://"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HF_TOKEN", tc.token)
			dest := filepath.Join(t.TempDir(), "models")
			code, stdout, stderr := runDownload(tc.uri, dest)
			require.Equal(t, tc.wantCode, code, stderr)
			for _, s := range tc.wantErr {
				assert.Contains(t, stderr, s)
			}
			if tc.wantCode != 0 {
				assert.NotContains(t, stderr, hubtest.Token, "the token is never printed")
				return
			}
			assert.Contains(t, stdout, "fetched model-00001-of-00002.safetensors")
			assert.Contains(t, stdout, "7 files")
			for _, f := range hubtest.Tiny(false).Files {
				st, err := os.Stat(filepath.Join(dest, filepath.FromSlash(f.Path)))
				require.NoError(t, err)
				assert.Equal(t, f.Size, st.Size(), f.Path)
			}
			// A re-run fetches nothing.
			code, stdout, stderr = runDownload(tc.uri, dest)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stdout, "fetched 0 (0 bytes), 7 already present")
		})
	}
}

// TestModelDownloadS3: MinIO-style, with the variables merge writes from
// storage.parameters (endpoint, path style) and the Secret's keys.
func TestModelDownloadS3(t *testing.T) {
	backend := s3mem.New()
	require.NoError(t, backend.CreateBucket("models"))
	objects := map[string][]byte{"tiny/config.json": []byte(`{}`), "tiny/model.safetensors": bytes.Repeat([]byte{7}, 100_000), "tiny/original/params.json": []byte(`{"dim":1}`)}
	for key, body := range objects {
		_, err := backend.PutObject("models", key, nil, bytes.NewReader(body), int64(len(body)), nil)
		require.NoError(t, err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("S3_USER_VIRTUAL_BUCKET", "false")
	t.Setenv("AWS_DEFAULT_REGION", "us-east-1")

	dest := t.TempDir()
	code, stdout, stderr := runDownload("s3://models/tiny", dest)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "3 files")
	for key, body := range objects {
		b, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(key[len("tiny/"):])))
		require.NoError(t, err)
		assert.Equal(t, body, b, key)
	}

	code, _, stderr = runDownload("s3://nobucket/tiny", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "s3://nobucket/tiny")
	assert.Contains(t, stderr, "access key AKIDTEST from $AWS_ACCESS_KEY_ID")
}

func TestKServeRevision(t *testing.T) {
	for in, want := range map[string]string{
		"hf://org/repo":      "hf://org/repo",
		"hf://org/repo:main": "hf://org/repo@main",
		"hf://org/repo@abc":  "hf://org/repo@abc",
		"hf://org/repo:v1.0": "hf://org/repo@v1.0",
		"hf://org:x/repo":    "hf://org:x/repo",
	} {
		assert.Equal(t, want, kserveRevision(in), in)
	}
}
