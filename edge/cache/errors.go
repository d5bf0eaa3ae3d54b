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
)

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
