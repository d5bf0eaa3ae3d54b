package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCachingConn_PreparesEachQueryOnce runs statements with arguments
// on one connection and checks that each query text was prepared once and
// kept, that a query run again while its own rows are open still answers
// (with a statement of its own), and that a failed statement is dropped.
func TestCachingConn_PreparesEachQueryOnce(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open(driverName, "file:"+filepath.Join(t.TempDir(), "c.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	kept := func() map[string]*cachedStmt {
		var m map[string]*cachedStmt
		require.NoError(t, conn.Raw(func(dc any) error { m = dc.(*cachingConn).stmts; return nil }))
		return m
	}

	_, err = conn.ExecContext(ctx, `CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)`)
	require.NoError(t, err)
	require.Empty(t, kept(), "a statement without arguments is not kept")
	const ins = `INSERT INTO t (a, b) VALUES (?, ?)`
	for i := range 3 {
		_, err := conn.ExecContext(ctx, ins, i, "x")
		require.NoError(t, err)
	}
	require.Len(t, kept(), 1)
	st := kept()[ins]
	_, err = conn.ExecContext(ctx, ins, 3, "y")
	require.NoError(t, err)
	require.Same(t, st, kept()[ins], "the same statement runs again")

	const sel = `SELECT a FROM t WHERE a >= ? ORDER BY a`
	rows, err := conn.QueryContext(ctx, sel, 0)
	require.NoError(t, err)
	var outer, inner []int
	for rows.Next() {
		var a int
		require.NoError(t, rows.Scan(&a))
		outer = append(outer, a)
		if a == 1 {
			in, err := conn.QueryContext(ctx, sel, 2)
			require.NoError(t, err)
			for in.Next() {
				var b int
				require.NoError(t, in.Scan(&b))
				inner = append(inner, b)
			}
			require.NoError(t, in.Close())
		}
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, []int{0, 1, 2, 3}, outer)
	require.Equal(t, []int{2, 3}, inner)
	require.False(t, kept()[sel].busy)

	_, err = conn.ExecContext(ctx, ins, 0, "dup")
	require.Error(t, err, "the primary key refuses it")
	require.NotContains(t, kept(), ins, "a failed statement is dropped")
	_, err = conn.ExecContext(ctx, ins, 9, "z")
	require.NoError(t, err)
	var n int
	require.NoError(t, conn.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE b = ?`, "z").Scan(&n))
	require.Equal(t, 1, n)
}

// TestKindOf: a statement is a read, DML that reports its rows, or
// anything else, by its first word in any case.
func TestKindOf(t *testing.T) {
	for q, want := range map[string]stmtKind{
		"SELECT 1":                             kindRead,
		"\n\t  select x FROM t":                kindRead,
		"(SELECT 1)":                           kindRead,
		"SELECTED":                             kindOther,
		"INSERT INTO t VALUES (?)":             kindDML,
		"insert into t values (1)":             kindDML,
		"UPDATE t SET x = 1":                   kindDML,
		"DELETE FROM t":                        kindDML,
		"REPLACE INTO t VALUES (1)":            kindDML,
		"UPDATEx":                              kindOther,
		"WITH a AS (SELECT 1) SELECT * FROM a": kindOther,
		"SAVEPOINT atomic":                     kindOther,
		"PRAGMA foreign_keys(1)":               kindOther,
		"":                                     kindOther,
	} {
		require.Equal(t, want, kindOf(q), "%q", q)
	}
}

// TestWriterChanges_NeverBelowTotalChanges runs statements of each kind
// on the writer's connection and compares its count of changes with
// SQLite's own total_changes(): equal for what Exec runs of INSERT,
// UPDATE and DELETE (none for a constraint's failure or a row not
// matched), never less for the rest.
func TestWriterChanges_NeverBelowTotalChanges(t *testing.T) {
	ctx := context.Background()
	var changes atomic.Int64
	db := sql.OpenDB(writerConnector{dsn: "file:" + filepath.Join(t.TempDir(), "w.db"), changes: &changes})
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	_, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, x INTEGER NOT NULL)`)
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	total := func() int64 {
		var n int64
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&n))
		return n
	}
	step := func(name string, exact bool, run func() error, wantErr bool) {
		t.Helper()
		c0, t0 := changes.Load(), total()
		err := run()
		if wantErr {
			require.Error(t, err, name)
		} else {
			require.NoError(t, err, name)
		}
		got, want := changes.Load()-c0, total()-t0
		if exact {
			require.Equal(t, want, got, "%s: counted against total_changes()", name)
		} else {
			require.GreaterOrEqual(t, got, max(want, 1), "%s: counted against total_changes()", name)
		}
	}
	exec := func(q string, args ...any) func() error {
		return func() error { _, err := tx.ExecContext(ctx, q, args...); return err }
	}
	step("insert three", true, exec(`INSERT INTO t (id, x) VALUES (?, 1), (?, 1), (?, 1)`, 1, 2, 3), false)
	step("update two", true, exec(`UPDATE t SET x = 2 WHERE id > ?`, 1), false)
	step("update none", true, exec(`UPDATE t SET x = 3 WHERE id > ?`, 10), false)
	step("insert a key taken", true, exec(`INSERT INTO t (id, x) VALUES (?, 1)`, 1), true)
	step("insert null", true, exec(`INSERT INTO t (id, x) VALUES (?, NULL)`, 9), true)
	step("delete without arguments", true, exec(`DELETE FROM t WHERE id = 3`), false)
	step("select", true, func() error {
		var n int
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE id > ?`, 0).Scan(&n)
	}, false)
	step("insert returning", false, func() error {
		var id int
		return tx.QueryRowContext(ctx, `INSERT INTO t (id, x) VALUES (?, 1) RETURNING id`, 4).Scan(&id)
	}, false)
	step("a savepoint", false, exec(`SAVEPOINT s`), false)
	step("a failure not a constraint's", false, exec(`INSERT INTO t (id, x) VALUES (?, 1)`, "not a rowid"), true)
}
