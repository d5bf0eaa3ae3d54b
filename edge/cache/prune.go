package cache

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Seq is the last change of the site's feed applied, as View().Seq() has
// it: what the sync half asks the cloud to continue after.
func (c *Cache) Seq() uint64 { return c.View().Seq() }

// Prune removes, in one transaction, the visits whose pass ended before
// before and that no fact waiting in the outbox names, and returns how
// many it removed. A pass ends at expected_until plus window.after; a
// visit without expected_until that has checked in (a walk-in) ends at
// the end of its check-in day in the site's zone, plus window.after, as
// the pass rules judge it; a visit with neither never ends and is kept.
// It returns bbolt's errors, and removes nothing then.
func (c *Cache) Prune(before time.Time) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.view.Load()
	cutoff := before.UnixMicro()
	loc := cur.Location()
	var gone []uid
	cur.visits.all(func(u uid, x visitEntry) bool {
		if end, ok := x.end(loc); ok && end < cutoff && c.pending[u] == 0 {
			gone = append(gone, u)
		}
		return true
	})
	if len(gone) == 0 {
		return 0, nil
	}
	e := newEdit(cur, c.in)
	var next *View
	err := c.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketVisits)
		for _, u := range gone {
			if err := b.Delete([]byte(visitID(u))); err != nil {
				return err
			}
			e.deleteVisit(u)
		}
		var err error
		next, err = e.done()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune visits: %w", err)
	}
	c.view.Store(next)
	c.dropMapped()
	return len(gone), nil
}

// end is when the visit's pass stops admitting, in Unix microseconds,
// and false when it never does.
func (x *visitEntry) end(loc *time.Location) (int64, bool) {
	after := int64(x.after) * int64(time.Minute/time.Microsecond)
	switch {
	case x.expectedUntil != noTime:
		return x.expectedUntil + after, true
	case x.checkedInAt != noTime:
		y, m, d := time.UnixMicro(x.checkedInAt).In(loc).Date()
		return time.Date(y, m, d+1, 0, 0, 0, 0, loc).UnixMicro() - 1 + after, true
	}
	return 0, false
}
