package update

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/release"
)

var t0 = time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)

// script installs a shell script as slot a, current, with version "1".
func installScript(t *testing.T, body string) *Dir {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "svc-edge")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	d, installed, err := Install(filepath.Join(t.TempDir(), "slots"), exe, "1")
	require.NoError(t, err)
	require.True(t, installed)
	return d
}

// stage stages bundle as release version in d's inactive slot and
// requests its trial.
func stage(t *testing.T, d *Dir, version string, bundle []byte) Trial {
	t.Helper()
	ctx := context.Background()
	_, priv, _ := ed25519.GenerateKey(nil)
	m, err := release.Describe(bytes.NewReader(bundle), version, "amd64", "", release.KindBinary, t0)
	require.NoError(t, err)
	env, err := release.Sign(m, priv)
	require.NoError(t, err)
	st, err := d.Stage(ctx, env, m)
	require.NoError(t, err)
	_, err = st.Write(bundle)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	tr, err := d.RequestTrial(ctx, t0)
	require.NoError(t, err)
	return tr
}

func TestDir_StageResumeTrialCommit(t *testing.T) {
	ctx := context.Background()
	d := installScript(t, "exit 0")
	again, installed, err := Install(d.Path(), "/nonexistent", "9")
	require.NoError(t, err)
	require.False(t, installed, "an installed directory is left as it is")
	cur, err := again.Current(ctx)
	require.NoError(t, err)
	require.Equal(t, Slot{Name: "a", Version: "1", Path: filepath.Join(d.Path(), "a", Executable)}, cur)

	bundle := []byte("#!/bin/sh\necho release 2\n")
	_, priv, _ := ed25519.GenerateKey(nil)
	m, err := release.Describe(bytes.NewReader(bundle), "2", "amd64", "", release.KindBinary, t0)
	require.NoError(t, err)
	env, err := release.Sign(m, priv)
	require.NoError(t, err)

	// A download stops half way; the next Stage resumes after it.
	st, err := d.Stage(ctx, env, m)
	require.NoError(t, err)
	_, err = st.Write(bundle[:10])
	require.NoError(t, err)
	require.NoError(t, st.Close())
	st, err = d.Stage(ctx, env, m)
	require.NoError(t, err)
	require.EqualValues(t, 10, st.Written())
	_, err = st.Write(bundle[10:])
	require.NoError(t, err)
	require.NoError(t, st.Close())
	r, err := d.OpenStaged(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Check(r))
	r.Close()

	// Another release starts over.
	m3 := m
	m3.Version = "3"
	env3, err := release.Sign(m3, priv)
	require.NoError(t, err)
	st, err = d.Stage(ctx, env3, m3)
	require.NoError(t, err)
	require.EqualValues(t, 0, st.Written())
	_, err = st.Write(bundle)
	require.NoError(t, err)
	require.NoError(t, st.Close())

	tr, err := d.RequestTrial(ctx, t0)
	require.NoError(t, err)
	require.Equal(t, "b", tr.Slot.Name)
	require.Equal(t, "3", tr.Slot.Version)
	require.Equal(t, "1", tr.From)
	_, err = d.Stage(ctx, env, m)
	require.ErrorIs(t, err, ErrTrialPending)
	cur, _ = d.Current(ctx)
	require.Equal(t, "a", cur.Name, "requesting a trial changes nothing that starts")

	_, err = d.BeginTrial(ctx, t0)
	require.NoError(t, err)
	require.NoError(t, d.Commit(ctx))
	cur, _ = d.Current(ctx)
	require.Equal(t, Slot{Name: "b", Version: "3", Path: filepath.Join(d.Path(), "b", Executable)}, cur)
	got, err := os.ReadFile(cur.Path)
	require.NoError(t, err)
	require.Equal(t, bundle, got)
	_, ok, err := d.Trial(ctx)
	require.NoError(t, err)
	require.False(t, ok)
	require.ErrorIs(t, d.Commit(ctx), ErrNoTrial)
	require.ErrorIs(t, d.Rollback(ctx), ErrNoTrial)
}

func supervisor(d *Dir, timeout time.Duration) (*Supervisor, *bytes.Buffer) {
	var out bytes.Buffer
	return &Supervisor{Slots: d, Args: []string{"run"}, Stdout: io.Discard, Stderr: &out, Logger: slog.New(slog.DiscardHandler), TrialTimeout: timeout, StopGrace: 5 * time.Second,
		Now: func() time.Time { return t0 }}, &out
}

// A trial is judged by what the release says on fd 3, or by its exit, or
// by the clock.
func TestSupervisor_Trial(t *testing.T) {
	for name, tc := range map[string]struct {
		script  string
		timeout time.Duration
		outcome string
		reason  string
		current string
	}{
		"healthy":   {script: "echo ok >&3; exec sleep 60", timeout: time.Minute, outcome: Committed, current: "b"},
		"unhealthy": {script: "echo 'fail: the broker did not connect' >&3; exec sleep 60", timeout: time.Minute, outcome: RolledBack, reason: "the health check failed: the broker did not connect", current: "a"},
		"exits":     {script: "echo 'fatal error: out of memory' >&2; exit 3", timeout: time.Minute, outcome: RolledBack, reason: "the new release exited (exit status 3) before its health check passed; its last output: fatal error: out of memory", current: "a"},
		"hangs":     {script: "exec sleep 60", timeout: 100 * time.Millisecond, outcome: RolledBack, reason: "no health check result within 100ms", current: "a"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			d := installScript(t, "exec sleep 60")
			tr := stage(t, d, "2", []byte("#!/bin/sh\n"+tc.script+"\n"))
			s, _ := supervisor(d, tc.timeout)
			s.defaults()
			tctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := s.trial(tctx); done <- err }()
			if tc.outcome == Committed {
				// A committed release runs on: stop it once the result is in.
				waitFor(t, func() bool { _, ok, _ := d.LastResult(); return ok })
				cancel()
			}
			require.NoError(t, <-done)
			r, ok, err := d.LastResult()
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, Result{Version: "2", From: "1", Outcome: tc.outcome, Reason: tc.reason, SHA256: tr.SHA256, At: t0}, r)
			cur, err := d.Current(ctx)
			require.NoError(t, err)
			require.Equal(t, tc.current, cur.Name)
			_, ok, err = d.Trial(ctx)
			require.NoError(t, err)
			require.False(t, ok, "the trial is over")
		})
	}
}

// A supervisor that finds a trial started and not finished (it crashed,
// or the power went, during the trial) rolls back; one whose slot is
// already current had committed.
func TestSupervisor_RecoverInterruptedTrial(t *testing.T) {
	ctx := context.Background()
	d := installScript(t, "exec sleep 60")
	tr := stage(t, d, "2", []byte("#!/bin/sh\nexit 0\n"))
	_, err := d.BeginTrial(ctx, t0)
	require.NoError(t, err)
	s, _ := supervisor(d, time.Minute)
	s.defaults()
	require.NoError(t, s.recover(ctx))
	r, _, _ := d.LastResult()
	require.Equal(t, RolledBack, r.Outcome)
	require.Contains(t, r.Reason, "restarted during the trial")
	cur, _ := d.Current(ctx)
	require.Equal(t, "a", cur.Name)

	// The commit's switch was made; only the trial file was left.
	tr = stage(t, d, "3", []byte("#!/bin/sh\nexit 0\n"))
	_, err = d.BeginTrial(ctx, t0)
	require.NoError(t, err)
	require.NoError(t, d.link(tr.Slot.Name))
	require.NoError(t, s.recover(ctx))
	r, _, _ = d.LastResult()
	require.Equal(t, Committed, r.Outcome)
	require.Equal(t, "3", r.Version)
	cur, _ = d.Current(ctx)
	require.Equal(t, "b", cur.Name)
	_, ok, _ := d.Trial(ctx)
	require.False(t, ok)

	// A trial requested and not started is started, not rolled back.
	stage(t, d, "4", []byte("#!/bin/sh\nexit 0\n"))
	require.NoError(t, s.recover(ctx))
	tr, ok, _ = d.Trial(ctx)
	require.True(t, ok)
	require.False(t, tr.Started)
}

// waitFor polls cond until it holds, failing t after a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(5 * time.Millisecond) // the polling interval
	defer tick.Stop()
	for !cond() {
		require.True(t, time.Now().Before(deadline), "condition not met within a minute")
		<-tick.C
	}
}

// fakeSource offers one release and serves its bundle; it records polls.
type fakeSource struct {
	offer  *Offer
	bundle []byte
	polls  []Poll
}

func (f *fakeSource) Check(_ context.Context, p Poll) (*Offer, error) {
	f.polls = append(f.polls, p)
	return f.offer, nil
}

func (f *fakeSource) Download(_ context.Context, _ Offer, offset int64) (io.ReadCloser, bool, error) {
	if offset >= int64(len(f.bundle)) {
		return nil, false, ErrBeyondEnd
	}
	return io.NopCloser(bytes.NewReader(f.bundle[offset:])), offset > 0, nil
}

// The Updater rejects, before writing anything, a release for another
// architecture or kind; does nothing for the release it runs; reports a
// result once; and never tries again a release that failed.
func TestUpdater_Decisions(t *testing.T) {
	ctx := context.Background()
	pub, priv, _ := ed25519.GenerateKey(nil)
	bundle := []byte("#!/bin/sh\nexit 0\n")
	offer := func(version, arch string) *Offer {
		m, err := release.Describe(bytes.NewReader(bundle), version, arch, "", release.KindBinary, t0)
		require.NoError(t, err)
		env, err := release.Sign(m, priv)
		require.NoError(t, err)
		return &Offer{Release: env, URL: "/bundle"}
	}
	newUpdater := func(d *Dir, src Source) *Updater {
		return &Updater{Slots: d, Results: d, Source: src, Trusted: []ed25519.PublicKey{pub}, Version: "1", Arch: "amd64", Kind: release.KindBinary,
			Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 }}
	}

	d := installScript(t, "exec sleep 60")
	src := &fakeSource{offer: offer("2", "arm64"), bundle: bundle}
	u := newUpdater(d, src)
	tr, err := u.Once(ctx)
	require.NoError(t, err)
	require.Nil(t, tr)
	r, ok, err := d.LastResult()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Rejected, r.Outcome)
	require.Contains(t, r.Reason, "release 2 is for arm64; this appliance is amd64")
	_, err = os.Stat(filepath.Join(d.Path(), "b", "staging"))
	require.True(t, os.IsNotExist(err), "nothing was written")
	_, err = u.Once(ctx)
	require.NoError(t, err)
	require.NotNil(t, src.polls[1].Result, "the result goes with the next poll")
	_, err = u.Once(ctx)
	require.NoError(t, err)
	require.Nil(t, src.polls[2].Result, "once acknowledged, it is not sent again")

	src.offer = offer("1", "amd64")
	tr, err = u.Once(ctx)
	require.NoError(t, err)
	require.Nil(t, tr, "the release it runs")

	// A release that rolled back here is not tried again.
	src.offer = offer("2", "amd64")
	m, err := src.offer.Release.Verify([]ed25519.PublicKey{pub})
	require.NoError(t, err)
	require.NoError(t, d.SetResult(Result{Version: "2", SHA256: m.SHA256, Outcome: RolledBack, Reported: true, At: t0}))
	tr, err = u.Once(ctx)
	require.NoError(t, err)
	require.Nil(t, tr)
	_, ok, _ = d.Trial(ctx)
	require.False(t, ok)

	// Another build of it is.
	require.NoError(t, d.SetResult(Result{Version: "2", SHA256: "other", Outcome: RolledBack, Reported: true, At: t0}))
	tr, err = u.Once(ctx)
	require.NoError(t, err)
	require.NotNil(t, tr)
	require.Equal(t, "2", tr.Slot.Version)
	require.Equal(t, StateTrialRequested, u.Progress().State)
	got, err := os.ReadFile(tr.Slot.Path)
	require.NoError(t, err)
	require.Equal(t, bundle, got)
}
