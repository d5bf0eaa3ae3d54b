package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// driverName is SQLite's driver (modernc's, with its connection hooks)
// with every connection keeping the statements it runs prepared.
//
// database/sql hands a statement with arguments that was not prepared
// through a *sql.Stmt straight to the connection (ExecerContext,
// QueryerContext), and modernc's connection parses it each time and
// throws it away. Parsing was 16% of the server's CPU under POST /visits
// (docs/performance.md, issue 20): insertEvents, the idempotency record,
// insertVisitor and the reads inside the write transaction each parse on
// every call. The writer's hot statements were prepared up front
// (writeStmts), but that needs each query listed and every helper to go
// through txStmts; here every connection prepares each query text with
// arguments once, on first use, and reuses it. Query texts come from a
// small fixed set, so the cache stays small; maxConnStmts bounds it.
const driverName = "sqlite-svc"

// writerDriver is the driver of the writer's connection, whose
// statements run to their end once begun (see cachingConn.detach); a
// Store opens it through a writerConnector, which counts its changes.
var writerDriver = &cachingDriver{detach: true}

// maxConnStmts bounds one connection's statements: past it, the
// connection closes them all and starts again.
const maxConnStmts = 512

func init() {
	// The registered "sqlite" driver itself, so that hooks registered on
	// it (msqlite.RegisterConnectionHook) apply to these connections too.
	db, err := sql.Open("sqlite", "")
	if err != nil {
		panic(err)
	}
	base := db.Driver()
	_ = db.Close()
	sql.Register(driverName, &cachingDriver{base: base})
	writerDriver.base = base
}

type cachingDriver struct {
	base   driver.Driver
	detach bool
}

func (d *cachingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.base.Open(name)
	if err != nil {
		return nil, err
	}
	return &cachingConn{Conn: c, stmts: map[string]*cachedStmt{}, detach: d.detach}, nil
}

// writerConnector opens the writer's connection, which adds to changes
// the rows its statements change (cachingConn.changes).
type writerConnector struct {
	dsn     string
	changes *atomic.Int64
}

func (w writerConnector) Connect(context.Context) (driver.Conn, error) {
	c, err := writerDriver.Open(w.dsn)
	if err != nil {
		return nil, err
	}
	c.(*cachingConn).changes = w.changes
	return c, nil
}

func (w writerConnector) Driver() driver.Driver { return writerDriver }

// cachingConn is a connection with its statements kept prepared.
// database/sql uses a connection from one goroutine at a time, rows'
// Close included, so it needs no lock.
type cachingConn struct {
	driver.Conn
	stmts map[string]*cachedStmt
	// detach runs each statement (but BEGIN) to its end once begun: the
	// context is checked before it starts, not watched while it runs.
	// This is the writer's connection. Its write transaction holds the
	// writes of every Atomic call in its group (group commit), and
	// SQLite's interrupt of an INSERT, UPDATE or DELETE inside a
	// transaction rolls the whole transaction back, so one request
	// reaching its deadline mid-statement would fail the others' writes
	// too; stopped between statements, it rolls back only its own
	// savepoint. The driver also watches a cancellable context with a
	// goroutine per statement, about a twentieth of POST /visits' CPU
	// (docs/performance.md, "POST /v1/visits, CPU per request"). A
	// statement on the writer is one request's rows, short; BEGIN, which
	// may wait for another process's lock, stays interruptible.
	detach bool
	// changes, when set (the writer's), counts the rows the
	// connection's statements change, as SQLite's total_changes() would
	// but without a statement to ask it, and never less: an Atomic call
	// that fails tells by it whether it wrote (boundTx.undo). A statement
	// that changes rows without reporting how many (a DML statement run
	// as a query, for its RETURNING; any other statement but a SELECT)
	// counts one whenever it runs; one that fails counts one unless
	// SQLite undid it (a constraint's failure undoes the statement).
	changes *atomic.Int64
}

// stmtKind is what a statement does to the writer's count of changes.
type stmtKind uint8

const (
	kindRead  stmtKind = iota // a SELECT: changes no row
	kindDML                   // INSERT, UPDATE, DELETE, REPLACE: run by Exec, it reports the rows it changed
	kindOther                 // anything else (WITH, a pragma, a savepoint): counted whenever it runs
)

// kindOf classifies query by its first word.
func kindOf(query string) stmtKind {
	q := strings.TrimLeft(query, " \t\r\n(")
	word := q[:min(len(q), 7)]
	switch {
	case hasWord(word, "SELECT"):
		return kindRead
	case hasWord(word, "INSERT"), hasWord(word, "UPDATE"), hasWord(word, "DELETE"), hasWord(word, "REPLACE"):
		return kindDML
	}
	return kindOther
}

// hasWord reports whether s begins with the keyword w, in any case,
// followed by nothing that continues a word.
func hasWord(s, w string) bool {
	if len(s) < len(w) || !strings.EqualFold(s[:len(w)], w) {
		return false
	}
	if len(s) == len(w) {
		return true
	}
	c := s[len(w)]
	return !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
}

// count adds to c's count of changes what a statement of kind k did: res
// is its Exec's result (nil for a query), err its error.
func (c *cachingConn) count(k stmtKind, res driver.Result, err error) {
	if c.changes == nil || k == kindRead {
		return
	}
	var n int64 = 1
	switch {
	case err != nil:
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
			return // the statement's own changes are undone
		}
	case k == kindDML && res != nil:
		if rows, rerr := res.RowsAffected(); rerr == nil {
			n = rows
		}
	}
	c.changes.Add(n)
}

// run returns the context a statement runs with, or ctx's error when it
// has ended before the statement begins.
func (c *cachingConn) run(ctx context.Context) (context.Context, error) {
	if !c.detach {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

type cachedStmt struct {
	driver.Stmt
	busy    bool // rows from it are open: a second use needs a statement of its own
	evicted bool // dropped from the cache while busy: its rows' Close closes it
}

var (
	_ driver.ExecerContext      = (*cachingConn)(nil)
	_ driver.QueryerContext     = (*cachingConn)(nil)
	_ driver.ConnBeginTx        = (*cachingConn)(nil)
	_ driver.ConnPrepareContext = (*cachingConn)(nil)
	_ driver.SessionResetter    = (*cachingConn)(nil)
	_ driver.Validator          = (*cachingConn)(nil)
	_ driver.Pinger             = (*cachingConn)(nil)
)

// stmt returns query's statement on c: the kept one, or, when rows from
// it are still open, a new one the caller closes (oneOff).
func (c *cachingConn) stmt(ctx context.Context, query string) (st *cachedStmt, oneOff bool, err error) {
	if st, ok := c.stmts[query]; ok {
		if !st.busy {
			return st, false, nil
		}
		ds, err := c.prepare(ctx, query)
		return &cachedStmt{Stmt: ds}, true, err
	}
	ds, err := c.prepare(ctx, query)
	if err != nil {
		return nil, false, err
	}
	if len(c.stmts) >= maxConnStmts {
		c.closeStmts()
	}
	st = &cachedStmt{Stmt: ds}
	c.stmts[query] = st
	return st, false, nil
}

func (c *cachingConn) prepare(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil || !c.detach {
		return st, err
	}
	return &detachedStmt{Stmt: st, c: c, kind: kindOf(query)}, nil
}

// detachedStmt is a statement of a detach connection, which counts the
// rows it changes when its connection does.
type detachedStmt struct {
	driver.Stmt
	c    *cachingConn
	kind stmtKind
}

func (s *detachedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	ctx, err := s.c.run(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	s.c.count(s.kind, res, err)
	return res, err
}

func (s *detachedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	ctx, err := s.c.run(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	s.c.count(s.kind, nil, err)
	return rows, err
}

// drop closes query's kept statement after it failed: the next use
// prepares it anew rather than trust the state an error left.
func (c *cachingConn) drop(query string, st *cachedStmt) {
	if c.stmts[query] == st {
		delete(c.stmts, query)
	}
	_ = st.Close()
}

func (c *cachingConn) closeStmts() {
	for q, st := range c.stmts {
		if st.busy {
			st.evicted = true
		} else {
			_ = st.Close()
		}
		delete(c.stmts, q)
	}
}

// ExecContext runs query prepared; a statement without arguments (a
// migration, a pragma, possibly several statements) goes through as it is.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) == 0 {
		ctx, err := c.run(ctx)
		if err != nil {
			return nil, err
		}
		res, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
		c.count(kindOf(query), res, err)
		return res, err
	}
	st, oneOff, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := st.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	switch {
	case oneOff:
		_ = st.Close()
	case err != nil:
		c.drop(query, st)
	}
	return res, err
}

// QueryContext runs query prepared, as ExecContext does.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		ctx, err := c.run(ctx)
		if err != nil {
			return nil, err
		}
		rows, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
		c.count(kindOf(query), nil, err)
		return rows, err
	}
	st, oneOff, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		if oneOff {
			_ = st.Close()
		} else {
			c.drop(query, st)
		}
		return nil, err
	}
	st.busy = true
	return &cachedRows{Rows: rows, st: st, oneOff: oneOff}, nil
}

// cachedRows frees its statement for the next use when closed.
type cachedRows struct {
	driver.Rows
	st     *cachedStmt
	oneOff bool
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Rows.Close()
	r.st.busy = false
	if r.oneOff || r.st.evicted {
		err = errors.Join(err, r.st.Close())
	}
	return err
}

func (c *cachingConn) Close() error {
	c.closeStmts()
	return c.Conn.Close()
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.prepare(ctx, query)
}

func (c *cachingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *cachingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *cachingConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}
