package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-vms/svc/cloud"
)

// boundTx is the transaction of an Atomic call, carried in its context:
// every statement the store runs through its pool (db) with that context
// runs in it, and inTx and readTx join it.
type boundTx struct {
	pool  *pgxpool.Pool
	tx    pgx.Tx
	took  *cloud.IdempotencyRecord // the reply a write inserted; commit reports it
	err   error                    // the first write that failed: the whole rolls back
	feeds []*feed                  // what the writes append to the site feeds, last
}

type boundKey struct{}

// boundIn returns the Atomic transaction on pool that ctx carries, or nil.
func boundIn(ctx context.Context, pool *pgxpool.Pool) *boundTx {
	if b, ok := ctx.Value(boundKey{}).(*boundTx); ok && b.pool == pool {
		return b
	}
	return nil
}

func (s *Store) bound(ctx context.Context) *boundTx { return boundIn(ctx, s.pool.Pool) }

// Atomic implements cloud.Store: one READ COMMITTED transaction on one
// connection, held from fn's first statement to the commit. The reads in
// it are the ones that decide its writes; the row locks that writes such
// as UpdateVisit take (SELECT … FOR UPDATE) last until the commit.
func (s *Store) Atomic(ctx context.Context, fn func(context.Context) error) error {
	if s.bound(ctx) != nil {
		return fn(ctx)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit: ErrTxClosed, ignored
	b := &boundTx{pool: s.pool.Pool, tx: tx}
	if err := fn(context.WithValue(ctx, boundKey{}, b)); err != nil {
		return err
	}
	if b.err != nil {
		return b.err
	}
	reply, err := insertEvents(ctx, tx, s.kek, b.took == nil)
	if err != nil {
		return err
	}
	if b.took == nil {
		b.took = reply
	}
	for _, f := range b.feeds {
		if err := f.flush(ctx, tx); err != nil {
			return err
		}
	}
	cloud.Fail(ctx, cloud.FailBeforeCommit)
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	cloud.Fail(ctx, cloud.FailAfterCommit)
	cloud.WriteCommitted(ctx, b.took)
	return nil
}
