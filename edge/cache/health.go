package cache

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// update runs fn in a write transaction (write: bolt's Update, guarded
// against a damaged file), after applying in it what the journal holds,
// so that fn reads and writes the file as the records left it; and keeps
// track of whether the file still takes writes: a commit that fails (a
// full disk, an I/O error, an fsync that fails) makes WriteFailure report
// it until a later write commits. An error fn returns is the caller's
// judgement (a gap, a duplicate fact), not the file's, and changes
// nothing (the journal keeps its records).
func (c *Cache) update(fn func(tx *bolt.Tx) error) error {
	var fnErr error
	err := c.write(func(tx *bolt.Tx) error {
		if c.j != nil && len(c.j.mem) > 0 {
			if err := applyFrames(tx, c.j.mem); err != nil {
				return err
			}
		}
		fnErr = fn(tx)
		return fnErr
	})
	switch {
	case err == nil:
		c.failing.Store(nil)
		if c.j != nil {
			c.j.flushed()
		}
	case fnErr == nil: // fn was content: the commit failed
		c.failing.Store(&err)
	}
	return err
}

// WriteFailure returns the error of the last write to the file that could
// not be committed; nil once a later write commits. Gates refuse to open
// on an admit they cannot record, so while it is set the appliance is
// unhealthy.
func (c *Cache) WriteFailure() error {
	if p := c.failing.Load(); p != nil {
		return fmt.Errorf("cache writes failing: %w", *p)
	}
	return nil
}
