package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/release"
)

// Dir is Slots for an appliance installed on an ordinary Linux with
// systemd: two directories of svc-edge binaries and a symlink naming the
// current one.
//
//	DIR/current -> a            the committed slot (flipped with one rename)
//	DIR/a/svc-edge              its executable
//	DIR/a/version               its version ("" when installed by hand)
//	DIR/a/release.json          the signed manifest it was installed from
//	DIR/b/...                   the inactive slot
//	DIR/b/staging/              a download in progress: bundle.part, release.json
//	DIR/trial.json              a requested or running trial (Trial)
//	DIR/result.json             the last update's outcome (Result)
//
// Every file is written under a temporary name and renamed into place, and
// the directory synced, so a power cut leaves the old state or the new.
type Dir struct {
	path string
}

var _ Slots = (*Dir)(nil)

// Executable is the name of a slot's program.
const Executable = "svc-edge"

const (
	currentLink = "current"
	trialFile   = "trial.json"
	resultFile  = "result.json"
	stagingDir  = "staging"
	partFile    = "bundle.part"
	envFile     = "release.json"
	versionFile = "version"
)

// OpenDir opens the slots directory at path, which Install made.
func OpenDir(path string) (*Dir, error) {
	d := &Dir{path: path}
	if _, err := d.current(); err != nil {
		return nil, err
	}
	return d, nil
}

// Install makes the slots directory at path with exe, a svc-edge binary of
// version (which may be ""), as slot a, current, unless the directory is
// set up already: then it changes nothing. It reports whether it
// installed.
func Install(path, exe, version string) (*Dir, bool, error) {
	d := &Dir{path: path}
	if _, err := d.current(); err == nil {
		return d, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Join(path, "a"), 0o755); err != nil {
		return nil, false, fmt.Errorf("update: install: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(path, "b"), 0o755); err != nil {
		return nil, false, fmt.Errorf("update: install: %w", err)
	}
	src, err := os.Open(exe)
	if err != nil {
		return nil, false, fmt.Errorf("update: install: %w", err)
	}
	defer src.Close()
	if err := writeFile(filepath.Join(path, "a", Executable), 0o755, func(w io.Writer) error { _, err := io.Copy(w, src); return err }); err != nil {
		return nil, false, fmt.Errorf("update: install: %w", err)
	}
	if err := writeBytes(filepath.Join(path, "a", versionFile), []byte(version)); err != nil {
		return nil, false, fmt.Errorf("update: install: %w", err)
	}
	if err := d.link("a"); err != nil {
		return nil, false, err
	}
	return d, true, nil
}

// Path is the slots directory.
func (d *Dir) Path() string { return d.path }

func (d *Dir) current() (string, error) {
	name, err := os.Readlink(filepath.Join(d.path, currentLink))
	if err != nil {
		return "", fmt.Errorf("update: slots %s: %w", d.path, err)
	}
	if name != "a" && name != "b" {
		return "", fmt.Errorf("update: slots %s: current names %q, not a or b", d.path, name)
	}
	return name, nil
}

func other(name string) string {
	if name == "a" {
		return "b"
	}
	return "a"
}

func (d *Dir) slot(name string) Slot {
	v, _ := os.ReadFile(filepath.Join(d.path, name, versionFile))
	return Slot{Name: name, Version: strings.TrimSpace(string(v)), Path: filepath.Join(d.path, name, Executable)}
}

// Current implements Slots.
func (d *Dir) Current(context.Context) (Slot, error) {
	name, err := d.current()
	if err != nil {
		return Slot{}, err
	}
	return d.slot(name), nil
}

// Inactive implements Slots.
func (d *Dir) Inactive(context.Context) (Slot, error) {
	name, err := d.current()
	if err != nil {
		return Slot{}, err
	}
	return d.slot(other(name)), nil
}

// Stage implements Slots.
func (d *Dir) Stage(ctx context.Context, env release.Envelope, m release.Manifest) (Staging, error) {
	if _, ok, err := d.Trial(ctx); err != nil {
		return nil, err
	} else if ok {
		return nil, ErrTrialPending
	}
	in, err := d.Inactive(ctx)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(d.path, in.Name, stagingDir)
	// Resume only the same bundle: the envelope staged beside the part
	// names it; anything else starts over.
	if old, err := os.ReadFile(filepath.Join(dir, envFile)); err != nil || string(old) != string(env.Marshal()) {
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("update: stage: %w", err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("update: stage: %w", err)
		}
		if err := writeBytes(filepath.Join(dir, envFile), env.Marshal()); err != nil {
			return nil, fmt.Errorf("update: stage: %w", err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, partFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("update: stage: %w", err)
	}
	n, err := f.Seek(0, io.SeekEnd)
	if err == nil && n > m.Size { // not this bundle's start: start over
		err = f.Truncate(0)
		n = 0
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("update: stage: %w", err)
	}
	return &staging{f: f, n: n}, nil
}

type staging struct {
	f *os.File
	n int64
}

func (s *staging) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	s.n += int64(n)
	return n, err
}

func (s *staging) Written() int64 { return s.n }

func (s *staging) Reset() error {
	if err := s.f.Truncate(0); err != nil {
		return err
	}
	s.n = 0
	_, err := s.f.Seek(0, io.SeekStart)
	return err
}

func (s *staging) Close() error {
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// OpenStaged implements Slots.
func (d *Dir) OpenStaged(ctx context.Context) (io.ReadCloser, error) {
	in, err := d.Inactive(ctx)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(d.path, in.Name, stagingDir, partFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotStaged
	}
	return f, err
}

// RequestTrial implements Slots: the staged bundle becomes the inactive
// slot's executable, and trial.json asks the supervisor for one start.
func (d *Dir) RequestTrial(ctx context.Context, at time.Time) (Trial, error) {
	if _, ok, err := d.Trial(ctx); err != nil {
		return Trial{}, err
	} else if ok {
		return Trial{}, ErrTrialPending
	}
	cur, err := d.Current(ctx)
	if err != nil {
		return Trial{}, err
	}
	in := other(cur.Name)
	dir := filepath.Join(d.path, in, stagingDir)
	raw, err := os.ReadFile(filepath.Join(dir, envFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Trial{}, ErrNotStaged
	} else if err != nil {
		return Trial{}, fmt.Errorf("update: request trial: %w", err)
	}
	env, err := release.ParseEnvelope(raw)
	if err != nil {
		return Trial{}, fmt.Errorf("update: request trial: %w", err)
	}
	m, err := unverified(env)
	if err != nil {
		return Trial{}, fmt.Errorf("update: request trial: %w", err)
	}
	if err := os.Chmod(filepath.Join(dir, partFile), 0o755); err != nil {
		return Trial{}, fmt.Errorf("update: request trial: %w", err)
	}
	slotDir := filepath.Join(d.path, in)
	for _, step := range []func() error{
		func() error { return os.Rename(filepath.Join(dir, partFile), filepath.Join(slotDir, Executable)) },
		func() error { return os.Rename(filepath.Join(dir, envFile), filepath.Join(slotDir, envFile)) },
		func() error { return writeBytes(filepath.Join(slotDir, versionFile), []byte(m.Version)) },
		func() error { return os.RemoveAll(dir) },
		func() error { return syncDir(slotDir) },
	} {
		if err := step(); err != nil {
			return Trial{}, fmt.Errorf("update: request trial: %w", err)
		}
	}
	t := Trial{Slot: d.slot(in), From: cur.Version, SHA256: m.SHA256, RequestedAt: at.UTC()}
	if err := writeTrial(d.path, t, "request trial"); err != nil {
		return Trial{}, err
	}
	return t, nil
}

// unverified reads the manifest of an envelope this appliance verified
// before it stored it.
func unverified(env release.Envelope) (release.Manifest, error) {
	raw, err := b64.DecodeString(env.Manifest)
	if err != nil {
		return release.Manifest{}, err
	}
	var m release.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return release.Manifest{}, err
	}
	return m, m.Validate()
}

// Trial implements Slots.
func (d *Dir) Trial(context.Context) (Trial, bool, error) { return readTrial(d.path) }

// BeginTrial implements Slots.
func (d *Dir) BeginTrial(ctx context.Context, at time.Time) (Trial, error) {
	t, ok, err := d.Trial(ctx)
	if err != nil {
		return Trial{}, err
	}
	if !ok {
		return Trial{}, ErrNoTrial
	}
	return startTrial(d.path, t, at)
}

// Commit implements Slots: current is flipped to the trial's slot, then
// the trial forgotten. A crash between the two leaves a trial whose slot
// is current, which Commit (called again) or the supervisor's start
// completes.
func (d *Dir) Commit(ctx context.Context) error {
	t, ok, err := d.Trial(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNoTrial
	}
	if err := d.link(t.Slot.Name); err != nil {
		return err
	}
	return d.dropTrial()
}

// Launch implements Slots: a trial is always a process of its own.
func (d *Dir) Launch(context.Context, Trial) (Launch, error) { return LaunchProcess, nil }

// Rollback implements Slots.
func (d *Dir) Rollback(ctx context.Context) error {
	if _, ok, err := d.Trial(ctx); err != nil {
		return err
	} else if !ok {
		return ErrNoTrial
	}
	return d.dropTrial()
}

func (d *Dir) dropTrial() error { return removeTrial(d.path) }

// link points current at slot name with one rename.
func (d *Dir) link(name string) error {
	tmp := filepath.Join(d.path, currentLink+".new")
	_ = os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		return fmt.Errorf("update: switch slot: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(d.path, currentLink)); err != nil {
		return fmt.Errorf("update: switch slot: %w", err)
	}
	return syncDir(d.path)
}
