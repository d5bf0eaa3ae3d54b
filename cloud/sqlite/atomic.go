package sqlite

import (
	"context"
	"database/sql"

	"github.com/svc-vms/svc/cloud"
)

// boundTx is the write transaction of an Atomic call, carried in its
// context. It begins at the first write fn makes (tx is nil until then);
// from there the reads of the read pool (readDB) and the writes of every
// Store method called with that context run in it.
type boundTx struct {
	s    *Store
	tx   *sql.Tx
	took *cloud.IdempotencyRecord // the reply a write inserted; commit reports it
	err  error                    // the first write that failed: the whole rolls back
}

type boundKey struct{}

// bound returns the Atomic transaction of s that ctx carries, or nil.
func (s *Store) bound(ctx context.Context) *boundTx {
	if b, ok := ctx.Value(boundKey{}).(*boundTx); ok && b.s == s {
		return b
	}
	return nil
}

// begin starts b's write transaction if it has not begun.
func (b *boundTx) begin(ctx context.Context) (*sql.Tx, error) {
	if b.tx == nil {
		tx, err := b.s.w.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		b.tx = tx
	}
	return b.tx, nil
}

// Atomic implements cloud.Store. SQLite has one writer connection, which
// the transaction holds from its BEGIN IMMEDIATE to its commit, and every
// other write waits for it. So the transaction begins at fn's first
// write, not at its first read: the reads before it (those that plan the
// write: site, hosts, visit type, visitor) run on the read pool, seeing
// the last commit, as they did before Atomic, and a request that reads,
// renders or waits before it writes holds no other request's write back.
// Everything written from the first write on (the object, its visitor,
// hosts, messages, feed, events, audit, the stored response) commits
// together, once. What a read there decides is checked again by the
// write: the foreign keys (a site or host gone), the unique keys (the
// idempotency key, a team's name), and UpdateVisit reads the visit again
// inside the transaction.
func (s *Store) Atomic(ctx context.Context, fn func(context.Context) error) error {
	if s.bound(ctx) != nil {
		return fn(ctx)
	}
	b := &boundTx{s: s}
	err := fn(context.WithValue(ctx, boundKey{}, b))
	if err == nil {
		err = b.err
	}
	if b.tx == nil {
		// No write: nothing to commit.
		return classify(err)
	}
	if err == nil {
		err = s.finish(ctx, b)
	}
	if err != nil {
		_ = b.tx.Rollback()
		return classify(err)
	}
	cloud.Fail(ctx, cloud.FailBeforeCommit)
	if err := b.tx.Commit(); err != nil {
		return classify(err)
	}
	cloud.Fail(ctx, cloud.FailAfterCommit)
	cloud.WriteCommitted(ctx, b.took)
	return nil
}

// finish writes, in b's transaction, what was recorded for the write ctx
// goes with: its events and audit entries, and the request's reply unless
// an earlier write of the transaction inserted it.
func (s *Store) finish(ctx context.Context, b *boundTx) error {
	if err := insertEvents(ctx, b.tx); err != nil {
		return err
	}
	if b.took != nil {
		return nil
	}
	if reply := cloud.TakeReply(ctx); reply != nil {
		if err := insertReply(ctx, b.tx, s.kek, reply); err != nil {
			return err
		}
		b.took = reply
	}
	return nil
}
