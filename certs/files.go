package certs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// File names inside a certificate directory. They are the keys of a
// kubernetes.io/tls Secret as cert-manager writes it, so a mounted Secret and
// a directory written by WriteFiles look the same to the webhook.
const (
	CACertFile = "ca.crt"
	CertFile   = "tls.crt"
	KeyFile    = "tls.key"
)

// WriteFiles writes ca.crt, tls.crt and tls.key (0600 for the key) into dir,
// creating dir if needed. Every file is written to a temporary file in the
// same directory and renamed over the old one, so a reader never sees a
// truncated file. The three renames are not one atomic step: a Reloader
// polling at that instant may see a new certificate with the old key, which
// it rejects (keeping the old pair) and retries on its next poll.
func (b *Bundle) WriteFiles(dir string) error {
	if b == nil {
		return errors.New("certs: WriteFiles on a nil bundle; call Generate first")
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{CACertFile, b.CACert, 0o644},
		{KeyFile, b.ServingKey, 0o600},
		{CertFile, b.ServingCert, 0o644},
	}
	for _, f := range files {
		if len(f.data) == 0 {
			return fmt.Errorf("certs: bundle has no data for %s; call Generate first", f.name)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("certs: creating certificate directory: %w", err)
	}
	// Stage everything first so that a full disk fails before any file of
	// the old, working set is replaced.
	temps := make([]string, 0, len(files))
	defer func() {
		for _, t := range temps {
			_ = os.Remove(t) // already renamed on success: ENOENT is fine
		}
	}()
	for _, f := range files {
		tmp, err := writeTemp(dir, f.name, f.data, f.mode)
		if err != nil {
			return err
		}
		temps = append(temps, tmp)
	}
	for i, f := range files {
		if err := os.Rename(temps[i], filepath.Join(dir, f.name)); err != nil {
			return fmt.Errorf("certs: replacing %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}

func writeTemp(dir, name string, data []byte, mode os.FileMode) (string, error) {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("certs: staging %s: %w", name, err)
	}
	path := tmp.Name()
	err = errors.Join(
		tmp.Chmod(mode), // CreateTemp made it 0600, so the key is never readable by others
		writeAll(tmp, data),
		tmp.Sync(), // the rename must not become visible before the data is durable
	)
	err = errors.Join(err, tmp.Close())
	if err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("certs: staging %s: %w", name, err)
	}
	return path, nil
}

func writeAll(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}
