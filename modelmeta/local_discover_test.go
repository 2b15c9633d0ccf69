package modelmeta

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/internal/hubtest"
)

// writeRepo writes repo's files as a Hugging Face cache does: each file a
// blob under blobs/, the snapshot a tree of relative symlinks to them. A
// blob is sparse: its real header, then a hole up to its real size, so a
// 5 GB shard costs a few KB of disk. It returns the cache repo's directory
// and the snapshot's path in it.
func writeRepo(t *testing.T, repo *hubtest.Repo) (root, snapshot string) {
	t.Helper()
	root = t.TempDir()
	snapshot = "snapshots/" + repo.SHA
	for i, f := range repo.Files {
		blob := filepath.Join(root, "blobs", fmt.Sprintf("blob%03d", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(blob), 0o755))
		require.NoError(t, os.WriteFile(blob, f.Head, 0o644))
		require.NoError(t, os.Truncate(blob, f.Size))
		link := filepath.Join(root, filepath.FromSlash(snapshot), filepath.FromSlash(f.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
		target, err := filepath.Rel(filepath.Dir(link), blob)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(target, link))
	}
	return root, snapshot
}

// The local source gives Discover exactly what the hf source gives it for
// the same files (the test Hub's three models, laid out as a node's HF
// cache).
func TestDiscoverLocalMatchesHub(t *testing.T) {
	hub := hubtest.NewServer()
	defer hub.Close()
	for _, repo := range hubtest.Models() {
		t.Run(repo.ID, func(t *testing.T) {
			hf, err := NewHF("hf://"+repo.ID, HFOptions{Endpoint: hub.URL, Token: hubtest.Token})
			require.NoError(t, err)
			want, err := Discover(context.Background(), hf, Options{})
			require.NoError(t, err)

			root, snapshot := writeRepo(t, repo)
			local, err := NewLocal(root, snapshot, LocalOptions{Describe: "pvc://cache/" + snapshot})
			require.NoError(t, err)
			got, err := Discover(context.Background(), local, Options{})
			require.NoError(t, err)
			assert.Equal(t, "pvc://cache/"+snapshot, got.Source)
			want.Source = got.Source
			// The local source skips hidden files (.gitattributes) the Hub lists.
			assert.InDelta(t, want.DownloadBytes, got.DownloadBytes, 4096)
			want.DownloadBytes = got.DownloadBytes
			assert.Equal(t, want, got)
			assert.NotZero(t, got.ParameterCount)
		})
	}
}
