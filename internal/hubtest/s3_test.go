package hubtest_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/internal/hubtest"
	"github.com/berthdev/berth/modelmeta"
)

var s3Creds = modelmeta.S3Credentials{AccessKeyID: hubtest.S3AccessKeyID, SecretAccessKey: hubtest.S3SecretAccessKey}

func s3Source(t *testing.T, srv *hubtest.S3Server, uri string, creds modelmeta.S3Credentials) *modelmeta.S3 {
	t.Helper()
	src, err := modelmeta.NewS3(uri, modelmeta.S3Options{Endpoint: srv.URL, PathStyle: true, Region: hubtest.S3Region, Credentials: creds})
	require.NoError(t, err)
	return src
}

// TestS3ServerWithModelmeta: berth's S3 client lists, reads ranges of and
// downloads the generated models; the signature is verified.
func TestS3ServerWithModelmeta(t *testing.T) {
	srv := hubtest.NewS3Server(hubtest.Tiny(false), hubtest.Qwen())
	defer srv.Close()

	md, err := modelmeta.Discover(context.Background(), s3Source(t, srv, "s3://models/"+hubtest.QwenID, s3Creds), modelmeta.Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(7_615_616_512), md.ParameterCount)

	dest := t.TempDir()
	sum, err := modelmeta.Download(context.Background(), s3Source(t, srv, "s3://models/"+hubtest.TinyID, s3Creds), dest, modelmeta.DownloadOptions{})
	require.NoError(t, err)
	assert.Equal(t, len(hubtest.Tiny(false).Files), sum.Fetched)
	for _, f := range hubtest.Tiny(false).Files {
		b, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(f.Path)))
		require.NoError(t, err)
		want := make([]byte, f.Size)
		_, _ = f.ReadAt(want, 0)
		assert.Equal(t, want, b, f.Path)
	}

	rc, err := s3Source(t, srv, "s3://models/"+hubtest.TinyID, s3Creds).ReadRange(context.Background(), "tokenizer.json", 2, 7)
	require.NoError(t, err)
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	assert.Equal(t, `version`, string(b))
}

func TestS3ServerRefusals(t *testing.T) {
	srv := hubtest.NewS3Server(hubtest.Tiny(false))
	defer srv.Close()
	tests := []struct {
		name   string
		uri    string
		creds  modelmeta.S3Credentials
		reason modelmeta.Reason
	}{
		{"anonymous", "s3://models/" + hubtest.TinyID, modelmeta.S3Credentials{}, modelmeta.ReasonUnauthorized},
		{"wrong secret", "s3://models/" + hubtest.TinyID, modelmeta.S3Credentials{AccessKeyID: hubtest.S3AccessKeyID, SecretAccessKey: "nope"}, modelmeta.ReasonUnauthorized},
		{"unknown key id", "s3://models/" + hubtest.TinyID, modelmeta.S3Credentials{AccessKeyID: "AKIDOTHER", SecretAccessKey: hubtest.S3SecretAccessKey}, modelmeta.ReasonUnauthorized},
		{"no such bucket", "s3://other/" + hubtest.TinyID, s3Creds, modelmeta.ReasonNotFound},
		{"no such prefix", "s3://models/nobody/nothing", s3Creds, modelmeta.ReasonNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s3Source(t, srv, tc.uri, tc.creds).List(context.Background())
			require.Error(t, err)
			assert.Equal(t, tc.reason, modelmeta.ReasonOf(err), "%v", err)
		})
	}
}

// TestServersAt: both servers listen on a given address.
func TestServersAt(t *testing.T) {
	hub, err := hubtest.NewServerAt("127.0.0.1:0", hubtest.Tiny(false))
	require.NoError(t, err)
	defer hub.Close()
	resp, err := http.Get(hub.URL + "/api/models/" + hubtest.TinyID)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	s3, err := hubtest.NewS3ServerAt("127.0.0.1:0", hubtest.Tiny(false))
	require.NoError(t, err)
	defer s3.Close()
	_, err = s3Source(t, s3, "s3://models/"+hubtest.TinyID, s3Creds).List(context.Background())
	require.NoError(t, err)

	_, err = hubtest.NewS3ServerAt(s3.Listener.Addr().String())
	require.Error(t, err, "the address is taken")
	assert.Contains(t, err.Error(), "cannot listen on")
}
