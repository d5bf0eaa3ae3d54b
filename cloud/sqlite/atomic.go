package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// boundTx is an Atomic call, carried in its context. Its writes begin at
// the first write fn makes (tx is nil until then); from there the reads of
// the read pool (readDB) and the writes of every Store method called with
// that context run in the writer's open transaction, in a savepoint of the
// call's own when the call is safe or its batch is (batch.safe), else with
// the transaction's count of changed rows noted (changes).
type boundTx struct {
	s         *Store
	tx        *sql.Tx
	batch     *batch                   // the group of calls the transaction commits
	took      *cloud.IdempotencyRecord // the reply a write inserted; commit reports it
	sealed    *sealedReply             // the request's reply, sealed before the call took the writer
	err       error                    // the first write that failed: the whole rolls back
	safe      bool                     // the call writes in a savepoint whatever its batch does
	savepoint bool                     // its writes are in a savepoint of their own
	changes   int64                    // without one, the writer's count of changes when its turn began
}

type boundKey struct{}

// bound returns the Atomic call of s that ctx carries, or nil.
func (s *Store) bound(ctx context.Context) *boundTx {
	if b, ok := ctx.Value(boundKey{}).(*boundTx); ok && b.s == s {
		return b
	}
	return nil
}

// begin starts b's writes if they have not begun: it takes the writer's
// turn (writer.take) and, when b or its batch is safe, opens b's savepoint
// in the open transaction; otherwise it notes the writer's count of
// changed rows, by which a failure tells whether the call wrote.
func (b *boundTx) begin(ctx context.Context) (*sql.Tx, error) {
	if b.tx != nil {
		return b.tx, nil
	}
	// The reply the request has rendered is sealed now, outside the
	// turn; finish seals it again only if it changed meanwhile.
	if rec := cloud.TakeReply(ctx); rec != nil {
		if sr, err := sealReply(b.s.kek, rec); err == nil {
			b.sealed = &sr
		}
	}
	tx, bt, err := b.s.writer.take(ctx, b.s.w)
	if err != nil {
		return nil, err
	}
	if b.safe || bt.safe || time.Now().Before(b.s.writer.safeUntil) {
		bt.safe = true
		// Not ended by ctx: a call whose context ends here has written
		// nothing, and fails at its first statement, rolling back to
		// its savepoint; a SAVEPOINT failing on the context would poison
		// the batch and fail every call in it.
		if _, err := tx.ExecContext(context.WithoutCancel(ctx), `SAVEPOINT atomic`); err != nil {
			b.s.writer.give(bt, err)
			return nil, err
		}
		b.savepoint = true
	} else {
		b.changes = b.s.writer.changes.Load()
	}
	b.tx, b.batch = tx, bt
	return tx, nil
}

// errBatchRolledBack is why a call whose writes had been released to its
// batch fails when a later call of the batch failed after writing without
// a savepoint to roll back to: the whole transaction rolled back. Atomic
// runs such a call again, safe.
var errBatchRolledBack = errors.New("a call sharing the write transaction failed")

// Atomic implements cloud.Store.
//
// SQLite has one writer, so the call's writes begin at fn's first write,
// not at its first read: the reads before it (those that plan the write:
// site, hosts, visit type, visitor) run on the read pool, seeing the last
// commit, and a request that reads, renders or waits before it writes
// holds no other request's write back. What such a read decides is checked
// again by the write: the foreign keys (a site or host gone), the unique
// keys (the idempotency key, a team's name), and UpdateVisit reads the
// visit again inside the transaction.
//
// From its first write to fn's return the call has the writer to itself
// inside the writer's open transaction. The transaction commits when the
// writer's turn passes and no other call is waiting for it (or after
// maxBatch calls): calls that wrote while one commit was under way commit
// together in the next (group commit). No call returns before the commit
// that holds its writes has returned, and with synchronous=FULL that
// commit is on disk (docs/decisions.md, "One transaction per write
// request (issue 20)").
//
// A call writes without a savepoint of its own: SQLite copies every page a
// savepoint's writes first touch, a malloc for each kilobyte, which was
// about 6% of svc-cloud's CPU on POST /visits, all of it in the writer's
// turn (docs/decisions.md, "Group commit without a savepoint a call
// (issue 20)"). When fn fails having written nothing, the transaction
// goes on; having written, and alone in the transaction, it rolls the
// transaction back; having written after other calls' writes, it rolls
// the transaction back with theirs, and each of those calls runs fn again
// from its start, safe: in a savepoint, as every call after it in its
// batch, so that a failure then rolls back to the failing call's savepoint
// alone and no call is run a third time. For a second after such a
// rollback every call is safe, so that failures, however frequent, make
// the writer run at most one batch twice a second.
func (s *Store) Atomic(ctx context.Context, fn func(context.Context) error) error {
	if s.bound(ctx) != nil {
		return fn(ctx)
	}
	err := s.atomic(ctx, fn, false)
	if errors.Is(err, errBatchRolledBack) {
		err = s.atomic(ctx, fn, true)
	}
	return err
}

// ReadAhead implements cloud.Store: it does nothing, as a read on SQLite
// costs no round trip.
func (s *Store) ReadAhead(context.Context, cloud.Tenant, cloud.ReadsAhead) {}

// atomic is one run of Atomic's call, in a savepoint when safe.
func (s *Store) atomic(ctx context.Context, fn func(context.Context) error, safe bool) error {
	b := &boundTx{s: s, safe: safe}
	given := false // the writer's turn, once b took it, given back
	give := func(poison error) {
		given = true
		s.writer.give(b.batch, poison)
	}
	defer func() {
		// A panic in fn (a bug in a write's callback) or in finish,
		// holding the turn, must not keep it: the transaction would stay
		// open, every call in its batch would wait for a commit that never
		// comes and every later write for the turn. It fails as fn
		// returning an error would, and goes on up.
		if p := recover(); p != nil {
			if b.tx != nil && !given {
				give(b.undo(fmt.Errorf("panic: %v", p)))
			}
			panic(p)
		}
	}()
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
		give(b.undo(err))
		return classify(err)
	}
	if b.savepoint {
		if _, err := b.tx.ExecContext(context.WithoutCancel(ctx), `RELEASE atomic`); err != nil {
			give(fmt.Errorf("release savepoint: %w", err))
			return classify(err)
		}
	}
	b.batch.members++
	cloud.Fail(ctx, cloud.FailBeforeCommit)
	give(nil)
	<-b.batch.done
	if b.batch.err != nil {
		return classify(b.batch.err)
	}
	cloud.Fail(ctx, cloud.FailAfterCommit)
	cloud.WriteCommitted(ctx, b.took)
	return nil
}

// undo undoes the writes of b's call, which failed with err, and returns
// why the transaction must not commit, if it must not (give's poison): to
// b's savepoint when it has one; else the whole transaction when it holds
// no other call's writes; else nothing when the call changed no row
// (the writer's count of changes as at its start); else the whole transaction, and with
// it the calls before b in its batch, which fail with errBatchRolledBack
// (and run again).
func (b *boundTx) undo(err error) error {
	if b.savepoint {
		clear(b.s.writer.heads)
		return rollbackTo(b.tx)
	}
	if b.batch.members == 0 {
		return err // the transaction holds the call's writes alone
	}
	if b.s.writer.changes.Load() == b.changes {
		return nil
	}
	// Calls run again: for a while every call writes in a savepoint, so
	// that failures, however frequent, cannot make the writer run each
	// batch twice.
	b.s.writer.safeUntil = time.Now().Add(b.s.writer.safeFor)
	return fmt.Errorf("%w: %w", errBatchRolledBack, err)
}

// rollbackTo undoes the writes of the call whose savepoint is open; an
// error means the transaction is in a state no one should commit.
func rollbackTo(tx *sql.Tx) error {
	ctx := context.Background()
	if _, err := tx.ExecContext(ctx, `ROLLBACK TO atomic`); err != nil {
		return fmt.Errorf("roll back to savepoint: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `RELEASE atomic`); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// finish writes, in b's transaction, what was recorded for the write ctx
// goes with: its events and audit entries, and the request's reply unless
// an earlier write of the call inserted it.
func (s *Store) finish(ctx context.Context, b *boundTx) error {
	if err := insertEvents(ctx, b.tx); err != nil {
		return err
	}
	if b.took != nil {
		return nil
	}
	if reply := cloud.TakeReply(ctx); reply != nil {
		if err := insertReply(ctx, b.tx, s.kek, reply, b.sealed); err != nil {
			return err
		}
		b.took = reply
	}
	return nil
}

// maxBatch is the most calls one transaction commits: a bound on how long
// the first of them waits while others keep joining.
const maxBatch = 64

// writer hands the writer connection's open transaction to one Atomic
// call at a time, and commits it when a turn ends with no call waiting.
type writer struct {
	turn    chan struct{} // holds a token while a call has the writer
	waiting chan struct{} // one token per call waiting for the turn (a counter that needs no lock)
	tx      *sql.Tx       // the open transaction; touched only by the turn's holder
	cur     *batch
	// committed, when set, is called after each commit (the
	// checkpointer's kick); it must not block.
	committed func()
	// After a failed call rolled back other calls' writes, until
	// safeUntil, every call writes in a savepoint (safeFor after it).
	safeUntil time.Time
	safeFor   time.Duration
	// heads are the feed heads the open transaction has allocated
	// from, by feed (allocate): cleared when the transaction ends and
	// when a call rolls back to its savepoint, so that they never run
	// ahead of the file; allocate checks them against it anyway.
	heads map[feedHead]int64
	// changes counts the rows the writer connection's statements have
	// changed (cachingConn.changes): a call without a savepoint notes it
	// when its turn begins, and, failing, has written if it moved.
	changes atomic.Int64
}

// safeAfterRollback is how long the writer's calls keep savepoints after
// a failed call rolled back others' writes: one batch run twice a second
// at most, whatever fails.
const safeAfterRollback = time.Second

// batch is the calls one transaction commits; done is closed, with err
// set, when it has committed or failed.
type batch struct {
	done    chan struct{}
	err     error
	members int // calls whose writes it holds
	poison  error
	safe    bool // a safe call has joined: every call from it on writes in a savepoint
}

func newWriter() *writer {
	return &writer{turn: make(chan struct{}, 1), waiting: make(chan struct{}, 1<<16), safeFor: safeAfterRollback,
		heads: map[feedHead]int64{}}
}

// take waits for the writer's turn and returns the open transaction,
// beginning one (BEGIN IMMEDIATE) when none is. The wait does not end
// with ctx: every turn taken is given back (give), so that the last call
// of a batch commits it; a call whose context ended meanwhile gives its
// turn straight back.
func (w *writer) take(ctx context.Context, db *sql.DB) (*sql.Tx, *batch, error) {
	w.waiting <- struct{}{}
	w.turn <- struct{}{}
	<-w.waiting
	if w.tx == nil {
		tx, err := beginOutliving(ctx, db)
		if err != nil {
			<-w.turn
			return nil, nil, err
		}
		w.tx, w.cur = tx, &batch{done: make(chan struct{})}
	}
	if err := ctx.Err(); err != nil {
		bt := w.cur
		w.give(bt, nil)
		return nil, nil, err
	}
	return w.tx, w.cur, nil
}

// give ends a turn. poison, when set, is why the transaction must not
// commit: then it rolls back and every call in it fails. The transaction
// commits when no call waits for the next turn, or it holds maxBatch
// calls.
func (w *writer) give(bt *batch, poison error) {
	if poison != nil && bt.poison == nil {
		bt.poison = poison
	}
	if bt.poison == nil && len(w.waiting) > 0 && bt.members < maxBatch {
		<-w.turn // the next call goes on with the same transaction
		return
	}
	switch {
	case bt.poison != nil:
		_ = w.tx.Rollback()
		bt.err = errors.Join(errors.New("write transaction rolled back"), bt.poison)
	case bt.members == 0:
		bt.err = w.tx.Rollback()
	default:
		if bt.err = w.tx.Commit(); bt.err == nil && w.committed != nil {
			w.committed()
		}
	}
	w.tx, w.cur = nil, nil
	clear(w.heads)
	close(bt.done)
	<-w.turn
}

// beginOutliving begins a write transaction (BEGIN IMMEDIATE) that the
// end of ctx can interrupt while it waits for SQLite's write lock (held by
// another process: a 503 in the request's deadline, as before) but not
// once it has begun: the transaction outlives the call that begins it,
// and database/sql rolls a transaction back when its context ends.
func beginOutliving(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	own, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	tx, err := db.BeginTx(own, nil)
	if !stop() {
		// ctx ended, and own with it: a transaction begun meanwhile is
		// being rolled back.
		if tx != nil {
			_ = tx.Rollback()
		}
		return nil, errors.Join(ctx.Err(), err)
	}
	return tx, err
}
