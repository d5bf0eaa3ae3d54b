package update

import (
	"context"
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

// Partitions is Slots for the appliance image: two root partitions (A and
// B) holding root filesystem images (release.KindRootfs), a FAT boot
// partition whose ab.txt (BootState) the boot loader reads on every boot,
// and a state directory on the data partition.
//
//	BOOT/ab.txt              slot=, trial=, tries= (BootState)
//	STATE/staging.json       a download in progress: the envelope, the slot
//	                         it is written into, and the bytes made durable
//	STATE/a.version          the version each slot holds ("" by hand)
//	STATE/trial.json         a requested or running trial (Trial)
//	STATE/result.json        the last update's outcome (Result)
//
// A trial is a boot (Launch): RequestTrial writes ab.txt trial=<slot>
// tries=1, the supervisor marks the trial begun and reboots, and the boot
// script spends the try and boots the slot with svc.trial=1; a boot that
// hangs, panics or restarts before Commit is the committed slot's, which
// then finds the begun trial and rolls it back.
type Partitions struct {
	// Boot is the boot partition's mount directory.
	Boot string
	// A and B are the root partitions' devices.
	A, B string
	// State is a directory on the data partition.
	State string
	// Cmdline is the kernel command line; nil reads /proc/cmdline.
	Cmdline func() (string, error)
	// Kernel is where a root image holds its kernel ("kernel/vmlinuz"):
	// before a trial is requested it is copied out of the staged root to
	// the boot partition as vmlinuz-<slot> (InstallKernel). Empty: the
	// boot partition's kernels stay.
	Kernel string
	// InstallKernel copies the kernel out of slot's staged root to the
	// boot partition; nil with Kernel set: the root is mounted read-only
	// as squashfs and Kernel copied (Linux only). Tests set it.
	InstallKernel func(ctx context.Context, slot Slot, boot string) error
}

// partitionsConfig is partitions.json.
type partitionsConfig struct {
	Boot   string `json:"boot"`
	A      string `json:"a"`
	B      string `json:"b"`
	Kernel string `json:"kernel,omitempty"`
}

// partitionsFile, in the state directory, is the Partitions the
// supervisor opened, so that the daemon it starts (told the state
// directory, EnvSlots) opens the same ones (Open).
const partitionsFile = "partitions.json"

var _ Supervised = (*Partitions)(nil)

const (
	stagingState = "staging.json"
	// checkpoint is how many bytes Staging writes between durable records
	// of its progress.
	checkpoint = 8 << 20
)

// OpenPartitions checks p's configuration and makes its state directory.
func OpenPartitions(p *Partitions) (*Partitions, error) {
	for name, v := range map[string]string{"boot": p.Boot, "a": p.A, "b": p.B, "state": p.State} {
		if v == "" {
			return nil, fmt.Errorf("update: partitions: %s is not set", name)
		}
	}
	if p.A == p.B {
		return nil, fmt.Errorf("update: partitions: a and b are both %s", p.A)
	}
	if err := os.MkdirAll(p.State, 0o755); err != nil {
		return nil, fmt.Errorf("update: partitions: %w", err)
	}
	if _, err := os.Stat(p.Boot); err != nil {
		return nil, fmt.Errorf("update: partitions: boot partition: %w", err)
	}
	if p.InstallKernel == nil && p.Kernel != "" {
		p.InstallKernel = kernelFromRoot(p.Kernel)
	}
	cfg := partitionsConfig{Boot: p.Boot, A: p.A, B: p.B, Kernel: p.Kernel}
	var was partitionsConfig
	if ok, err := readJSON(filepath.Join(p.State, partitionsFile), &was); err != nil || !ok || was != cfg {
		if err := writeJSON(filepath.Join(p.State, partitionsFile), cfg); err != nil {
			return nil, fmt.Errorf("update: partitions: %w", err)
		}
	}
	return p, nil
}

// Open opens the slots a supervisor made at path, and names the kind of
// release they install: Partitions (release.KindRootfs) when path is a
// state directory OpenPartitions wrote, else a Dir (release.KindBinary).
func Open(path string) (Supervised, string, error) {
	var cfg partitionsConfig
	ok, err := readJSON(filepath.Join(path, partitionsFile), &cfg)
	if err != nil {
		return nil, "", fmt.Errorf("update: %w", err)
	}
	if ok {
		s, err := OpenPartitions(&Partitions{Boot: cfg.Boot, A: cfg.A, B: cfg.B, Kernel: cfg.Kernel, State: path})
		if err != nil {
			return nil, "", err
		}
		return s, release.KindRootfs, nil
	}
	d, err := OpenDir(path)
	if err != nil {
		return nil, "", err
	}
	return d, release.KindBinary, nil
}

// RecordRunning notes the version of the slot the system booted when the
// state directory does not know it (the slot the installer flashed), so
// that the fleet sees what an update replaces. A trial's boot is left to
// RequestTrial's record.
func (p *Partitions) RecordRunning(version string) error {
	slot, trial, err := p.running()
	if err != nil || slot == "" || trial || version == "" {
		return err
	}
	path := filepath.Join(p.State, slot+".version")
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := writeBytes(path, []byte(version)); err != nil {
		return fmt.Errorf("update: partitions: %w", err)
	}
	return nil
}

// Path is the state directory.
func (p *Partitions) Path() string { return p.State }

// BootState reads ab.txt by the boot script's rules: a missing or damaged
// file is slot a.
func (p *Partitions) BootState() (BootState, error) {
	b, err := os.ReadFile(filepath.Join(p.Boot, BootFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return BootState{}, fmt.Errorf("update: read %s: %w", BootFile, err)
	}
	return ParseBootState(b), nil
}

// setBootState writes ab.txt: a temporary file in the same directory,
// fsync'd, renamed over it, and the directory synced, so a power cut
// leaves the old file or the new (the boot loader's own in-place write is
// what can leave a damaged one, read as slot a).
func (p *Partitions) setBootState(s BootState) error {
	if err := writeBytes(filepath.Join(p.Boot, BootFile), s.Marshal()); err != nil {
		return fmt.Errorf("update: write %s: %w", BootFile, err)
	}
	return nil
}

// running is the slot this system booted (svc.slot) and whether as the
// trial; slot is "" when the command line does not say (not booted by the
// A/B script).
func (p *Partitions) running() (slot string, trial bool, err error) {
	var line string
	if p.Cmdline != nil {
		line, err = p.Cmdline()
	} else {
		var b []byte
		b, err = os.ReadFile("/proc/cmdline")
		line = string(b)
	}
	if err != nil {
		return "", false, fmt.Errorf("update: kernel command line: %w", err)
	}
	return cmdlineVar(line, "svc.slot"), cmdlineVar(line, "svc.trial") == "1", nil
}

func (p *Partitions) slot(name string) Slot {
	v, _ := os.ReadFile(filepath.Join(p.State, name+".version"))
	dev := p.A
	if name == "b" {
		dev = p.B
	}
	return Slot{Name: name, Version: strings.TrimSpace(string(v)), Path: dev}
}

// Current implements Slots: ab.txt's committed slot.
func (p *Partitions) Current(context.Context) (Slot, error) {
	s, err := p.BootState()
	if err != nil {
		return Slot{}, err
	}
	return p.slot(s.Slot), nil
}

// Inactive implements Slots: the other one.
func (p *Partitions) Inactive(context.Context) (Slot, error) {
	s, err := p.BootState()
	if err != nil {
		return Slot{}, err
	}
	return p.slot(other(s.Slot)), nil
}

// stagingRecord is staging.json.
type stagingRecord struct {
	Slot     string `json:"slot"`
	Envelope string `json:"envelope"`
	Written  int64  `json:"written"`
}

func (p *Partitions) staged() (stagingRecord, bool, error) {
	var r stagingRecord
	ok, err := readJSON(filepath.Join(p.State, stagingState), &r)
	if err != nil {
		return stagingRecord{}, false, fmt.Errorf("update: staging: %w", err)
	}
	return r, ok, nil
}

// Stage implements Slots: the bundle is written straight into the
// inactive partition, resuming at the bytes staging.json records as
// durable. It refuses a bundle larger than the partition, and the
// partition the system runs from (ab.txt and the boot disagreeing).
func (p *Partitions) Stage(ctx context.Context, env release.Envelope, m release.Manifest) (Staging, error) {
	if _, ok, err := p.Trial(ctx); err != nil {
		return nil, err
	} else if ok {
		return nil, ErrTrialPending
	}
	in, err := p.Inactive(ctx)
	if err != nil {
		return nil, err
	}
	if run, _, err := p.running(); err != nil {
		return nil, err
	} else if run == in.Name {
		return nil, fmt.Errorf("update: stage: the system runs from slot %s, which %s names inactive", run, BootFile)
	}
	f, err := os.OpenFile(in.Path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("update: stage: %w", err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err == nil && size < m.Size {
		err = fmt.Errorf("release %s is %d bytes; partition %s holds %d", m.Version, m.Size, in.Path, size)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("update: stage: %w", err)
	}
	rec, ok, err := p.staged()
	if err != nil || !ok || rec.Slot != in.Name || rec.Envelope != string(env.Marshal()) || rec.Written > m.Size {
		rec = stagingRecord{Slot: in.Name, Envelope: string(env.Marshal())}
		err = writeJSON(filepath.Join(p.State, stagingState), rec)
	}
	if err == nil {
		_, err = f.Seek(rec.Written, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("update: stage: %w", err)
	}
	return &deviceStaging{p: p, f: f, rec: rec, n: rec.Written}, nil
}

// deviceStaging writes into a partition; rec.Written is what staging.json
// says is durable, n what was written.
type deviceStaging struct {
	p   *Partitions
	f   *os.File
	rec stagingRecord
	n   int64
}

func (s *deviceStaging) Write(b []byte) (int, error) {
	n, err := s.f.Write(b)
	s.n += int64(n)
	if err == nil && s.n-s.rec.Written >= checkpoint {
		err = s.record()
	}
	return n, err
}

// record makes what was written durable, then says so.
func (s *deviceStaging) record() error {
	if err := s.f.Sync(); err != nil {
		return err
	}
	s.rec.Written = s.n
	return writeJSON(filepath.Join(s.p.State, stagingState), s.rec)
}

func (s *deviceStaging) Written() int64 { return s.n }

func (s *deviceStaging) Reset() error {
	s.n = 0
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return s.record()
}

func (s *deviceStaging) Close() error {
	err := s.record()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// OpenStaged implements Slots: the partition's first bytes, as many as
// were staged.
func (p *Partitions) OpenStaged(ctx context.Context) (io.ReadCloser, error) {
	rec, in, err := p.stagedFor(ctx)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(in.Path)
	if err != nil {
		return nil, fmt.Errorf("update: read staged: %w", err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, rec.Written), f}, nil
}

// stagedFor is the staging record of the inactive slot, or ErrNotStaged.
func (p *Partitions) stagedFor(ctx context.Context) (stagingRecord, Slot, error) {
	in, err := p.Inactive(ctx)
	if err != nil {
		return stagingRecord{}, Slot{}, err
	}
	rec, ok, err := p.staged()
	if err != nil {
		return stagingRecord{}, Slot{}, err
	}
	if !ok || rec.Slot != in.Name || rec.Written == 0 {
		return stagingRecord{}, Slot{}, ErrNotStaged
	}
	return rec, in, nil
}

// RequestTrial implements Slots: the slot's version is recorded, its
// kernel installed (InstallKernel), trial.json written, then ab.txt asks
// the boot loader for one trial boot (trial=<slot> tries=1). Nothing
// reboots here: the supervisor does, at Launch.
func (p *Partitions) RequestTrial(ctx context.Context, at time.Time) (Trial, error) {
	if _, ok, err := p.Trial(ctx); err != nil {
		return Trial{}, err
	} else if ok {
		return Trial{}, ErrTrialPending
	}
	rec, in, err := p.stagedFor(ctx)
	if err != nil {
		return Trial{}, err
	}
	env, err := release.ParseEnvelope([]byte(rec.Envelope))
	if err != nil {
		return Trial{}, fmt.Errorf("update: request trial: %w", err)
	}
	m, err := unverified(env)
	if err != nil {
		return Trial{}, fmt.Errorf("update: request trial: %w", err)
	}
	if rec.Written != m.Size {
		return Trial{}, ErrNotStaged
	}
	cur, err := p.Current(ctx)
	if err != nil {
		return Trial{}, err
	}
	if err := writeBytes(filepath.Join(p.State, in.Name+".version"), []byte(m.Version)); err != nil {
		return Trial{}, fmt.Errorf("update: request trial: %w", err)
	}
	in = p.slot(in.Name)
	if p.InstallKernel != nil {
		if err := p.InstallKernel(ctx, in, p.Boot); err != nil {
			return Trial{}, fmt.Errorf("update: request trial: install the kernel: %w", err)
		}
	}
	if err := os.Remove(filepath.Join(p.State, stagingState)); err != nil {
		return Trial{}, fmt.Errorf("update: request trial: %w", err)
	}
	t := Trial{Slot: in, From: cur.Version, SHA256: m.SHA256, RequestedAt: at.UTC()}
	if err := writeTrial(p.State, t, "request trial"); err != nil {
		return Trial{}, err
	}
	if err := p.setBootState(BootState{Slot: cur.Name, Trial: in.Name, Tries: 1}); err != nil {
		return Trial{}, err
	}
	return t, nil
}

// Trial implements Slots.
func (p *Partitions) Trial(context.Context) (Trial, bool, error) { return readTrial(p.State) }

// Launch implements Slots: LaunchRunning when the system booted t's slot
// on trial (svc.trial=1), else LaunchReboot.
func (p *Partitions) Launch(_ context.Context, t Trial) (Launch, error) {
	slot, trial, err := p.running()
	if err != nil {
		return 0, err
	}
	if trial && slot == t.Slot.Name {
		return LaunchRunning, nil
	}
	return LaunchReboot, nil
}

// BeginTrial implements Slots. Before the trial's boot it makes sure
// ab.txt asks for it (RequestTrial wrote it; this repairs a write a power
// cut lost) and marks the trial begun, so that the next boot, if it is not
// the trial's, rolls it back; on the trial's boot (the try spent by the
// boot loader) it only marks it.
func (p *Partitions) BeginTrial(ctx context.Context, at time.Time) (Trial, error) {
	t, ok, err := p.Trial(ctx)
	if err != nil {
		return Trial{}, err
	}
	if !ok {
		return Trial{}, ErrNoTrial
	}
	if launch, err := p.Launch(ctx, t); err != nil {
		return Trial{}, err
	} else if launch == LaunchReboot && !t.Started {
		s, err := p.BootState()
		if err != nil {
			return Trial{}, err
		}
		if s.Trial != t.Slot.Name || s.Tries != 1 {
			if err := p.setBootState(BootState{Slot: s.Slot, Trial: t.Slot.Name, Tries: 1}); err != nil {
				return Trial{}, err
			}
		}
	}
	return startTrial(p.State, t, at)
}

// Commit implements Slots: ab.txt names the trial's slot committed, with
// no trial, then the trial is forgotten.
func (p *Partitions) Commit(ctx context.Context) error {
	t, ok, err := p.Trial(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNoTrial
	}
	if err := p.setBootState(BootState{Slot: t.Slot.Name}); err != nil {
		return err
	}
	return p.dropTrial()
}

// Rollback implements Slots: ab.txt keeps its committed slot and loses
// the trial (a try not spent is not spent later), then the trial is
// forgotten.
func (p *Partitions) Rollback(ctx context.Context) error {
	if _, ok, err := p.Trial(ctx); err != nil {
		return err
	} else if !ok {
		return ErrNoTrial
	}
	s, err := p.BootState()
	if err != nil {
		return err
	}
	if err := p.setBootState(BootState{Slot: s.Slot}); err != nil {
		return err
	}
	return p.dropTrial()
}

func (p *Partitions) dropTrial() error { return removeTrial(p.State) }

// LastResult is the last update's outcome; ok is false before the first.
func (p *Partitions) LastResult() (Result, bool, error) { return lastResult(p.State) }

// SetResult records an update's outcome.
func (p *Partitions) SetResult(r Result) error { return setResult(p.State, r) }
