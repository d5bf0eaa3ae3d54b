package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// The WAL's checkpoints are made by a goroutine of the Store's own, on a
// connection of its own, and not by the writer's commits.
//
// With SQLite's default (wal_autocheckpoint 1000) the commit that takes
// the WAL past 1000 pages copies them into the database file and fsyncs
// it, and every write request waits for it: the writer is the one
// connection all writes take turns on. A PASSIVE checkpoint made on
// another connection takes no lock a writer or a reader needs, so the
// writer's commits write and fsync only the WAL (docs/decisions.md,
// "SQLite's checkpoints off the writer (issue 20)").
const (
	// checkpointEvery is the least time between two checkpoints: the
	// commits of that time are copied together, with one fsync of the
	// database file.
	checkpointEvery = 50 * time.Millisecond
	// writerAutoCheckpoint is the writer's own wal_autocheckpoint, in
	// pages: a bound on the WAL should the checkpointer fall behind or
	// fail, ten times SQLite's default, which it does not reach while
	// the checkpointer keeps up.
	writerAutoCheckpoint = 10000
)

// checkpointer makes a PASSIVE checkpoint after the writer has committed
// (kick), at most one every checkpointEvery.
type checkpointer struct {
	db    *sql.DB // one read-write connection, for checkpoints only
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	every time.Duration

	closeOnce sync.Once

	runs   atomic.Int64 // checkpoints made
	failed atomic.Int64 // checkpoints that failed
	// log and left are the WAL's frames at the last checkpoint, and how
	// many of them it could not copy (a reader still needed them).
	log, left atomic.Int64
}

func newCheckpointer(db *sql.DB, every time.Duration) *checkpointer {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), every: every}
	go c.run()
	return c
}

// committed tells the checkpointer that the writer committed. It never
// blocks.
func (c *checkpointer) committed() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	wait := time.NewTimer(c.every)
	wait.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		c.checkpoint()
		wait.Reset(c.every)
		select {
		case <-c.stop:
			wait.Stop()
			return
		case <-wait.C:
		}
	}
}

// checkpoint copies into the database file the WAL's frames that no
// reader still needs. A failure is counted and left to the next commit's
// checkpoint, and to the writer's own bound (writerAutoCheckpoint).
func (c *checkpointer) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var busy, log, done int64
	err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done)
	if err != nil {
		c.failed.Add(1)
		return
	}
	c.log.Store(log)
	c.left.Store(log - done)
	c.runs.Add(1)
}

// stats returns what the checkpoints did.
func (c *checkpointer) stats() *cloud.WALStats {
	return &cloud.WALStats{Checkpoints: c.runs.Load(), Failed: c.failed.Load(), Frames: c.log.Load(), Uncopied: c.left.Load()}
}

// close stops the checkpointer and closes its connection; a second call
// does nothing (a Store may be closed twice). The last connection to
// close checkpoints the WAL whole, as SQLite does.
func (c *checkpointer) close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.stop)
		<-c.done
		if e := c.db.Close(); e != nil {
			err = fmt.Errorf("close checkpointer: %w", e)
		}
	})
	return err
}
