package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
)

// boundTx is the transaction of an Atomic call, carried in its context:
// every statement the store runs through its pool (db) with that context
// runs on its connection, and inTx and readTx join it.
type boundTx struct {
	pool    *pgxpool.Pool
	tx      *pipeTx
	took    *cloud.IdempotencyRecord // the reply queued; commit reports it
	err     error                    // the first write that failed: the whole rolls back
	feeds   []*feed                  // what the writes append to the site feeds, last
	pending pgx.Batch                // what the writes recorded (queueEvents), sent with the commit
}

// record queues what was recorded for the write ctx goes with (the
// events, audit entries and reply it holds: cloud.TakeEvents takes them
// from the context of the Store call that wrote), to go with the commit;
// an erasure's rewrites of earlier events are made now.
func (b *boundTx) record(ctx context.Context, keys *kek.Ring) error {
	if err := scrubEvents(ctx, b.tx); err != nil {
		return err
	}
	if reply := queueEvents(ctx, &b.pending, keys, b.took == nil); reply != nil {
		b.took = reply
	}
	return nil
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
//
// BEGIN and COMMIT cost no round trip of their own (docs/decisions.md,
// "PostgreSQL: BEGIN and COMMIT in the statements' round trips (issue
// 20)"): BEGIN goes with fn's first statement (pipeTx), and COMMIT with
// what the writes recorded (events, deliveries, audit rows, the stored
// reply) and the feed appends, in one batch (commit).
func (s *Store) Atomic(ctx context.Context, fn func(context.Context) error) error {
	if s.bound(ctx) != nil {
		return fn(ctx)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify(err)
	}
	p := &pipeTx{conn: conn}
	defer p.release(ctx)
	b := &boundTx{pool: s.pool.Pool, tx: p}
	if err := fn(context.WithValue(ctx, boundKey{}, b)); err != nil {
		return err
	}
	if b.err != nil {
		return b.err
	}
	if p.deferErr != nil {
		return p.deferErr
	}
	return s.commit(ctx, b)
}

// commit ends b's call: what it recorded for its writes (the events, their
// deliveries, the audit rows, the reply when none is stored yet) and its
// feed appends, then COMMIT, in one batch; one that begins the
// transaction too when nothing has yet. The feed heads' row locks, which
// every write at a site takes, are so held for the commit alone.
//
// A statement of the batch may wait (for a feed head's lock, or a reply's
// key that another request holds). A call whose context ends in that wait
// drops the connection and fails, but PostgreSQL has COMMIT queued behind
// the wait: unstopped, it would commit what the call reported failed once
// the wait ended. So a batch that fails without PostgreSQL's answer is
// stopped (stopCommit) before the call returns (docs/decisions.md, "A
// commit batch stopped when its call gives up").
func (s *Store) commit(ctx context.Context, b *boundTx) error {
	p := b.tx
	if err := b.record(ctx, s.kek); err != nil {
		return err
	}
	var feeds pgx.Batch
	for _, f := range b.feeds {
		if err := f.queue(ctx, p, &feeds); err != nil {
			return err
		}
	}
	var fb pgx.Batch
	begins := !p.begun()
	if begins {
		fb.BeginTx(pgx.TxOptions{})
	}
	fb.QueuedQueries = append(append(append(fb.QueuedQueries, p.deferred.QueuedQueries...), b.pending.QueuedQueries...),
		feeds.QueuedQueries...)
	p.deferred = pgx.Batch{}
	took := b.took
	if begins && fb.Len() == 1 {
		// Nothing written and nothing to record: no transaction at all.
		cloud.Fail(ctx, cloud.FailBeforeCommit)
		cloud.Fail(ctx, cloud.FailAfterCommit)
		cloud.WriteCommitted(ctx, nil)
		return nil
	}
	fb.Queue("commit")
	cloud.Fail(ctx, cloud.FailBeforeCommit)
	br := p.conn.SendBatch(ctx, &fb)
	if begins {
		p.tx = txc{br.Tx()}
	}
	var err error
	for i := range fb.Len() {
		tag, e := br.Exec()
		if e != nil {
			err = e
			break
		}
		if i == fb.Len()-1 && tag.String() != "COMMIT" {
			err = pgx.ErrTxCommitRollback
		}
	}
	if e := br.Close(); err == nil {
		err = e
	}
	if err != nil {
		if !answered(err) {
			stopCommit(p.conn.Conn().PgConn())
		}
		return commitError(took, err)
	}
	cloud.Fail(ctx, cloud.FailAfterCommit)
	cloud.WriteCommitted(ctx, took)
	return nil
}

// answered reports whether err is PostgreSQL's own answer to the batch (a
// statement failed, so the server skipped the rest, COMMIT included, or
// COMMIT answered ROLLBACK), rather than the client giving up on it.
func answered(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) || errors.Is(err, pgx.ErrTxCommitRollback)
}

// stopWait bounds stopCommit: a server that does not take a cancel
// request in this long is not reachable, and its connection is gone.
const stopWait = time.Second

// stopCommit cancels what the server runs on conn's backend (a cancel
// request, on a connection of its own, naming the backend by its process
// ID and secret key, so it reaches no other session): a statement of a
// commit batch that still waits fails, the transaction is aborted, and
// the COMMIT queued behind it rolls back. It returns once the server has
// taken the request. Best effort: a backend already past its last wait
// commits, as any commit the client stops hearing about may have.
func stopCommit(conn *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	_ = conn.CancelRequest(ctx)
}

// replyHeld is the SQLSTATE of idempotency_key_free (migration 0053): the
// reply was not stored, as a reply to the same key is (a request that
// raced this one with the key committed first).
const replyHeld = "SV409"

func commitError(reply *cloud.IdempotencyRecord, err error) error {
	var pe *pgconn.PgError
	if reply != nil && errors.As(err, &pe) && pe.Code == replyHeld {
		return fmt.Errorf("store response of %s %s: %w", reply.Method, reply.Path, cloud.ErrIdempotencyKeyUsed)
	}
	return classify(translate("commit", err))
}

// pipeTx is an Atomic call's transaction on the connection the call
// holds, begun by its first statement: BEGIN goes in the same round trip
// (a batch that begins the transaction, pgx.Batch.BeginTx), whatever the
// statement is.
type pipeTx struct {
	conn  *pgxpool.Conn
	tx    pgx.Tx                 // a txc once begun
	ahead map[aheadKey]aheadRead // reads made ahead (readahead.go); any statement drops them
	// deferred are writes whose answer nothing in the call waits for
	// (deferWrites): they go in front of the call's next statement,
	// which is most often the commit's batch, a round trip fewer.
	deferred pgx.Batch
	// deferErr is the failure of deferred writes sent in front of a
	// statement: the call fails with it whatever fn made of it.
	deferErr error
}

// deferWrites queues b's statements to go in front of the call's next
// statement (flush) or in the commit's batch, instead of a round trip of
// their own. A write whose result decides nothing the call does next
// (CreateVisit's rows) may be deferred: its failure fails the call, at
// its next statement or at the commit, as translate classifies it there.
func (p *pipeTx) deferWrites(b *pgx.Batch) {
	p.deferred.QueuedQueries = append(p.deferred.QueuedQueries, b.QueuedQueries...)
}

// flush sends the deferred writes, if any, before a statement that may
// read what they write.
func (p *pipeTx) flush(ctx context.Context) error {
	if p.deferErr != nil || p.deferred.Len() == 0 {
		return p.deferErr
	}
	b := p.deferred
	p.deferred = pgx.Batch{}
	br := p.send(ctx, &b)
	var err error
	for range b.Len() {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if e := br.Close(); err == nil {
		err = e
	}
	if err != nil {
		p.deferErr = classify(translate("deferred writes", err))
	}
	return p.deferErr
}

func (p *pipeTx) begun() bool { return p.tx != nil }

func (p *pipeTx) begin(ctx context.Context) error {
	p.ahead = nil
	if p.tx != nil {
		return nil
	}
	tx, err := p.conn.Begin(ctx)
	if err != nil {
		return classify(err)
	}
	p.tx = txc{tx}
	return nil
}

// release rolls back a transaction the call left open (it failed, or its
// commit did not run) and gives the connection back to the pool.
func (p *pipeTx) release(ctx context.Context) {
	if p.tx != nil && p.conn.Conn().PgConn().TxStatus() != 'I' {
		_ = p.tx.Rollback(ctx)
	}
	p.conn.Release() // a connection still in a transaction is closed, not reused
}

// send sends b, with BEGIN in front of it when the transaction has not
// begun; the results are b's alone.
func (p *pipeTx) send(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	p.ahead = nil
	if p.tx != nil {
		return p.tx.SendBatch(ctx, b)
	}
	var withBegin pgx.Batch
	withBegin.BeginTx(pgx.TxOptions{})
	withBegin.QueuedQueries = append(withBegin.QueuedQueries, b.QueuedQueries...)
	br := p.conn.SendBatch(ctx, &withBegin)
	p.tx = txc{br.Tx()}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return batchc{pgx.FailedBatchResults(b, err)}
	}
	return batchc{br}
}

// sendOne sends one statement with BEGIN in front of it.
func (p *pipeTx) sendOne(ctx context.Context, sql string, args []any) pgx.BatchResults {
	var b pgx.Batch
	b.Queue(sql, args...)
	return p.send(ctx, &b)
}

func (p *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := p.flush(ctx); err != nil {
		return batchc{pgx.FailedBatchResults(b, err)}
	}
	return p.send(ctx, b)
}

func (p *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := p.flush(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	p.ahead = nil
	if p.tx != nil {
		return p.tx.Exec(ctx, sql, args...)
	}
	br := p.sendOne(ctx, sql, args)
	tag, err := br.Exec()
	if e := br.Close(); err == nil {
		err = e
	}
	return tag, classify(err)
}

func (p *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := p.flush(ctx); err != nil {
		return nil, err
	}
	p.ahead = nil
	if p.tx != nil {
		return p.tx.Query(ctx, sql, args...)
	}
	br := p.sendOne(ctx, sql, args)
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return rows, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (p *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := p.flush(ctx); err != nil {
		return failedRow{err}
	}
	p.ahead = nil
	if p.tx != nil {
		return p.tx.QueryRow(ctx, sql, args...)
	}
	br := p.sendOne(ctx, sql, args)
	return batchRow{Row: br.QueryRow(), br: br}
}

// batchRows and batchRow are the rows of a statement sent with the BEGIN
// in front of it: the batch closes with them.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err, r.br = r.br.Close(), nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

type batchRow struct {
	pgx.Row
	br pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// failedRow is the row of a statement not sent: the deferred writes in
// front of it failed.
type failedRow struct{ err error }

func (r failedRow) Scan(...any) error { return r.err }

func (p *pipeTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := p.flush(ctx); err != nil {
		return nil, err
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	return p.tx.Begin(ctx)
}

func (p *pipeTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	if err := p.flush(ctx); err != nil {
		return 0, err
	}
	if err := p.begin(ctx); err != nil {
		return 0, err
	}
	return p.tx.CopyFrom(ctx, table, cols, src)
}

func (p *pipeTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return p.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects is pgx.Tx's; the store keeps none.
func (p *pipeTx) LargeObjects() pgx.LargeObjects {
	if p.tx == nil {
		return pgx.LargeObjects{}
	}
	return p.tx.LargeObjects()
}

// Commit and Rollback are Atomic's (commit, release); fn's statements do
// not end the transaction they run in.
func (p *pipeTx) Commit(context.Context) error {
	return errors.New("postgres: a write inside Atomic does not commit")
}

func (p *pipeTx) Rollback(context.Context) error {
	return errors.New("postgres: a write inside Atomic does not roll back")
}

func (p *pipeTx) Conn() *pgx.Conn { return p.conn.Conn() }
