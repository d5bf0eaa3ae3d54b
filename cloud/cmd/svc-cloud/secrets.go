package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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

// kekRotate is `kek rotate`: a new key-encryption key in the KEK file, every
// secret in the database sealed again under it, and the old key dropped
// from the file. svc-cloud serve must be stopped meanwhile: a process
// holding only the old key cannot open what the new one seals. With several
// processes on one PostgreSQL database, or with SVC_KEK, rotate by hand in
// three restarts (docs/decisions.md, "Secrets, pass-key rotation and broker
// TLS").
func kekRotate(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("kek rotate", flag.ContinueOnError)
	cfg.storeFlags(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.KEK != "" {
		return usageError{"kek rotate rewrites a KEK file; with SVC_KEK, put a new key (head -c 32 /dev/urandom | base64) first in SVC_KEK, restart, then drop the old one"}
	}
	path := cfg.KEKFile
	if path == "" {
		path = cfg.kekPath()
	}
	old, err := kek.ReadFile(path)
	if err != nil {
		return err
	}
	fresh := kek.Generate()
	if err := kek.WriteFile(path, append([][]byte{fresh}, old...)...); err != nil {
		return err
	}
	log := cfg.logger(stderr)
	store, _, err := openStore(ctx, &cfg, log) // re-seals everything under fresh
	if err != nil {
		return fmt.Errorf("kek rotate: %w (%s now holds the new key first and the old after it; it opens both)", err, path)
	}
	n := store.(interface{ Resealed() int }).Resealed()
	if err := store.Close(); err != nil {
		return err
	}
	if err := kek.WriteFile(path, fresh); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "key-encryption key %s replaces %s in %s; %d secrets sealed again\n", kek.ID(fresh), kek.ID(old[0]), path, n)
	return nil
}
