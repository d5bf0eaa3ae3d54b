package kek

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxFile bounds a KEK file: a few keys and comments.
const maxFile = 16 << 10

// fileHeader starts a KEK file this package writes.
const fileHeader = "# svc-cloud key-encryption key (KEK), base64: the first line seals, later lines only open.\n" +
	"# Without it the secrets in the database cannot be read: keep a copy, apart from the database's backups.\n"

// LoadFile reads a Ring from a file in ParseKeys's format.
func LoadFile(path string) (*Ring, error) {
	keys, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := New(keys...)
	if err != nil {
		return nil, fmt.Errorf("kek file %s: %w", path, err)
	}
	return r, nil
}

// ReadFile reads the KEKs of a file in ParseKeys's format, the current one
// first.
func ReadFile(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kek file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("kek file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("kek file %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("kek file %s: %w", path, err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("kek file %s: larger than %d bytes", path, maxFile)
	}
	keys, err := ParseKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("kek file %s: %w", path, err)
	}
	return keys, nil
}

// LoadOrCreateFile is LoadFile, but when the file does not exist it writes
// a new random KEK there first (mode 0600), and reports that it did.
func LoadOrCreateFile(path string) (r *Ring, created bool, err error) {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		if err := WriteFile(path, Generate()); err != nil {
			return nil, false, err
		}
		created = true
	}
	r, err = LoadFile(path)
	return r, created, err
}

// WriteFile writes keys (the current one first) to path, mode 0600,
// replacing the file in one rename so a crash leaves the old file or the
// new one.
func WriteFile(path string, keys ...[]byte) error {
	if _, err := New(keys...); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(fileHeader)
	for _, k := range keys {
		b.WriteString(Encode(k))
		b.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kek-*")
	if err != nil {
		return fmt.Errorf("kek file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("kek file: %w", err)
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return fmt.Errorf("kek file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("kek file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("kek file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("kek file: %w", err)
	}
	return nil
}
