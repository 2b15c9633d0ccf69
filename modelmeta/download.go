package modelmeta

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// DownloadOptions configure Download.
type DownloadOptions struct {
	// Concurrency bounds the files fetched at once; default 4.
	Concurrency int
	// Progress, when set, gets one line per file fetched or skipped.
	Progress io.Writer
}

// DownloadSummary is what Download did.
type DownloadSummary struct {
	Files, Fetched, Skipped int
	Bytes                   int64 // the size of every file of the model
	FetchedBytes            int64
}

// checksummer is a Source that knows some files' sha256 (HF: LFS files).
type checksummer interface{ SHA256(path string) string }

// Download copies every file src lists into dest, the storage-initializer
// contract: nothing is skipped. Files run Concurrency at a time; each is
// written to a temporary name in its directory, checked (its size as
// listed, and its sha256 when the source gives one) and renamed into
// place, so dest never holds a partial file under a real name. A file
// already in dest with the listed size is kept (a re-run fetches only what
// is missing). A listed path that is absolute or leaves dest is refused.
// The first failure stops the download; errors are *Error with the source's
// Reason where the source gave one.
func Download(ctx context.Context, src Source, dest string, o DownloadOptions) (DownloadSummary, error) {
	files, err := src.List(ctx)
	if err != nil {
		return DownloadSummary{}, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	sum := DownloadSummary{Files: len(files), Bytes: sumSizes(files)}
	for _, f := range files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) || path.Clean(f.Path) != f.Path {
			return sum, Errorf(ReasonUnavailable, f.Path, "the listed path is not a relative path inside the model; refusing to write it")
		}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, o.Concurrency)
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fetched, err := downloadFile(ctx, src, dest, f)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				cancel(err)
			case fetched:
				sum.Fetched++
				sum.FetchedBytes += f.Size
				progress(o.Progress, "fetched %s (%d bytes)", f.Path, f.Size)
			default:
				sum.Skipped++
				progress(o.Progress, "present %s (%d bytes)", f.Path, f.Size)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return sum, err
	}
	return sum, nil
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		_, _ = fmt.Fprintf(w, format+"\n", args...)
	}
}

// downloadFile fetches one file unless dest holds it with its listed size;
// fetched reports whether it did.
func downloadFile(ctx context.Context, src Source, dest string, f File) (fetched bool, err error) {
	target := filepath.Join(dest, filepath.FromSlash(f.Path))
	if st, err := os.Stat(target); err == nil && st.Mode().IsRegular() && f.Size >= 0 && st.Size() == f.Size {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return false, Errorf(ReasonUnavailable, f.Path, "creating its directory: %v", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".part-*")
	if err != nil {
		return false, Errorf(ReasonUnavailable, f.Path, "creating a temporary file: %v", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	var h hash.Hash
	want := ""
	if cs, ok := src.(checksummer); ok {
		if want = cs.SHA256(f.Path); want != "" {
			h = sha256.New()
		}
	}
	n, err := copyFile(ctx, src, f, tmp, h)
	if err != nil {
		return false, err
	}
	if f.Size >= 0 && n != f.Size {
		return false, Errorf(ReasonUnavailable, f.Path, "got %d bytes, the listing says %d: the transfer was cut short or the file changed", n, f.Size)
	}
	if h != nil {
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			return false, Errorf(ReasonUnavailable, f.Path, "sha256 %s, the Hub lists %s: the file is corrupt", got, want)
		}
	}
	if err := tmp.Close(); err != nil {
		return false, Errorf(ReasonUnavailable, f.Path, "writing: %v", err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return false, Errorf(ReasonUnavailable, f.Path, "renaming into place: %v", err)
	}
	return true, nil
}

// copyFile copies the whole of f into w (and h, when set).
func copyFile(ctx context.Context, src Source, f File, w io.Writer, h hash.Hash) (int64, error) {
	if f.Size == 0 {
		return 0, nil
	}
	length := f.Size
	if length < 0 {
		length = math.MaxInt64 - 1 // unknown: read to the end
	}
	rc, err := src.ReadRange(ctx, f.Path, 0, length)
	if err != nil {
		return 0, err
	}
	defer func() { _ = rc.Close() }()
	if h != nil {
		w = io.MultiWriter(w, h)
	}
	n, err := io.Copy(w, rc)
	if err != nil {
		var me *Error
		if errors.As(err, &me) {
			return n, err
		}
		if ctx.Err() != nil {
			return n, context.Cause(ctx)
		}
		return n, Errorf(ReasonUnavailable, f.Path, "after %d bytes: %v", n, strings.TrimSpace(err.Error()))
	}
	return n, nil
}
