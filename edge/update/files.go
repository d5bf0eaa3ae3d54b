package update

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/svc-vms/svc/shared/durable"
	"github.com/svc-vms/svc/shared/release"
)

var b64 = base64.RawURLEncoding

// Outcomes of an update, Result.Outcome (release's, which the cloud
// checks).
const (
	Committed  = release.Committed
	RolledBack = release.RolledBack
	Rejected   = release.Rejected
)

// Result is the last update's outcome, kept in the slots directory until
// the cloud has it (and after, for the status page).
type Result struct {
	Version string    `json:"version"`
	From    string    `json:"from,omitempty"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	SHA256  string    `json:"sha256,omitempty"`
	At      time.Time `json:"at"`
	// Reported is set once the cloud acknowledged the result.
	Reported bool `json:"reported"`
}

// Failed reports whether the update failed.
func (r Result) Failed() bool { return r.Outcome != Committed }

// LastResult is the last update's outcome; ok is false before the first.
func (d *Dir) LastResult() (r Result, ok bool, err error) { return lastResult(d.path) }

// SetResult records an update's outcome.
func (d *Dir) SetResult(r Result) error { return setResult(d.path, r) }

// readTrial reads the trial recorded in dir (Dir's and Partitions' alike);
// ok is false when there is none.
func readTrial(dir string) (t Trial, ok bool, err error) {
	ok, err = readJSON(filepath.Join(dir, trialFile), &t)
	if err != nil {
		return Trial{}, false, fmt.Errorf("update: trial: %w", err)
	}
	return t, ok, nil
}

// writeTrial records t in dir; what says what the write is for, in its
// error.
func writeTrial(dir string, t Trial, what string) error {
	if err := writeJSON(filepath.Join(dir, trialFile), t); err != nil {
		return fmt.Errorf("update: %s: %w", what, err)
	}
	return nil
}

// startTrial records t as started at at.
func startTrial(dir string, t Trial, at time.Time) (Trial, error) {
	t.Started, t.StartedAt = true, at.UTC()
	if err := writeTrial(dir, t, "begin trial"); err != nil {
		return Trial{}, err
	}
	return t, nil
}

// removeTrial forgets the trial recorded in dir, if any, durably.
func removeTrial(dir string) error {
	if err := os.Remove(filepath.Join(dir, trialFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("update: %w", err)
	}
	return syncDir(dir)
}

// lastResult reads dir's result file; setResult writes it.
func lastResult(dir string) (r Result, ok bool, err error) {
	ok, err = readJSON(filepath.Join(dir, resultFile), &r)
	if err != nil {
		return Result{}, false, fmt.Errorf("update: last result: %w", err)
	}
	return r, ok, nil
}

func setResult(dir string, r Result) error {
	if err := writeJSON(filepath.Join(dir, resultFile), r); err != nil {
		return fmt.Errorf("update: record result: %w", err)
	}
	return nil
}

func writeFile(path string, perm fs.FileMode, write func(io.Writer) error) error {
	return durable.WriteFile(path, perm, write)
}

func writeBytes(path string, b []byte) error {
	return writeFile(path, 0o644, func(w io.Writer) error { _, err := w.Write(b); return err })
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeBytes(path, append(b, '\n'))
}

// readJSON reads the file at path into v; ok is false when there is none.
// A file that does not parse is an error naming it.
func readJSON(path string, v any) (ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

func syncDir(dir string) error { return durable.SyncDir(dir) }
