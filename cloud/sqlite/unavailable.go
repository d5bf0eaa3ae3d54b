package sqlite

import (
	"context"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/svc-vms/svc/cloud"
)

// classify wraps err in cloud.ErrUnavailable when it says the database
// did not answer in time (docs/decisions.md, "Database outages (issue
// 15)"): busy or locked beyond the busy timeout (another process holds the
// file), or the request's deadline ran out while waiting for the one
// writer connection or a statement. Other errors pass as they are. The
// write transaction (tx), PutIdempotencyRecord and the read helpers (get,
// list) classify what they return.
func classify(err error) error {
	if err == nil || errors.Is(err, cloud.ErrUnavailable) {
		return err
	}
	var se *sqlite.Error
	switch {
	case errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_BUSY || se.Code()&0xff == sqlite3.SQLITE_LOCKED):
	case errors.Is(err, context.DeadlineExceeded):
	default:
		return err
	}
	return fmt.Errorf("%w: %w", cloud.ErrUnavailable, err)
}
