// Package sqlite is the cloud Store on a SQLite file (modernc.org/sqlite,
// pure Go): the zero-set-up default for one API process.
//
// It may import cloud, shared and the SQLite driver. One process owns the
// file: writes go through a single connection, reads through a pool, and the
// per-minute request counters live in memory (docs/decisions.md).
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
)

//go:embed migrations/*.sql
var migrations embed.FS

var _ cloud.Store = (*Store)(nil)

// Store is a cloud.Store on one SQLite file.
type Store struct {
	w *sql.DB // one connection: SQLite has one writer at a time
	// writer hands the writer connection's open transaction to one
	// Atomic call at a time and commits calls together (group commit).
	writer *writer
	ws     *writeStmts // the writer's hot statements, prepared once
	r      *readDB     // readers, concurrent under WAL, statements prepared once
	ckpt   *checkpointer

	countsMu sync.Mutex
	counts   map[countKey]int64

	publishMu sync.Mutex // one PublishFeeds at a time

	kek      *kek.Ring // seals the secrets (storedoc.SealedColumns)
	resealed int       // values Open sealed or re-sealed
	schema   int       // the newest migration's version, which Ready wants
	opts     Options
}

// Options change what opening a Store does.
type Options struct {
	// NoMigrate makes opening apply no migration: when the file lacks
	// one, it fails with an error wrapping cloud.ErrSchemaBehind (as with
	// svc-cloud serve --no-migrate, after svc-cloud migrate).
	NoMigrate bool
	// Readers is the most read connections open at once; 0 is
	// DefaultReaders.
	Readers int
}

// DefaultReaders is Options.Readers's default: SQLite reads are CPU
// work in this process, so more connections than about two per core only
// add preemption in the middle of queries. On 2 cores, 2 to 4 readers
// gave GET /teams a p99 near 18 ms at 32 clients, 64 readers 35 ms
// (docs/performance.md).
func DefaultReaders() int { return 2 * runtime.GOMAXPROCS(0) }

type countKey struct {
	t      cloud.Tenant
	window int64
}

// Open opens (creating if need be) the database file at path and brings its
// schema up to date. keys seals the secrets the store keeps; Open seals
// with its current KEK every secret that is not yet (plain values from
// before sealing, or values sealed under an older KEK of the ring), in one
// transaction. A new file is made readable by its owner only (mode 0600),
// and SQLite gives its -wal and -shm files the same mode.
func Open(ctx context.Context, path string, keys *kek.Ring) (*Store, error) {
	return OpenWith(ctx, path, keys, Options{})
}

// OpenWith is Open with options; with NoMigrate it returns an error
// wrapping cloud.ErrSchemaBehind when the file lacks a migration.
func OpenWith(ctx context.Context, path string, keys *kek.Ring, opts Options) (*Store, error) {
	if keys == nil {
		return nil, fmt.Errorf("open sqlite %s: no key-encryption key", path)
	}
	if err := ensureDir(path); err != nil {
		return nil, err
	}
	if err := ensureFile(path); err != nil {
		return nil, err
	}
	// synchronous=FULL: a commit is fsynced before it returns, so a 201
	// is on disk (docs/decisions.md, issue 20). temp_store=MEMORY keeps
	// the sub-journals (statement journals, and the savepoints of safe
	// Atomic calls) in memory: on a file they wrote every page a call
	// touched once more (a sixth of the CPU).
	// The WAL's checkpoints are the checkpointer's (checkpoint.go); the
	// writer makes one only past writerAutoCheckpoint pages.
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", "foreign_keys(1)", "synchronous(FULL)", "temp_store(MEMORY)",
		fmt.Sprintf("wal_autocheckpoint(%d)", writerAutoCheckpoint)} {
		q.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + q.Encode()
	wr := newWriter()
	w := sql.OpenDB(writerConnector{dsn: dsn + "&_txlock=immediate", changes: &wr.changes})
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	s := &Store{w: w, writer: wr, counts: map[countKey]int64{}, kek: keys, opts: opts}
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := s.tx(ctx, func(tx *sql.Tx) (err error) {
		s.resealed, err = reseal(ctx, tx, keys)
		return err
	}); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	var err error
	if s.ws, err = prepareWrites(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err := sql.Open(driverName, dsn+"&mode=ro")
	if err != nil {
		s.ws.Close()
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	readers := opts.Readers
	if readers <= 0 {
		readers = DefaultReaders()
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxLifetime(0)
	c, err := sql.Open(driverName, dsn)
	if err != nil {
		r.Close()
		s.ws.Close()
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s.r = newReadDB(r)
	s.ckpt = newCheckpointer(c, checkpointEvery)
	s.writer.committed = s.ckpt.committed
	return s, nil
}

func ensureDir(path string) error {
	dir := filepath.Dir(path)
	if dir == "" || dir == "." {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("open sqlite: create %s: %w", dir, err)
	}
	return nil
}

// ensureFile creates the database file, mode 0600, when it does not exist:
// SQLite would make it 0644 (less the umask), and its -wal and -shm files
// take the database file's mode.
func ensureFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open sqlite: create %s: %w", path, err)
	}
	return f.Close()
}

// Resealed is how many secrets Open sealed or re-sealed under the current
// KEK: plain values from before sealing, or values under an older KEK.
func (s *Store) Resealed() int { return s.resealed }

// Close stops the checkpointer and closes the pools.
func (s *Store) Close() error {
	s.ws.Close()
	return errors.Join(s.ckpt.close(), s.r.Close(), s.w.Close())
}

// Ready implements cloud.Store: one read of the migrations table, on the
// read pool, so a write transaction holding the writer does not make it
// wait.
func (s *Store) Ready(ctx context.Context) error {
	var version int
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("ready: %w", classify(err))
	}
	if version < s.schema {
		return fmt.Errorf("ready: %w: at migration %d, want %d", cloud.ErrSchemaBehind, version, s.schema)
	}
	return nil
}

// Stats implements cloud.Store. SQLite's errors pass no one place (reads
// go to the driver from many), so they are not counted.
func (s *Store) Stats() cloud.StoreStats {
	pool := func(name string, st sql.DBStats) cloud.PoolStats {
		return cloud.PoolStats{Name: name, MaxOpen: st.MaxOpenConnections, InUse: st.InUse, Idle: st.Idle,
			Waits: st.WaitCount, WaitTime: st.WaitDuration}
	}
	return cloud.StoreStats{Pools: []cloud.PoolStats{pool("sqlite_write", s.w.Stats()), pool("sqlite_read", s.r.Stats())},
		WAL: s.ckpt.stats()}
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sort.Strings(names)
	newest := 0
	for _, name := range names {
		if v, err := strconv.Atoi(strings.SplitN(filepath.Base(name), "_", 2)[0]); err == nil {
			newest = max(newest, v)
		}
	}
	for _, name := range names {
		version, err := strconv.Atoi(strings.SplitN(filepath.Base(name), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migrate: %s: name must start with a number", name)
		}
		s.schema = max(s.schema, version)
		body, err := migrations.ReadFile(name)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		err = s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if s.opts.NoMigrate {
				return fmt.Errorf("%w: it lacks %s (this program's newest is %d): run svc-cloud migrate first", cloud.ErrSchemaBehind, filepath.Base(name), newest)
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, version, time.Now().UnixMicro())
			return err
		})
		if errors.Is(err, cloud.ErrSchemaBehind) {
			return fmt.Errorf("open sqlite: %w", err)
		}
		if err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	return nil
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it with
// what was recorded for the write: its events and audit entries
// (insertEvents) and its request's idempotency record (cloud.TakeReply).
//
// Inside Atomic it runs fn and those writes in Atomic's transaction and
// leaves the commit to Atomic; its failure fails the whole.
//
// A write of its own, outside a request's Atomic call, is safe (a
// savepoint of its own, see Atomic): fn need not be one that can run
// twice. rerunTx is tx for a fn that can.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.txSafe(ctx, fn, true)
}

// rerunTx is tx for a fn that may run twice, each run from its start with
// nothing of the other left (it sets, never adds to, what it hands out):
// outside Atomic it writes as Atomic's calls do, without a savepoint,
// and runs again if a later call of its batch rolls the transaction back.
func (s *Store) rerunTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.txSafe(ctx, fn, false)
}

func (s *Store) txSafe(ctx context.Context, fn func(*sql.Tx) error, safe bool) error {
	if b := s.bound(ctx); b != nil {
		tx, err := b.begin(ctx)
		if err == nil {
			err = fn(tx)
		}
		if err == nil {
			err = s.finish(ctx, b)
		}
		if err != nil && b.err == nil {
			b.err = err
		}
		return classify(err)
	}
	call := func(ctx context.Context) error { return s.txSafe(ctx, fn, safe) }
	if safe {
		return s.atomic(ctx, call, true)
	}
	return s.Atomic(ctx, call)
}

// micros and fromMicros convert the stored form of times.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func nullMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func fromNullMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// null stores "" as NULL.
func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func str(v sql.NullString) string { return v.String }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keyset adds the newest-first page condition and order to a query whose
// WHERE clause is already open.
func keyset(q *strings.Builder, args []any, p cloud.Page, prefix string) []any {
	return keysetOn(q, args, p, prefix, "id")
}

// keysetOn is keyset for a table whose unique key, the second order column
// and Position.ID, is the column key.
func keysetOn(q *strings.Builder, args []any, p cloud.Page, prefix, key string) []any {
	if p.After != nil {
		// A row value, which SQLite reads as a range of the list's index
		// (an OR of the two comparisons it reads from the index's start).
		fmt.Fprintf(q, " AND (%[1]screated_at, %[1]s%[2]s) < (?, ?)", prefix, key)
		args = append(args, micros(p.After.CreatedAt), p.After.ID)
	}
	fmt.Fprintf(q, " ORDER BY %[1]screated_at DESC, %[1]s%[2]s DESC LIMIT ?", prefix, key)
	return append(args, p.Limit+1)
}

// A nameSearch is a list of table (people or teams) that may be searched
// by name (query, q folded): match is the test of a row (" AND ...",
// instr of query in its folded columns, with matchArgs), which decides
// what the list holds whichever way the rows are found.
type nameSearch struct {
	table, key, cols string // key: the table's ID column in table_search_rows
	query            string
	match            string
	matchArgs        []any
}

// searchWindow is how many of the newest rows (after the cursor) a name
// search tests in list order before it asks the trigram index instead.
const searchWindow = 2000

// searchList lists the rows of n.table in the tenant that hold the
// conditions conds (" AND ...", with args) and, when n.query is set, match
// it, newest first. SQLite has no statistics to choose with, so the list
// chooses: a query shorter than a trigram (cloud.SearchIndexed) is tested
// on the rows in list order; a longer one first on the searchWindow
// newest rows, which hold a page of the matches of a query many rows
// match, and otherwise through the trigram index table_search
// (migration 0051), which finds the rows holding every trigram of the
// query, fewer than searchWindow/page of the rows: those are read in the
// index's order (CROSS JOIN: SQLite keeps the order written) and sorted.
func searchList[T any](ctx context.Context, s *Store, n nameSearch, scan func(scanner) (T, error), t cloud.Tenant, conds string, args []any, p cloud.Page) ([]T, bool, error) {
	tenant := []any{t.OrgID, string(t.Mode)}
	match, matchArgs := n.match, n.matchArgs
	if n.query == "" {
		match, matchArgs = "", nil
	}
	var q strings.Builder
	if !cloud.SearchIndexed(n.query) {
		q.WriteString(`SELECT ` + n.cols + ` FROM ` + n.table + ` WHERE org_id = ? AND mode = ?` + match + conds)
		all := keyset(&q, slices.Concat(tenant, matchArgs, args), p, "")
		return list(ctx, s.r, scan, p.Limit, q.String(), all...)
	}
	q.WriteString(`SELECT ` + n.cols + ` FROM (SELECT * FROM ` + n.table + ` WHERE org_id = ? AND mode = ?` + conds)
	all := keyset(&q, slices.Concat(tenant, args), cloud.Page{Limit: searchWindow - 1, After: p.After}, "")
	q.WriteString(`) WHERE 1` + match + ` ORDER BY created_at DESC, id DESC LIMIT ?`)
	all = append(append(all, matchArgs...), p.Limit+1)
	out, more, err := list(ctx, s.r, scan, p.Limit, q.String(), all...)
	if err != nil || more {
		return out, more, err
	}
	q.Reset()
	fmt.Fprintf(&q, `SELECT %[3]s FROM %[1]s_search CROSS JOIN %[1]s_search_rows r ON r.row = %[1]s_search.rowid
		CROSS JOIN %[1]s ON %[1]s.id = r.%[2]s WHERE org_id = ? AND mode = ? AND %[1]s_search MATCH ?`, n.table, n.key, n.cols)
	q.WriteString(match + conds)
	// One FTS5 string: the phrase of the query's trigrams, in which a
	// double quote is written twice.
	phrase := `"` + strings.ReplaceAll(n.query, `"`, `""`) + `"`
	all = keyset(&q, slices.Concat(tenant, []any{phrase}, matchArgs, args), p, "")
	return list(ctx, s.r, scan, p.Limit, q.String(), all...)
}

// whereIn adds " AND col = ?" for one value and " AND col IN (?, ...)"
// for several (SQLite reads an index on col in its order only for one
// value), and returns args with the values.
func whereIn(q *strings.Builder, args []any, col string, values []string) []any {
	q.WriteString(" AND " + col)
	if len(values) == 1 {
		q.WriteString(" = ?")
	} else {
		q.WriteString(" IN (?" + strings.Repeat(", ?", len(values)-1) + ")")
	}
	for _, v := range values {
		args = append(args, v)
	}
	return args
}

// trim cuts a page fetched with one extra row and says whether more follow.
func trim[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

func isUniqueViolation(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}
