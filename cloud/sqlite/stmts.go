package sqlite

import (
	"context"
	"database/sql"
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

// QueryContext runs a prepared query.
func (r *readDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := r.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs a prepared single-row query.
func (r *readDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := r.stmt(ctx, query)
	if err != nil {
		// Let the error surface from Scan, as database/sql does.
		return r.DB.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
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
