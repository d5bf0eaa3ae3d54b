package cache

import (
	"errors"
	"fmt"
)

var (
	// ErrGap is returned by Apply when a batch starts after the next
	// sequence the cache expects (View().Seq()+1). Nothing is applied; the
	// caller asks the cloud for what follows View().Seq().
	ErrGap = errors.New("cache: gap in the change feed")

	// ErrEdgeMismatch is returned by Open when the file belongs to another
	// edge ID than Options.EdgeID, and by Record when a fact names another
	// edge. Fact counters are per edge, so one file never serves two.
	ErrEdgeMismatch = errors.New("cache: file belongs to another edge")

	// ErrDuplicateFact is returned by Record when a fact with the same ID is
	// already in the outbox. Nothing is recorded.
	ErrDuplicateFact = errors.New("cache: fact already in the outbox")

	// ErrNoEdge is returned by Record when neither Options.EdgeID nor the
	// file names the edge, so a fact cannot be attributed.
	ErrNoEdge = errors.New("cache: no edge ID")

	// ErrDamaged is returned, as a *DamagedError, by Open and Check when
	// the file is damaged (truncated, a page or a value unreadable), and
	// by every method of a Cache once reading its file failed. The file is
	// left as it is; Reset moves it aside and recovers what it can.
	ErrDamaged = errors.New("cache: file damaged")

	// ErrSchemaChange is returned by Open with Options.KeepSchema when
	// opening would migrate the file: a release on trial must leave the
	// file readable by the release it may roll back to.
	ErrSchemaChange = errors.New("cache: opening would change the file's schema, which a release on trial must not")

	// ErrNoFile is returned by Check and Reset when there is no file at
	// the path: there is nothing to check or recover.
	ErrNoFile = errors.New("cache: no file")
)

// DamagedError is a damaged cache file: what is wrong with it, as found.
// It matches ErrDamaged, and the *CorruptError behind it when a value did
// not decode.
type DamagedError struct {
	Path     string
	Problems []string // what is wrong, first found first; at most a few dozen
	Err      error    // a *CorruptError, or the failure reading the file; may be nil
}

func (e *DamagedError) Error() string {
	what := "unknown damage"
	switch {
	case len(e.Problems) > 0:
		what = e.Problems[0]
	case e.Err != nil:
		what = e.Err.Error()
	}
	msg := fmt.Sprintf("cache file %s is damaged: %s", e.Path, what)
	switch n := len(e.Problems) - 1; {
	case n == 1:
		msg += " (and 1 more problem)"
	case n > 1:
		msg += fmt.Sprintf(" (and %d more problems)", n)
	}
	return msg
}

func (e *DamagedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrDamaged}
	}
	return []error{ErrDamaged, e.Err}
}

// CorruptError is returned by Open when a stored value cannot be read back
// or contradicts another (a visit filed under another ID, an outbox entry
// without its index): the file was damaged, or written by an incompatible
// build. Open refuses rather than drop the value, since it may be a fact
// that never reached the cloud.
type CorruptError struct {
	Bucket string
	Key    string // an ID or meta name; an outbox counter in decimal
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("cache: corrupt value in bucket %q at key %q: %v", e.Bucket, e.Key, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }
