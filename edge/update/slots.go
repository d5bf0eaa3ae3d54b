// Package update installs signed releases on a site appliance and returns
// to the previous one on its own when a release does not prove healthy
// (DESIGN.md, "Appliance lifecycle"; docs/decisions.md, "Signed updates").
//
// Three parts:
//
//   - Slots: where releases are installed, two of them, one current and
//     one inactive, behind a small interface. Dir is the implementation for
//     an ordinary Linux with systemd (two directories of svc-edge binaries
//     and a current symlink); Partitions is the image's (A/B root
//     partitions, with a trial boot by U-Boot and ab.txt).
//   - Updater: runs inside the daemon. It asks the cloud for the release
//     the appliance should run, verifies the manifest's signature before
//     anything changes, downloads the bundle into the inactive slot
//     (resuming where a download stopped), checks its size and SHA-256,
//     asks for one trial start, and reports every outcome.
//   - Supervisor: the small process systemd runs (`svc-edge supervise`).
//     It runs the current slot's daemon, starts a requested trial, waits
//     for the trial's health check on a pipe, and commits, or rolls back
//     when the trial fails its check, exits, or does not answer in time.
//
// It may import the standard library, edge/durable, shared/release and
// shared/edgeauth.
package update

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/svc-vms/svc/shared/release"
)

// Slot is one of the two places a release is installed.
type Slot struct {
	// Name is "a" or "b".
	Name string `json:"name"`
	// Version is the release installed there; "" for what the installer
	// put there by hand (no signed manifest).
	Version string `json:"version,omitempty"`
	// Path is what runs: the executable (Dir) or the partition.
	Path string `json:"path"`
}

// Trial is a trial start requested of the inactive slot.
type Trial struct {
	Slot        Slot      `json:"slot"`
	From        string    `json:"from"`   // the version it replaces
	SHA256      string    `json:"sha256"` // the bundle's, from its manifest
	RequestedAt time.Time `json:"requested_at"`
	// Started is set once the trial start is under way: finding it set at
	// a restart means the trial was cut short (a crash, a power cut) and
	// is a failure.
	Started   bool      `json:"started"`
	StartedAt time.Time `json:"started_at,omitzero"`
}

// Staging is a bundle being written into the inactive slot.
type Staging interface {
	io.Writer
	// Written is how many bytes the slot holds: where a download resumes.
	Written() int64
	// Reset forgets what was written, to start over from byte 0.
	Reset() error
	// Close makes what was written durable and releases the slot.
	Close() error
}

// Slots is where releases go. Methods are not safe for concurrent use by
// two processes beyond what each says: the daemon stages and requests a
// trial; the supervisor begins, commits and rolls back, while no daemon
// runs.
type Slots interface {
	// Current is the committed slot, the one that starts.
	Current(ctx context.Context) (Slot, error)
	// Inactive is the other slot, the one an update writes.
	Inactive(ctx context.Context) (Slot, error)
	// Stage opens the inactive slot to write the bundle env describes (m,
	// verified by the caller). Writing resumes where an earlier Stage of
	// the same manifest stopped; a different manifest starts over. It
	// returns ErrTrialPending while a trial is requested or running.
	Stage(ctx context.Context, env release.Envelope, m release.Manifest) (Staging, error)
	// OpenStaged reads back the staged bundle, for the caller to check
	// against its manifest before RequestTrial.
	OpenStaged(ctx context.Context) (io.ReadCloser, error)
	// RequestTrial installs the staged bundle in the inactive slot and asks
	// for one trial start of it; nothing else changes, and the current
	// slot still starts until BeginTrial.
	RequestTrial(ctx context.Context, at time.Time) (Trial, error)
	// Trial is the requested or running trial; ok is false when none.
	Trial(ctx context.Context) (t Trial, ok bool, err error)
	// BeginTrial marks the requested trial started, durably, and returns
	// it: from then on a restart that finds it is a failed trial.
	BeginTrial(ctx context.Context, at time.Time) (Trial, error)
	// Commit makes the trial's slot current.
	Commit(ctx context.Context) error
	// Rollback drops the trial: the current slot stays as it was.
	Rollback(ctx context.Context) error
	// Launch says how the requested trial t starts from the system the
	// caller runs in: LaunchProcess (Dir) or, for a trial boot
	// (Partitions), LaunchReboot before it and LaunchRunning on it.
	Launch(ctx context.Context, t Trial) (Launch, error)
}

// Launch is how a trial starts (Slots.Launch).
type Launch int

const (
	// LaunchProcess: the supervisor begins the trial and starts the trial
	// slot's executable; after a rollback it starts the current one.
	LaunchProcess Launch = iota + 1
	// LaunchReboot: the supervisor begins the trial (the boot loader is
	// told to start it once) and restarts the system into it.
	LaunchReboot
	// LaunchRunning: this system is the trial's start. The supervisor runs
	// the daemon on trial and commits on its health check; after a
	// rollback it restarts the system into the current slot.
	LaunchRunning
)

// Errors.
var (
	// ErrTrialPending is returned by Stage and RequestTrial while a trial
	// is requested or running.
	ErrTrialPending = errors.New("update: a trial is already requested")
	// ErrNoTrial is returned by BeginTrial, Commit and Rollback when no
	// trial is requested.
	ErrNoTrial = errors.New("update: no trial is requested")
	// ErrNotStaged is returned by OpenStaged and RequestTrial when nothing
	// was staged.
	ErrNotStaged = errors.New("update: nothing is staged")
)
