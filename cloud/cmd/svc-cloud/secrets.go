package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/svc-vms/svc/cloud/kek"
)

// keys returns the key-encryption key ring: SVC_KEK, else the file
// --kek-file names, else DATA/kek, made (mode 0600) on first use.
func (c *Config) keys(log *slog.Logger) (*kek.Ring, error) {
	switch {
	case c.KEK != "":
		r, err := kek.Parse(c.KEK)
		if err != nil {
			return nil, fmt.Errorf("SVC_KEK: %w", err)
		}
		return r, nil
	case c.KEKFile != "":
		if fi, err := os.Stat(c.KEKFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("the key-encryption key file may be read by others than its owner", "path", c.KEKFile,
				"mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
		}
		return kek.LoadFile(c.KEKFile)
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	r, created, err := kek.LoadOrCreateFile(c.kekPath())
	if err != nil {
		return nil, err
	}
	if created {
		log.Warn("made a key-encryption key: it seals the secrets in the database, which cannot be read without it; keep a copy apart from the database's backups",
			"path", c.kekPath())
	}
	if c.DatabaseURL != "" && created {
		log.Warn("every svc-cloud process on this database needs this key-encryption key: give them all the file (SVC_KEK_FILE) or SVC_KEK")
	}
	return r, nil
}

// secureDataDir makes the data directory and what is directly in it
// private to the user svc-cloud runs as: the directory and the ones in it
// 0700, files 0600 (the SQLite database and its -wal and -shm files, the
// KEK, demo.json, edge.json, the broker's keys and certificates). It logs
// each mode it changes; a missing directory is made. Only the top level is
// walked: with the directory 0700 nothing below it is reachable by others,
// and a --data pointed by mistake at a large tree is not rewritten.
func secureDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	fix := func(path string, fi fs.FileMode, want fs.FileMode) error {
		if fi.Perm() == want || fi.Perm()&^want == 0 {
			return nil
		}
		if err := os.Chmod(path, want); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		log.Warn("made a data file private", "path", path, "mode", fmt.Sprintf("%04o", fi.Perm()), "now", fmt.Sprintf("%04o", want))
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := fix(dir, fi.Mode(), 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone meanwhile
		}
		if err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		switch {
		case info.Mode().IsDir():
			err = fix(path, info.Mode(), 0o700)
		case info.Mode().IsRegular():
			err = fix(path, info.Mode(), 0o600)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
