// Package durable writes files so that a power cut at any instant leaves
// either no file (or the old one) or the whole new one, never one in
// between: the appliance's cache file, its keys, the kiosk's paired
// devices and print jobs are written this way.
//
// It may import the standard library only.
package durable

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// LinkNew gives the file old the name new too, failing with an error
// wrapping fs.ErrExist when new exists: it never replaces a file. Where
// the file system has no hard links it renames old to new after checking
// new does not exist, which is as safe unless two processes race. It
// syncs the directory, so the name survives a power cut.
func LinkNew(old, new string) error {
	err := os.Link(old, new)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		if _, serr := os.Lstat(new); serr == nil {
			return fmt.Errorf("link %s: %w", new, fs.ErrExist)
		} else if !errors.Is(serr, fs.ErrNotExist) {
			return serr
		}
		err = os.Rename(old, new)
	}
	if err != nil {
		return err
	}
	return SyncDir(filepath.Dir(new))
}

// SyncDir makes the names in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// CreateNew writes data to a new file at path with permissions perm,
// durably (the data fsync'd before the file gets its name, the directory
// after): built under a temporary name beside path and linked into place
// with LinkNew, so a file at path is always whole. It fails with an error
// wrapping fs.ErrExist, writing nothing, when path exists.
func CreateNew(path string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // once linked, path keeps the file
	if err := tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return LinkNew(name, path)
}

// WriteFile writes the file at path with permissions perm from what write
// writes, durably, replacing any file there: built under a temporary name
// beside path, fsync'd, renamed into place, and the directory synced, so
// a power cut leaves the old file or the new one whole.
func WriteFile(path string, perm fs.FileMode, write func(w io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	err = tmp.Chmod(perm)
	if err == nil {
		err = write(tmp)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return err
	}
	return SyncDir(filepath.Dir(path))
}
