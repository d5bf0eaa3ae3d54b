package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-vms/svc/cloud"
)

// Outages (docs/decisions.md, "Database outages (issue 15)"): every error
// the driver returns goes through classify on its way out of the pool or a
// transaction, so a failure that says the database could not be reached or
// did not answer in time comes out of every Store method wrapping
// cloud.ErrUnavailable, whichever statement met it.

// classify wraps err in cloud.ErrUnavailable when it says the database
// could not be reached or did not answer in time; other errors pass as
// they are.
func classify(err error) error {
	if err == nil || errors.Is(err, cloud.ErrUnavailable) || !unavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", cloud.ErrUnavailable, err)
}

// unavailable reports whether err is an outage rather than a fault of the
// request or of the code: no connection (refused, reset, closed, not
// established in time), the server shutting down, starting or out of
// connections, or a statement, lock or context deadline that ran out.
func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin shutdown, crash shutdown, cannot connect now
			return true
		case pe.Code == "57014": // query canceled: statement_timeout (or a cancelled context)
			return true
		case pe.Code == "55P03": // lock not available: lock_timeout
			return true
		case pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), pgconn.Timeout(err), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, net.ErrClosed):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &ne):
		return true
	}
	return false
}

// db is the pool as the store uses it, classifying every error.
type db struct{ *pgxpool.Pool }

func (d db) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		return nil, classify(err)
	}
	return txc{tx}, nil
}

func (d db) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	tx, err := d.Pool.BeginTx(ctx, opts)
	if err != nil {
		return nil, classify(err)
	}
	return txc{tx}, nil
}

// Exec, Query and QueryRow run in the Atomic transaction ctx carries, if
// any (then a statement that fails fails the transaction: PostgreSQL
// aborts it), else each as a transaction of its own on the pool.
func (d db) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if b := boundIn(ctx, d.Pool); b != nil {
		return b.tx.Exec(ctx, sql, args...)
	}
	tag, err := d.Pool.Exec(ctx, sql, args...)
	return tag, classify(err)
}

func (d db) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if b := boundIn(ctx, d.Pool); b != nil {
		return b.tx.Query(ctx, sql, args...)
	}
	rows, err := d.Pool.Query(ctx, sql, args...)
	return rowsc{rows}, classify(err)
}

func (d db) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if b := boundIn(ctx, d.Pool); b != nil {
		return b.tx.QueryRow(ctx, sql, args...)
	}
	return rowc{d.Pool.QueryRow(ctx, sql, args...)}
}

// txc is a transaction classifying every error.
type txc struct{ pgx.Tx }

func (t txc) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.Tx.Exec(ctx, sql, args...)
	return tag, classify(err)
}

func (t txc) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := t.Tx.Query(ctx, sql, args...)
	return rowsc{rows}, classify(err)
}

func (t txc) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return rowc{t.Tx.QueryRow(ctx, sql, args...)}
}

func (t txc) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return batchc{t.Tx.SendBatch(ctx, b)}
}

func (t txc) Commit(ctx context.Context) error { return classify(t.Tx.Commit(ctx)) }

// rowc, rowsc and batchc classify the errors of results.
type rowc struct{ pgx.Row }

func (r rowc) Scan(dest ...any) error { return classify(r.Row.Scan(dest...)) }

type rowsc struct{ pgx.Rows }

func (r rowsc) Err() error             { return classify(r.Rows.Err()) }
func (r rowsc) Scan(dest ...any) error { return classify(r.Rows.Scan(dest...)) }

type batchc struct{ pgx.BatchResults }

func (b batchc) Exec() (pgconn.CommandTag, error) {
	tag, err := b.BatchResults.Exec()
	return tag, classify(err)
}

func (b batchc) Query() (pgx.Rows, error) {
	rows, err := b.BatchResults.Query()
	return rowsc{rows}, classify(err)
}

func (b batchc) QueryRow() pgx.Row { return rowc{b.BatchResults.QueryRow()} }

func (b batchc) Close() error { return classify(b.BatchResults.Close()) }

// errorCounter is a pgx tracer that counts the statements the database
// or the connection failed, by cloud.StatementErrors' kinds. pgx calls it
// for every statement on every connection of the pool, transactions'
// BEGIN and COMMIT and batches included; a query's end comes when its
// rows are closed, with their error. No rows (pgx.ErrNoRows) is an
// answer, not a failure: Scan makes it, and the tracer never sees it.
type errorCounter struct {
	unavailable, canceled, constraint, other atomic.Int64
}

func (e *errorCounter) count(err error) {
	var pe *pgconn.PgError
	switch {
	case err == nil, errors.Is(err, pgx.ErrNoRows):
	case errors.Is(err, context.Canceled):
		e.canceled.Add(1)
	case unavailable(err):
		e.unavailable.Add(1)
	case errors.As(err, &pe) && strings.HasPrefix(pe.Code, "23"): // integrity constraint violation
		e.constraint.Add(1)
	default:
		e.other.Add(1)
	}
}

func (e *errorCounter) counts() cloud.StatementErrors {
	return cloud.StatementErrors{Unavailable: e.unavailable.Load(), Canceled: e.canceled.Load(),
		Constraint: e.constraint.Load(), Other: e.other.Load()}
}

func (e *errorCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (e *errorCounter) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	e.count(d.Err)
}

func (e *errorCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery counts each statement of a batch; TraceBatchEnd's
// error is one of theirs again, not counted twice.
func (e *errorCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	e.count(d.Err)
}

func (e *errorCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
