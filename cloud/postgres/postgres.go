// Package postgres is the cloud Store on PostgreSQL (github.com/jackc/pgx/v5
// with a pgxpool): the store for several API processes sharing one
// database.
//
// It may import cloud, shared and pgx. Its schema is brought up to date by
// embedded, append-only migrations when a Store opens; processes starting at
// once take turns under an advisory lock.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
)

//go:embed migrations/*.sql
var migrations embed.FS

var _ cloud.Store = (*Store)(nil)

// Store is a cloud.Store on a PostgreSQL database.
type Store struct {
	pool db
	errs *errorCounter // the statements the database failed, by kind

	kek      *kek.Ring // seals the secrets (storedoc.SealedColumns)
	resealed int       // values Open sealed or re-sealed
	schema   int       // the newest migration's version, which Ready wants
	opts     Options
}

// Options change what opening a Store does.
type Options struct {
	// NoMigrate makes opening apply no migration: when the database lacks
	// one, it fails with an error wrapping cloud.ErrSchemaBehind, for a
	// rolling deploy whose migrations ran apart (svc-cloud migrate).
	NoMigrate bool
}

// Timeouts the store sets on its connections unless the URL (or the
// configuration given to OpenConfig) sets them (docs/decisions.md,
// "Database outages (issue 15)"): connecting, each statement, and a
// transaction left idle, so that an unreachable or stalled server fails a
// request with cloud.ErrUnavailable instead of holding it.
const (
	DefaultConnectTimeout   = 5 * time.Second
	DefaultStatementTimeout = 30 * time.Second
	DefaultIdleInTxTimeout  = 30 * time.Second
)

// Open connects to the database at url (a PostgreSQL URL or keyword/value
// string, as pgxpool.ParseConfig takes) and brings its schema up to date.
// keys seals the secrets the store keeps; with the migrations, under their
// lock and in their transaction, Open seals with its current KEK every
// secret that is not yet (plain values from before sealing, or values under
// an older KEK of the ring). Every process on the database needs a ring
// that opens what the others seal.
func Open(ctx context.Context, url string, keys *kek.Ring) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return OpenConfig(ctx, cfg, keys)
}

// OpenConfig is Open with a parsed configuration, for callers that set pool
// sizes or runtime parameters such as search_path.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config, keys *kek.Ring) (*Store, error) {
	return OpenWith(ctx, cfg, keys, Options{})
}

// OpenWith is OpenConfig with options; with NoMigrate it returns an
// error wrapping cloud.ErrSchemaBehind when the database lacks a
// migration.
func OpenWith(ctx context.Context, cfg *pgxpool.Config, keys *kek.Ring, opts Options) (*Store, error) {
	if keys == nil {
		return nil, errors.New("open postgres: no key-encryption key")
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	params := cfg.ConnConfig.RuntimeParams
	for name, d := range map[string]time.Duration{"statement_timeout": DefaultStatementTimeout,
		"idle_in_transaction_session_timeout": DefaultIdleInTxTimeout} {
		if _, set := params[name]; !set {
			params[name] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	// Every statement's outcome passes pgx's tracer: the one place that
	// counts the failed ones, beside a tracer the caller set.
	errs := &errorCounter{}
	if cfg.ConnConfig.Tracer == nil {
		cfg.ConnConfig.Tracer = errs
	} else {
		cfg.ConnConfig.Tracer = multitracer.New(cfg.ConnConfig.Tracer, errs)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", classify(err))
	}
	s := &Store{pool: db{pool}, errs: errs, kek: keys, opts: opts}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Resealed is how many secrets Open sealed or re-sealed under the current
// KEK: plain values from before sealing, or values under an older KEK.
func (s *Store) Resealed() int { return s.resealed }

// Ready implements cloud.Store.
func (s *Store) Ready(ctx context.Context) error {
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	if version < s.schema {
		return fmt.Errorf("ready: %w: at migration %d, want %d", cloud.ErrSchemaBehind, version, s.schema)
	}
	return nil
}

// Stats implements cloud.Store.
func (s *Store) Stats() cloud.StoreStats {
	st := s.pool.Stat()
	errs := s.errs.counts()
	return cloud.StoreStats{
		Pools: []cloud.PoolStats{{Name: "postgres", MaxOpen: int(st.MaxConns()), InUse: int(st.AcquiredConns()), Idle: int(st.IdleConns()),
			Waits: st.EmptyAcquireCount(), WaitTime: st.EmptyAcquireWaitTime()}},
		Errors: &errs,
	}
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// migrateLock is the pg_advisory_xact_lock key migrations run under: "svc_migr".
const migrateLock int64 = 0x7376635f6d696772

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		prefix, _, _ := strings.Cut(base, "_")
		version, err := strconv.Atoi(prefix)
		if err != nil || version <= 0 {
			return nil, fmt.Errorf("%s: name must start with a positive number", base)
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: version, name: base, sql: string(body)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("%s and %s share version %d", ms[i-1].name, ms[i].name, ms[i].version)
		}
	}
	return ms, nil
}

// migrate applies the migrations the database has not seen, all in one
// transaction holding an advisory lock, so that processes starting together
// neither race nor leave a half-applied schema.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if len(ms) > 0 {
		s.schema = ms[len(ms)-1].version
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		// Migrations may wait for another process's and rewrite big
		// tables: no statement timeout for them.
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		done, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return err
		}
		for _, m := range ms {
			if slices.Contains(done, int32(m.version)) {
				continue
			}
			if s.opts.NoMigrate {
				return fmt.Errorf("%w: it lacks %s (this program's newest is %d): run svc-cloud migrate first", cloud.ErrSchemaBehind, m.name, s.schema)
			}
			// No arguments: pgx sends it as a simple query, which may hold
			// several statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, m.version); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		s.resealed, err = reseal(ctx, tx, s.kek)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// inTx runs fn in a transaction, committing when it returns nil, with
// what was recorded for the write (queueEvents). fn's error is returned
// unchanged, after rolling back.
//
// Inside Atomic it runs fn in Atomic's transaction and queues what was
// recorded to go with Atomic's commit; its failure fails the whole.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if b := s.bound(ctx); b != nil {
		err := fn(b.tx)
		if err == nil {
			err = b.record(ctx, s.kek)
		}
		if err != nil && b.err == nil {
			b.err = err
		}
		return err
	}
	return s.Atomic(ctx, func(ctx context.Context) error {
		return fn(s.bound(ctx).tx)
	})
}

// querier is what the pool and a transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// scanner is a pgx.Row or a pgx.CollectableRow.
type scanner interface {
	Scan(dest ...any) error
}

// null stores "" as NULL.
func null(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullTime stores nil as NULL.
func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}

// timePtr reads a nullable timestamptz, in UTC.
func timePtr(v pgtype.Timestamptz) *time.Time {
	if !v.Valid {
		return nil
	}
	t := v.Time.UTC()
	return &t
}

// uniqueViolation and foreignKeyViolation are the SQLSTATEs of a broken
// UNIQUE and a broken REFERENCES.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
)

// translate turns constraint violations into the domain's errors: a used
// email into *cloud.ConflictError, any other duplicate into ErrConflict, a
// reference to a missing object into ErrNotFound. op names the operation.
func translate(op string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == uniqueViolation && pe.ConstraintName == "people_email":
			return &cloud.ConflictError{Field: "email", Message: "another person already has this email address"}
		case pe.Code == uniqueViolation:
			return fmt.Errorf("%s: %w: %w", op, cloud.ErrConflict, err)
		case pe.Code == foreignKeyViolation:
			return fmt.Errorf("%s: %w: %w", op, cloud.ErrNotFound, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// list is a SELECT of one tenant's rows being built: filters are added with
// where, and page finishes it with the keyset condition, order and limit.
type list struct {
	sql   strings.Builder
	args  []any
	alias string // qualifies created_at and key in page: "" or "v."
	key   string // the unique column ordered on after created_at, Position.ID
	// sortRows makes page order on an expression of created_at, which no
	// index gives: the planner then reads the rows of the list's other
	// conditions through their index and sorts them (sortWindow).
	sortRows bool
	// fixedLimit writes page's LIMIT into the statement (a number, not a
	// parameter). A statement's prepared plan is costed for a LIMIT
	// parameter as if it took a tenth of the rows; where the filter's
	// value matches many rows that costs more than the plan for the page
	// asked, so PostgreSQL plans the statement again at each run (a custom
	// plan) rather than reuse its generic one. With the number in the
	// statement both cost the same page and the generic plan is kept.
	// One statement per page size: the API's limits are 1 to 100.
	fixedLimit bool
}

// sortWindow says whether a range from..before on a column other than
// the list's order is short enough to read whole and sort (list.sortRows).
// The planner would rather read the list's index newest first, testing
// each row, expecting the range's rows to be spread evenly over it; they
// are not (a visit is expected about when it is made), and a day in the
// middle of 200,000 visits took 16 ms so, against 1 ms read through the
// range's index (docs/performance.md, "Lists at scale (issue 20)").
func sortWindow(from, before *time.Time) bool {
	return from != nil && before != nil && before.Sub(*from) <= 31*24*time.Hour
}

// newList starts "SELECT cols FROM table WHERE org_id = $1 AND mode = $2".
func newList(cols, table string, t cloud.Tenant) *list {
	return newListOn(cols, table, "", "id", t)
}

// newListOn is newList for a FROM clause whose listed table is qualified
// by alias (with its dot, or "") and ordered on created_at and key.
func newListOn(cols, from, alias, key string, t cloud.Tenant) *list {
	l := &list{args: []any{t.OrgID, string(t.Mode)}, alias: alias, key: key}
	l.sql.WriteString("SELECT " + cols + " FROM " + from + " WHERE " + alias + "org_id = $1 AND " + alias + "mode = $2")
	return l
}

// where adds " AND cond", cond naming its argument $%[1]d (as often as it
// needs to).
func (l *list) where(cond string, arg any) {
	l.args = append(l.args, arg)
	l.sql.WriteString(" AND ")
	fmt.Fprintf(&l.sql, cond, len(l.args))
}

// whereIn adds " AND col = $n" for one value and " AND col = ANY($n)"
// for several: the planner reads an index on col in its order only for
// one value.
func (l *list) whereIn(col string, values []string) {
	if len(values) == 1 {
		l.where(col+" = $%d", values[0])
		return
	}
	l.where(col+" = ANY($%d)", values)
}

// page adds the newest-first keyset condition and asks for one row more
// than p.Limit, which says whether more follow.
func (l *list) page(p cloud.Page) {
	a, k := l.alias, l.key
	if p.After != nil {
		l.args = append(l.args, p.After.CreatedAt, p.After.ID)
		fmt.Fprintf(&l.sql, " AND (%[1]screated_at, %[1]s%[2]s) < ($%[3]d::timestamptz, $%[4]d::text)", a, k, len(l.args)-1, len(l.args))
	}
	order := a + "created_at"
	if l.sortRows {
		order = "(" + order + " + interval '0 s')"
	}
	fmt.Fprintf(&l.sql, " ORDER BY %[1]s DESC, %[2]s%[3]s DESC", order, a, k)
	if l.fixedLimit {
		fmt.Fprintf(&l.sql, " LIMIT %d", p.Limit+1)
		return
	}
	l.args = append(l.args, p.Limit+1)
	fmt.Fprintf(&l.sql, " LIMIT $%d", len(l.args))
}

// collect runs a list built with page and returns at most limit rows and
// whether more follow.
func collect[T any](ctx context.Context, q querier, l *list, limit int, fn pgx.RowToFunc[T]) ([]T, bool, error) {
	rows, _ := q.Query(ctx, l.sql.String(), l.args...)
	out, err := pgx.CollectRows(rows, fn)
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}
