package update

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/svc-vms/svc/shared/release"
)

// Poll is what the appliance tells the cloud when it asks for its release.
type Poll struct {
	Version string `json:"version"`
	Arch    string `json:"arch"`
	ARM     string `json:"arm,omitempty"`
	Slot    string `json:"slot,omitempty"`
	// Progress is the update under way, if any.
	Progress *Progress `json:"progress,omitempty"`
	// Result is the last update's outcome until the cloud has acknowledged
	// it (a Check that returned without error).
	Result *Result `json:"result,omitempty"`
}

// Offer is the release the cloud wants the appliance to run now.
type Offer struct {
	Release release.Envelope
	// URL is where the bundle is, absolute or relative to the cloud's.
	URL string
}

// Source is the cloud, as the Updater sees it.
type Source interface {
	// Check sends p and returns the release due now, or nil when none is.
	Check(ctx context.Context, p Poll) (*Offer, error)
	// Download returns the bundle from byte offset; resumed is false when
	// the source sent it from byte 0 instead. It returns ErrBeyondEnd when
	// the source's bundle ends at or before offset.
	Download(ctx context.Context, o Offer, offset int64) (body io.ReadCloser, resumed bool, err error)
}

// ErrBeyondEnd is returned by Source.Download when the bundle is no longer
// than the offset asked for.
var ErrBeyondEnd = errors.New("update: the bundle ends before the offset asked for")

// Results is where the outcome of the last update is kept (Dir).
type Results interface {
	LastResult() (Result, bool, error)
	SetResult(Result) error
}

// Progress is the update under way, for the status page and the cloud.
type Progress struct {
	// State is idle, downloading, verifying or trial_requested.
	State   string `json:"state"`
	Version string `json:"version,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	Size    int64  `json:"size,omitempty"`
	// Error is the last attempt's error when it will be tried again (a
	// download cut short resumes at the next poll).
	Error string `json:"error,omitempty"`
}

// States of Progress (release's, which the cloud checks).
const (
	StateIdle           = release.StateIdle
	StateDownloading    = release.StateDownloading
	StateVerifying      = release.StateVerifying
	StateTrialRequested = release.StateTrialRequested
)

// DefaultEvery is how often the Updater asks the cloud.
const DefaultEvery = 5 * time.Minute

// Updater brings the appliance to the release the cloud names.
type Updater struct {
	Slots   Slots
	Results Results
	Source  Source
	// Trusted are the release keys built in (release.Trusted).
	Trusted []ed25519.PublicKey
	// Version, Arch, ARM, Slot: what runs now.
	Version, Arch, ARM, Slot string
	// Kind is the kind of bundle Slots installs (release.KindBinary).
	Kind string
	// Every is the pause between polls; zero means DefaultEvery.
	Every time.Duration
	// Restart is called once a trial is requested: the daemon stops, and
	// the supervisor (or the boot loader) starts the trial.
	Restart func(Trial)
	Logger  *slog.Logger
	Now     func() time.Time

	mu       sync.Mutex
	progress Progress
}

// Run polls until ctx ends or a trial is requested.
func (u *Updater) Run(ctx context.Context) error {
	if u.Every == 0 {
		u.Every = DefaultEvery
	}
	if u.Logger == nil {
		u.Logger = slog.Default()
	}
	if u.Now == nil {
		u.Now = time.Now
	}
	for {
		t, err := u.Once(ctx)
		if err != nil && ctx.Err() == nil {
			u.Logger.Warn("update: will try again", "error", err.Error(), "in", u.Every.String())
		}
		if t != nil {
			u.Logger.Info("update: trial requested; restarting into it", "version", t.Slot.Version, "slot", t.Slot.Name)
			u.Restart(*t)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(u.Every):
		}
	}
}

// Progress is the update under way.
func (u *Updater) Progress() Progress {
	u.mu.Lock()
	defer u.mu.Unlock()
	p := u.progress
	if p.State == "" {
		p.State = StateIdle
	}
	return p
}

func (u *Updater) set(f func(p *Progress)) {
	u.mu.Lock()
	f(&u.progress)
	u.mu.Unlock()
}

// Once polls the cloud once and, when a release is due, downloads,
// verifies and stages it and requests its trial, which it returns. An
// error is one to try again later; a release that fails verification is
// recorded (Rejected) and reported, and not tried again.
func (u *Updater) Once(ctx context.Context) (*Trial, error) {
	if u.Now == nil {
		u.Now = time.Now
	}
	if u.Logger == nil {
		u.Logger = slog.Default()
	}
	last, haveLast, err := u.Results.LastResult()
	if err != nil {
		return nil, err
	}
	p := Poll{Version: u.Version, Arch: u.Arch, ARM: u.ARM, Slot: u.Slot}
	if pr := u.Progress(); pr.State != StateIdle || pr.Error != "" {
		p.Progress = &pr
	}
	if haveLast && !last.Reported {
		p.Result = &last
	}
	offer, err := u.Source.Check(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("update: ask the cloud: %w", err)
	}
	if p.Result != nil {
		last.Reported = true
		if err := u.Results.SetResult(last); err != nil {
			return nil, err
		}
	}
	if offer == nil {
		u.set(func(p *Progress) { *p = Progress{} })
		return nil, nil
	}
	// The signature first: nothing is written for a release this
	// appliance does not trust.
	m, err := offer.Release.Verify(u.Trusted)
	if err == nil {
		err = u.fits(m)
	}
	if err != nil {
		version := "unknown"
		if m.Version != "" {
			version = m.Version
		}
		if haveLast && last.Outcome == Rejected && last.Reason == err.Error() {
			return nil, nil // reported already
		}
		return nil, u.reject(Result{Version: version, SHA256: m.SHA256, Reason: err.Error()})
	}
	if m.Version == u.Version {
		u.set(func(p *Progress) { *p = Progress{} })
		return nil, nil
	}
	if haveLast && last.Failed() && last.Version == m.Version && last.SHA256 == m.SHA256 {
		return nil, nil // failed once; the cloud must offer another
	}
	return u.install(ctx, offer, m)
}

// fits checks that m is a bundle this appliance runs.
func (u *Updater) fits(m release.Manifest) error {
	switch {
	case m.Arch != u.Arch || m.ARM != u.ARM:
		return fmt.Errorf("update: release %s is for %s; this appliance is %s", m.Version, m.Platform(), release.Manifest{Arch: u.Arch, ARM: u.ARM}.Platform())
	case m.Kind != u.Kind:
		return fmt.Errorf("update: release %s is a %s; this appliance installs a %s", m.Version, m.Kind, u.Kind)
	}
	return nil
}

func (u *Updater) reject(r Result) error {
	r.From, r.Outcome, r.At = u.Version, Rejected, u.Now().UTC()
	u.Logger.Error("update: release rejected; nothing changed", "version", r.Version, "reason", r.Reason)
	u.set(func(p *Progress) { *p = Progress{} })
	return u.Results.SetResult(r)
}

// install downloads m's bundle into the inactive slot, checks it, and
// requests its trial.
func (u *Updater) install(ctx context.Context, o *Offer, m release.Manifest) (*Trial, error) {
	st, err := u.Slots.Stage(ctx, o.Release, m)
	if errors.Is(err, ErrTrialPending) {
		return nil, nil // the supervisor has not started it yet
	}
	if err != nil {
		return nil, err
	}
	u.set(func(p *Progress) {
		*p = Progress{State: StateDownloading, Version: m.Version, Bytes: st.Written(), Size: m.Size}
	})
	done, err := u.download(ctx, o, m, st)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		u.set(func(p *Progress) { p.Error = err.Error() })
		return nil, err
	}
	if !done {
		return nil, nil // rejected
	}
	u.set(func(p *Progress) { p.State, p.Error = StateVerifying, "" })
	r, err := u.Slots.OpenStaged(ctx)
	if err != nil {
		return nil, err
	}
	err = m.Check(r)
	_ = r.Close()
	if errors.Is(err, release.ErrMismatch) {
		if st, serr := u.Slots.Stage(ctx, o.Release, m); serr == nil {
			_ = st.Reset()
			_ = st.Close()
		}
		return nil, u.reject(Result{Version: m.Version, SHA256: m.SHA256, Reason: err.Error()})
	}
	if err != nil {
		return nil, err
	}
	t, err := u.Slots.RequestTrial(ctx, u.Now())
	if err != nil {
		return nil, err
	}
	u.set(func(p *Progress) { p.State = StateTrialRequested })
	return &t, nil
}

// download writes the rest of the bundle into st. done is false when the
// release was rejected (the source's bundle is shorter than its manifest
// says, or longer); err is an error to try again later.
func (u *Updater) download(ctx context.Context, o *Offer, m release.Manifest, st Staging) (done bool, err error) {
	if st.Written() == m.Size {
		return true, nil
	}
	body, resumed, err := u.Source.Download(ctx, *o, st.Written())
	if errors.Is(err, ErrBeyondEnd) {
		_ = st.Reset()
		return false, u.reject(Result{Version: m.Version, SHA256: m.SHA256,
			Reason: fmt.Sprintf("the cloud's bundle is shorter than its manifest's %d bytes (truncated)", m.Size)})
	}
	if err != nil {
		return false, fmt.Errorf("update: download %s: %w", m.Version, err)
	}
	defer body.Close()
	if !resumed && st.Written() > 0 {
		if err := st.Reset(); err != nil {
			return false, err
		}
	}
	counted := &progressWriter{w: st, add: func(n int) { u.set(func(p *Progress) { p.Bytes += int64(n) }) }}
	u.set(func(p *Progress) { p.Bytes = st.Written() })
	if _, err := io.Copy(counted, io.LimitReader(body, m.Size-st.Written()+1)); err != nil {
		return false, fmt.Errorf("update: download %s: stopped at %d of %d bytes (resumes): %w", m.Version, st.Written(), m.Size, err)
	}
	switch n := st.Written(); {
	case n > m.Size:
		_ = st.Reset()
		return false, u.reject(Result{Version: m.Version, SHA256: m.SHA256,
			Reason: fmt.Sprintf("%v: the cloud's bundle is longer than its manifest's %d bytes", release.ErrMismatch, m.Size)})
	case n < m.Size:
		return false, fmt.Errorf("update: download %s: stopped at %d of %d bytes (resumes)", m.Version, n, m.Size)
	}
	return true, nil
}

type progressWriter struct {
	w   io.Writer
	add func(int)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.add(n)
	return n, err
}
