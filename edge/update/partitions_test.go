package update

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/release"
)

// abDisk is an appliance's disk in files: the boot partition a directory,
// the root partitions files, the kernel command line what the last
// simulated boot put there.
type abDisk struct {
	p       *Partitions
	cmdline string
	reboots int
}

const partSize = 64 << 10

// newABDisk is a freshly flashed disk (mkab.sh's ab.txt, version 1 in
// slot a), booted once.
func newABDisk(t testing.TB) *abDisk {
	t.Helper()
	dir := t.TempDir()
	boot := filepath.Join(dir, "boot")
	require.NoError(t, os.Mkdir(boot, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(boot, BootFile), []byte("slot=a\ntrial=\ntries=0\n"), 0o644))
	for _, part := range []string{"p2", "p3"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, part), make([]byte, partSize), 0o644))
	}
	d := &abDisk{}
	p, err := OpenPartitions(&Partitions{Boot: boot, A: filepath.Join(dir, "p2"), B: filepath.Join(dir, "p3"), State: filepath.Join(dir, "perm", "update"),
		Cmdline: func() (string, error) { return d.cmdline, nil }})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(p.State, "a.version"), []byte("1"), 0o644))
	d.p = p
	d.boot(t)
	return d
}

// boot does what boot.cmd does: reads ab.txt, writes it back when it
// spends a trial's try, and boots a slot with its command line.
func (d *abDisk) boot(t testing.TB) (slot string, trial bool) {
	t.Helper()
	path := filepath.Join(d.p.Boot, BootFile)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	s := ParseBootState(raw)
	slot, trial, next := s.Boot()
	if next != s {
		require.NoError(t, os.WriteFile(path, next.Marshal(), 0o644))
	}
	d.cmdline = s.Cmdline(slot, trial)
	return slot, trial
}

func (d *abDisk) abTxt(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.p.Boot, BootFile))
	require.NoError(t, err)
	return string(b)
}

// rootfsOffer is a signed rootfs release of bundle.
func rootfsOffer(t testing.TB, priv ed25519.PrivateKey, version string, bundle []byte) *Offer {
	t.Helper()
	m, err := release.Describe(bytes.NewReader(bundle), version, "amd64", "", release.KindRootfs, t0)
	require.NoError(t, err)
	env, err := release.Sign(m, priv)
	require.NoError(t, err)
	return &Offer{Release: env, URL: "/bundle"}
}

func partitionsUpdater(d *abDisk, pub ed25519.PublicKey, src Source) *Updater {
	return &Updater{Slots: d.p, Results: d.p, Source: src, Trusted: []ed25519.PublicKey{pub}, Version: "1", Arch: "amd64", Kind: release.KindRootfs,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 }}
}

// partitionsSupervisor runs script as the daemon of whatever slot booted;
// its Reboot counts and ends Run.
func partitionsSupervisor(t *testing.T, d *abDisk, script string) (*Supervisor, context.Context, context.CancelFunc) {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "svc-edge")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	// A bound, so that a supervisor that never reboots fails the test
	// instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	s := &Supervisor{Slots: d.p, Exe: exe, Args: []string{"run"}, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{},
		Logger: slog.New(slog.DiscardHandler), TrialTimeout: time.Minute, StopGrace: 5 * time.Second, Now: func() time.Time { return t0 },
		Reboot: func() error { d.reboots++; cancel(); return nil }}
	return s, ctx, cancel
}

// requestTrial downloads and checks bundle as version 2 into slot b and
// requests its trial; ab.txt is then what boot.cmd reads as "start b once".
func requestTrial(t *testing.T, d *abDisk, bundle []byte) Trial {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(nil)
	u := partitionsUpdater(d, pub, &fakeSource{offer: rootfsOffer(t, priv, "2", bundle), bundle: bundle})
	tr, err := u.Once(context.Background())
	require.NoError(t, err)
	require.NotNil(t, tr)
	require.Equal(t, Slot{Name: "b", Version: "2", Path: d.p.B}, tr.Slot)
	require.Equal(t, "slot=a\ntrial=b\ntries=1\n", d.abTxt(t))
	part, err := os.ReadFile(d.p.B)
	require.NoError(t, err)
	require.Equal(t, bundle, part[:len(bundle)], "the bundle is in partition b")
	return *tr
}

// rebootIntoTrial runs the supervisor on the committed slot: it begins the
// trial and reboots; the boot loader then spends the try on slot b.
func rebootIntoTrial(t *testing.T, d *abDisk) {
	t.Helper()
	s, ctx, _ := partitionsSupervisor(t, d, "exec sleep 60")
	require.NoError(t, s.Run(ctx))
	require.Equal(t, 1, d.reboots)
	tr, ok, err := d.p.Trial(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, tr.Started, "begun before the reboot")
	slot, trial := d.boot(t)
	require.Equal(t, "b", slot)
	require.True(t, trial)
	require.Equal(t, "slot=a\ntrial=b\ntries=0\n", d.abTxt(t), "the try is spent before the trial boots")
}

func TestPartitions_GoodUpdateCommitsOnTrialBoot(t *testing.T) {
	ctx := context.Background()
	d := newABDisk(t)
	cur, err := d.p.Current(ctx)
	require.NoError(t, err)
	require.Equal(t, Slot{Name: "a", Version: "1", Path: d.p.A}, cur)
	tr := requestTrial(t, d, bytes.Repeat([]byte("root filesystem 2\n"), 1000))
	rebootIntoTrial(t, d)

	// The trial boot's supervisor runs the daemon on trial; its health
	// check passes; ab.txt commits b.
	r := superviseUntilResult(t, d, "echo ok >&3; exec sleep 60")
	require.Equal(t, Result{Version: "2", From: "1", Outcome: Committed, SHA256: tr.SHA256, At: t0}, r)
	require.Equal(t, "slot=b\ntrial=\ntries=0\n", d.abTxt(t))
	require.Equal(t, 1, d.reboots, "a committed release runs on")
	_, ok, _ := d.p.Trial(ctx)
	require.False(t, ok)
	cur, err = d.p.Current(ctx)
	require.NoError(t, err)
	require.Equal(t, Slot{Name: "b", Version: "2", Path: d.p.B}, cur)
	slot, trial := d.boot(t)
	require.Equal(t, "b", slot, "the next boot is the committed b")
	require.False(t, trial)
}

func TestPartitions_FailedHealthCheckRollsBack(t *testing.T) {
	ctx := context.Background()
	d := newABDisk(t)
	tr := requestTrial(t, d, []byte("root filesystem 2"))
	rebootIntoTrial(t, d)

	s, sctx, _ := partitionsSupervisor(t, d, "echo 'fail: the broker did not connect' >&3; exec sleep 60")
	require.NoError(t, s.Run(sctx), "the trial boot rolls back and reboots")
	require.Equal(t, 2, d.reboots)
	r, _, err := d.p.LastResult()
	require.NoError(t, err)
	require.Equal(t, Result{Version: "2", From: "1", Outcome: RolledBack, Reason: "the health check failed: the broker did not connect", SHA256: tr.SHA256, At: t0}, r)
	require.Equal(t, "slot=a\ntrial=\ntries=0\n", d.abTxt(t))
	_, ok, _ := d.p.Trial(ctx)
	require.False(t, ok)
	slot, trial := d.boot(t)
	require.Equal(t, "a", slot)
	require.False(t, trial)
}

// A trial boot that hangs, panics or restarts before it commits leaves the
// try spent: the boot loader boots the committed slot, whose supervisor
// finds the begun trial and reports it rolled back.
func TestPartitions_TrialBootThatNeverCommitsRollsBack(t *testing.T) {
	ctx := context.Background()
	d := newABDisk(t)
	tr := requestTrial(t, d, []byte("root filesystem 2"))
	rebootIntoTrial(t, d)
	slot, trial := d.boot(t) // the trial kernel panicked: panic=10 reboots
	require.Equal(t, "a", slot)
	require.False(t, trial)

	r := superviseUntilResult(t, d, "exec sleep 60")
	require.Equal(t, RolledBack, r.Outcome)
	require.Equal(t, tr.SHA256, r.SHA256)
	require.Contains(t, r.Reason, "slot b's boot did not come up")
	require.Contains(t, r.Reason, "the boot loader started slot a again")
	require.Equal(t, 1, d.reboots, "the committed slot runs on")
	require.Equal(t, "slot=a\ntrial=\ntries=0\n", d.abTxt(t))
	_, ok, _ := d.p.Trial(ctx)
	require.False(t, ok)
}

// A bundle shorter than its manifest, or with another SHA-256, is
// rejected before ab.txt changes.
func TestPartitions_BadBundleRejectedBeforeABChanges(t *testing.T) {
	bundle := []byte("root filesystem 2")
	for name, served := range map[string][]byte{
		"truncated": bundle[:5],
		"bad hash":  []byte("root filesystem X"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			d := newABDisk(t)
			pub, priv, _ := ed25519.GenerateKey(nil)
			u := partitionsUpdater(d, pub, &fakeSource{offer: rootfsOffer(t, priv, "2", bundle), bundle: served})
			for range 2 { // a truncated download first resumes, then is found short
				tr, _ := u.Once(ctx)
				require.Nil(t, tr)
			}
			r, ok, err := d.p.LastResult()
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, Rejected, r.Outcome)
			require.Equal(t, "slot=a\ntrial=\ntries=0\n", d.abTxt(t))
			_, ok, _ = d.p.Trial(ctx)
			require.False(t, ok)
			in, _ := d.p.Inactive(ctx)
			require.Equal(t, "", in.Version)
		})
	}
}

// A download cut short resumes from what staging.json records; a partition
// too small, and the partition the system runs from, are refused.
func TestPartitions_StageResumesAndRefuses(t *testing.T) {
	ctx := context.Background()
	d := newABDisk(t)
	_, priv, _ := ed25519.GenerateKey(nil)
	bundle := []byte("root filesystem 2, in two pieces")
	o := rootfsOffer(t, priv, "2", bundle)
	m, err := unverified(o.Release)
	require.NoError(t, err)
	st, err := d.p.Stage(ctx, o.Release, m)
	require.NoError(t, err)
	_, err = st.Write(bundle[:10])
	require.NoError(t, err)
	require.NoError(t, st.Close())
	st, err = d.p.Stage(ctx, o.Release, m)
	require.NoError(t, err)
	require.EqualValues(t, 10, st.Written())
	_, err = st.Write(bundle[10:])
	require.NoError(t, err)
	require.NoError(t, st.Close())
	r, err := d.p.OpenStaged(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Check(r))
	require.NoError(t, r.Close())

	big := rootfsOffer(t, priv, "3", make([]byte, partSize+1))
	bm, _ := unverified(big.Release)
	_, err = d.p.Stage(ctx, big.Release, bm)
	require.ErrorContains(t, err, "partition")

	// ab.txt says a is committed, but the system booted b: b is not
	// written over.
	d.cmdline = BootState{Slot: "a"}.Cmdline("b", false)
	_, err = d.p.Stage(ctx, o.Release, m)
	require.ErrorContains(t, err, "runs from slot b")
}

// ab.txt is read as boot.cmd reads it: a missing, empty or damaged file
// is slot a with no trial, and a trial boots only with a try left.
func TestParseBootState(t *testing.T) {
	for name, tc := range map[string]struct {
		in    string
		want  BootState
		boots string
		trial bool
	}{
		"flashed":          {in: "slot=a\ntrial=\ntries=0\n", want: BootState{Slot: "a"}, boots: "a"},
		"committed b":      {in: "slot=b\ntrial=\ntries=0\n", want: BootState{Slot: "b"}, boots: "b"},
		"trial requested":  {in: "slot=a\ntrial=b\ntries=1\n", want: BootState{Slot: "a", Trial: "b", Tries: 1}, boots: "b", trial: true},
		"try spent":        {in: "slot=a\ntrial=b\ntries=0\n", want: BootState{Slot: "a", Trial: "b"}, boots: "a"},
		"u-boot's export":  {in: "slot=b\ntrial=a\ntries=1\x00", want: BootState{Slot: "b", Trial: "a", Tries: 1}, boots: "a", trial: true},
		"missing":          {in: "", want: BootState{Slot: "a"}, boots: "a"},
		"garbage":          {in: "\xff\xfe\x00zz", want: BootState{Slot: "a"}, boots: "a"},
		"cut mid-write":    {in: "slot=b\ntrial=a\ntr", want: BootState{Slot: "b", Trial: "a"}, boots: "b"},
		"cut in slot":      {in: "slo", want: BootState{Slot: "a"}, boots: "a"},
		"unknown slot":     {in: "slot=c\ntrial=\ntries=0\n", want: BootState{Slot: "a"}, boots: "a"},
		"tries not number": {in: "slot=a\ntrial=b\ntries=x\n", want: BootState{Slot: "a", Trial: "b"}, boots: "a"},
	} {
		t.Run(name, func(t *testing.T) {
			s := ParseBootState([]byte(tc.in))
			require.Equal(t, tc.want, s)
			slot, trial, _ := s.Boot()
			require.Equal(t, tc.boots, slot)
			require.Equal(t, tc.trial, trial)
		})
	}

	d := newABDisk(t)
	require.NoError(t, os.WriteFile(filepath.Join(d.p.Boot, BootFile), []byte("sl\x00\x00"), 0o644))
	cur, err := d.p.Current(context.Background())
	require.NoError(t, err)
	require.Equal(t, "a", cur.Name)
	require.NoError(t, os.Remove(filepath.Join(d.p.Boot, BootFile)))
	cur, err = d.p.Current(context.Background())
	require.NoError(t, err)
	require.Equal(t, "a", cur.Name)
}

// A commit cut short after ab.txt named the trial's slot (trial.json
// still there) is completed at the next boot, not rolled back.
func TestPartitions_InterruptedCommitCompletes(t *testing.T) {
	ctx := context.Background()
	d := newABDisk(t)
	requestTrial(t, d, []byte("root filesystem 2"))
	rebootIntoTrial(t, d)
	require.NoError(t, d.p.setBootState(BootState{Slot: "b"})) // the power went here
	slot, trial := d.boot(t)
	require.Equal(t, "b", slot)
	require.False(t, trial)

	r := superviseUntilResult(t, d, "exec sleep 60")
	require.Equal(t, Committed, r.Outcome)
	require.Equal(t, "slot=b\ntrial=\ntries=0\n", d.abTxt(t))
	_, ok, _ := d.p.Trial(ctx)
	require.False(t, ok)
}

// TestOpen_PartitionsAsTheSupervisorOpenedThem: the daemon, told only the
// state directory, opens the supervisor's Partitions (installing rootfs
// releases), and a Dir as before.
func TestOpen_PartitionsAsTheSupervisorOpenedThem(t *testing.T) {
	d := newABDisk(t)
	s, kind, err := Open(d.p.State)
	require.NoError(t, err)
	require.Equal(t, release.KindRootfs, kind)
	p, ok := s.(*Partitions)
	require.True(t, ok, "%T", s)
	require.Equal(t, []string{d.p.Boot, d.p.A, d.p.B, d.p.State}, []string{p.Boot, p.A, p.B, p.State})

	dir := filepath.Join(t.TempDir(), "slots")
	exe := filepath.Join(t.TempDir(), Executable)
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	_, _, err = Install(dir, exe, "1")
	require.NoError(t, err)
	s, kind, err = Open(dir)
	require.NoError(t, err)
	require.Equal(t, release.KindBinary, kind)
	require.IsType(t, &Dir{}, s)

	_, _, err = Open(t.TempDir())
	require.Error(t, err, "neither")
}

// TestPartitions_RecordRunning: the flashed slot's version is recorded
// once, from the running binary, and never over a recorded one or on a
// trial's boot.
func TestPartitions_RecordRunning(t *testing.T) {
	d := newABDisk(t)
	version := func(slot string) string {
		b, err := os.ReadFile(filepath.Join(d.p.State, slot+".version"))
		if os.IsNotExist(err) {
			return ""
		}
		require.NoError(t, err)
		return string(b)
	}
	require.NoError(t, os.Remove(filepath.Join(d.p.State, "a.version")))
	require.NoError(t, d.p.RecordRunning("1.0.0"))
	require.Equal(t, "1.0.0", version("a"))
	require.NoError(t, d.p.RecordRunning("9.9.9"))
	require.Equal(t, "1.0.0", version("a"), "a recorded version stays")

	d.cmdline = BootState{Slot: "a"}.Cmdline("b", true)
	require.NoError(t, d.p.RecordRunning("2.0.0"))
	require.Equal(t, "", version("b"), "a trial's version is RequestTrial's to record")
}

// superviseUntilResult runs a supervisor on d, whose daemon is script,
// until the update's result is recorded, stops it, and returns the result.
func superviseUntilResult(t *testing.T, d *abDisk, script string) Result {
	t.Helper()
	s, ctx, cancel := partitionsSupervisor(t, d, script)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitFor(t, func() bool { _, ok, _ := d.p.LastResult(); return ok })
	cancel()
	require.NoError(t, <-done)
	r, _, err := d.p.LastResult()
	require.NoError(t, err)
	return r
}
