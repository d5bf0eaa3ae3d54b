package sitetest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// FactRow is one row of the cloud's edge_facts table: a fact as the cloud
// recorded it, once per ID.
type FactRow struct {
	ID       string
	Kind     string
	Reason   string
	VisitID  string
	Conflict string
	Counter  uint64
}

// factReader counts the cloud's recorded facts with a query of its own,
// beside the store: the Store interface reads one fact by ID, and a test
// of "exactly once" needs every row there is.
type factReader struct {
	query func(ctx context.Context, edgeID string) ([]FactRow, error)
}

const factsQuery = `SELECT id, kind, COALESCE(reason, ''), COALESCE(visit_id, ''), COALESCE(conflict, ''), counter
	FROM edge_facts WHERE edge_id = %s ORDER BY counter, id`

func newSQLiteFacts(t testing.TB, path string) *factReader {
	// The driver is registered by cloud/sqlite; the store writes in WAL
	// mode, so this reader sees every commit without blocking it.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	must(t, err)
	t.Cleanup(func() { _ = db.Close() })
	q := fmt.Sprintf(factsQuery, "?")
	return &factReader{query: func(ctx context.Context, edgeID string) ([]FactRow, error) {
		rows, err := db.QueryContext(ctx, q, edgeID)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []FactRow
		for rows.Next() {
			var r FactRow
			var counter int64
			if err := rows.Scan(&r.ID, &r.Kind, &r.Reason, &r.VisitID, &r.Conflict, &counter); err != nil {
				return nil, err
			}
			r.Counter = uint64(counter)
			out = append(out, r)
		}
		return out, rows.Err()
	}}
}

func newPostgresFacts(t testing.TB, url, schema string) *factReader {
	cfg, err := pgxpool.ParseConfig(url)
	must(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	must(t, err)
	t.Cleanup(pool.Close)
	q := fmt.Sprintf(factsQuery, "$1")
	return &factReader{query: func(ctx context.Context, edgeID string) ([]FactRow, error) {
		rows, err := pool.Query(ctx, q, edgeID)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []FactRow
		for rows.Next() {
			var r FactRow
			var counter int64
			if err := rows.Scan(&r.ID, &r.Kind, &r.Reason, &r.VisitID, &r.Conflict, &counter); err != nil {
				return nil, err
			}
			r.Counter = uint64(counter)
			out = append(out, r)
		}
		return out, rows.Err()
	}}
}

// FactRows returns every fact the cloud recorded from the edge, by
// counter: the rows of edge_facts, read with a query of the harness's own.
func (w *World) FactRows(t testing.TB, edgeID string) []FactRow {
	t.Helper()
	rows, err := w.facts.query(context.Background(), edgeID)
	must(t, err)
	return rows
}
