package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// readDB is the read pool with its statements prepared once: parsing SQL
// was a sixth of the cost of a GET /teams before. Query texts come from a
// small fixed set (one per filter combination and page size), so the cache
// stays small.
type readDB struct {
	*sql.DB
	mu    sync.RWMutex
	stmts map[string]*sql.Stmt
}

func newReadDB(db *sql.DB) *readDB { return &readDB{DB: db, stmts: map[string]*sql.Stmt{}} }

func (r *readDB) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	r.mu.RLock()
	st, ok := r.stmts[query]
	r.mu.RUnlock()
	if ok {
		return st, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.stmts[query]; ok {
		return st, nil
	}
	st, err := r.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	r.stmts[query] = st
	return st, nil
}

// inTx returns the Atomic write transaction ctx carries for the store
// whose read pool is r, once it has begun: reads after an Atomic call's
// first write run in it, so that they see its writes.
func (r *readDB) inTx(ctx context.Context) *sql.Tx {
	if b, ok := ctx.Value(boundKey{}).(*boundTx); ok && b.s.r == r {
		return b.tx
	}
	return nil
}

// QueryContext runs a prepared query.
func (r *readDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if tx := r.inTx(ctx); tx != nil {
		return tx.QueryContext(ctx, query, args...)
	}
	st, err := r.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs a prepared single-row query.
func (r *readDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if tx := r.inTx(ctx); tx != nil {
		return tx.QueryRowContext(ctx, query, args...)
	}
	st, err := r.stmt(ctx, query)
	if err != nil {
		// Let the error surface from Scan, as database/sql does.
		return r.DB.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// byKey runs fn, a read of rows by key (a few rows, each found through
// an index), on a connection of the pool taken while ctx lasts; fn's
// statements then run to their end without watching ctx. The driver
// watches a cancellable context with a goroutine per statement, and
// database/sql with one more per result set: for reads that end in
// microseconds, that watching was most of their cost. Inside Atomic,
// once its transaction has begun, fn reads in it.
func (r *readDB) byKey(ctx context.Context, fn func(context.Context, keyReader) error) error {
	if tx := r.inTx(ctx); tx != nil {
		return fn(ctx, tx)
	}
	c, err := r.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(context.WithoutCancel(ctx), c)
}

// keyReader is a connection or a transaction, as byKey hands them.
type keyReader interface {
	querier
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// point returns the row of a read by key, read with byKey when scanned.
func (r *readDB) point(ctx context.Context, query string, args ...any) *pointRow {
	return &pointRow{r: r, ctx: ctx, query: query, args: args}
}

type pointRow struct {
	r     *readDB
	ctx   context.Context
	query string
	args  []any
}

// Scan runs the read and scans its row, as sql.Row's Scan does.
func (p *pointRow) Scan(dest ...any) error {
	return p.r.byKey(p.ctx, func(ctx context.Context, q keyReader) error {
		return q.QueryRowContext(ctx, p.query, p.args...).Scan(dest...)
	})
}

// Close closes the statements and the pool.
func (r *readDB) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.stmts {
		st.Close()
	}
	return r.DB.Close()
}

// writeStmts are the writer connection's hot statements, prepared once at
// Open: parsing them on every call was 18% of the process's CPU while an
// edge's outbox drained (docs/performance.md, issue 4). The writer has one
// connection, so a transaction finds each statement prepared on it.
// Statements are prepared up front because the writer's one connection
// is busy while a transaction runs: preparing on the pool then would wait
// for it.
type writeStmts struct {
	m map[string]*sql.Stmt
}

// hotWrites are the statements prepared on the writer: those an edge's
// facts, the feed and its publisher run per row.
var hotWrites = append([]string{
	qInsertFact, qInsertFacts, qFactConflict, qGetVisit, qGetVisits, qInsertVisit, qInsertAudit,
	qFeedHead, qFeedAdvance, qFeedRow, qFeedCursor,
}, qUpdateVisit[:]...)

func prepareWrites(ctx context.Context, db *sql.DB) (*writeStmts, error) {
	ws := &writeStmts{m: make(map[string]*sql.Stmt, len(hotWrites))}
	for _, q := range hotWrites {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			ws.Close()
			return nil, fmt.Errorf("prepare %.40q: %w", q, err)
		}
		ws.m[q] = st
	}
	return ws, nil
}

// Close closes the statements.
func (ws *writeStmts) Close() {
	for _, st := range ws.m {
		st.Close()
	}
}

// txStmts are the writer's statements as one transaction uses them, each
// bound to it once.
type txStmts struct {
	ws  *writeStmts
	tx  *sql.Tx
	txs map[string]*sql.Stmt
}

func (ws *writeStmts) in(tx *sql.Tx) *txStmts {
	return &txStmts{ws: ws, tx: tx}
}

// stmt is query's prepared statement bound to the transaction, or nil
// when the writer has not prepared it.
func (p *txStmts) stmt(ctx context.Context, query string) *sql.Stmt {
	if p == nil || p.ws == nil {
		return nil
	}
	if st, ok := p.txs[query]; ok {
		return st
	}
	parent, ok := p.ws.m[query]
	if !ok {
		return nil
	}
	if p.txs == nil {
		p.txs = map[string]*sql.Stmt{}
	}
	st := p.tx.StmtContext(ctx, parent)
	p.txs[query] = st
	return st
}

// ExecContext runs query in the transaction, prepared when it is one of
// hotWrites.
func (p *txStmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}

// QueryContext runs a query in the transaction, prepared when it is one
// of hotWrites.
func (p *txStmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a single-row query in the transaction, prepared
// when it is one of hotWrites.
func (p *txStmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}
