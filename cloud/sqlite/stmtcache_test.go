package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
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
