package httpapi_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/sqlite/sqlitetest"
)

// txTracer counts, from the client's side, the transactions a pgx pool
// runs: each statement outside BEGIN … COMMIT is a transaction of its own.
// A transaction writes when one of its statements inserts, updates or
// deletes; writes only to request_counts (unlogged: its commit waits for
// no WAL flush) are counted apart.
type txTracer struct {
	mu                  sync.Mutex
	conns               map[*pgx.Conn]*txState
	txs, writes, counts int64
}

type txState struct {
	open, wrote, logged bool
}

func (t *txTracer) statement(conn *pgx.Conn, sql string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.conns[conn]
	if st == nil {
		st = &txState{}
		t.conns[conn] = st
	}
	s := strings.ToLower(strings.TrimSpace(sql))
	write := strings.HasPrefix(s, "insert") || strings.HasPrefix(s, "update") || strings.HasPrefix(s, "delete") ||
		strings.Contains(s, " insert into ") || strings.Contains(s, "\tinsert into ")
	logged := write && !strings.Contains(s, "request_counts")
	switch {
	case strings.HasPrefix(s, "begin"):
		*st = txState{open: true}
	case s == "commit" || s == "rollback":
		if s == "commit" {
			t.end(st)
		}
		*st = txState{}
	case st.open:
		st.wrote = st.wrote || write
		st.logged = st.logged || logged
	default:
		t.end(&txState{wrote: write, logged: logged})
	}
}

func (t *txTracer) end(st *txState) {
	t.txs++
	switch {
	case st.logged:
		t.writes++
	case st.wrote:
		t.counts++
	}
}

func (t *txTracer) snapshot() (txs, writes, counts int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.txs, t.writes, t.counts
}

func (t *txTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	t.statement(conn, data.SQL)
	return ctx
}
func (t *txTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (t *txTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (t *txTracer) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	t.statement(conn, data.SQL)
}
func (t *txTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestCommitsPerPost counts the transactions each kind of write request
// commits, sequentially, through the whole stack: on SQLite the commits
// of write transactions, on PostgreSQL every transaction (reads included,
// each its own) and, of those, the ones that write a logged table. The
// figures are in docs/performance.md ("Commits per write request" and
// "Writes in one transaction (issue 20)"). The action and its stored
// response share one transaction, so a request commits exactly one write
// besides the rate-limit claims.
//
// On PostgreSQL the reads that decide the action (site, hosts, visit
// type, visitor; the visit, site and gate of a check-in; a team's
// members) run inside that transaction (Store.Atomic), so each request
// makes exactly txsPerRequest transactions: the API key's read, the
// idempotency record's read and the action, and then the harness's replay
// of it makes the first two again (the replay's record is found, so it
// acts no more). The rate-limit count is a transaction only when the
// process claims another slice of the budget (limits.go), which the test
// counts apart.
func TestCommitsPerPost(t *testing.T) {
	const n = 20
	const txsPerRequest = 3 + 2
	type counter func() (txs, writes, counts int64)
	for _, st := range []struct {
		name string
		open func(t *testing.T) (cloud.Store, counter)
	}{
		{"sqlite", func(t *testing.T) (cloud.Store, counter) {
			path := filepath.Join(t.TempDir(), "cloud.db")
			c := sqlitetest.CommitCounter(path)
			s, err := sqlite.Open(context.Background(), path, kektest.Ring())
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s, func() (int64, int64, int64) { n := c.Load(); return n, n, 0 }
		}},
		{"postgres", func(t *testing.T) (cloud.Store, counter) {
			url := postgrestest.URL(t)
			schema := postgrestest.NewSchema(t, url)
			cfg, err := pgxpool.ParseConfig(url)
			require.NoError(t, err)
			cfg.ConnConfig.RuntimeParams["search_path"] = schema
			tr := &txTracer{conns: map[*pgx.Conn]*txState{}}
			cfg.ConnConfig.Tracer = tr
			s, err := postgres.OpenConfig(context.Background(), cfg, kektest.Ring())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s, tr.snapshot
		}},
	} {
		t.Run(st.name, func(t *testing.T) {
			var count counter
			h := newHarness(t, func(t *testing.T) cloud.Store {
				s, c := st.open(t)
				count = c
				return s
			}, withPlan(cloud.PlanEnterprise))
			site, host := h.seed.Test.Sites[0].ID, h.seed.Test.People[0]
			visit := func(i int) map[string]any {
				return map[string]any{"site_id": site, "host_id": host, "type": "meeting",
					"expected_at": h.clock.Now().Format(time.RFC3339), "visitor": map[string]any{"name": "Counted Visitor", "email": "counted." + uuid() + "@example.org"}}
			}
			// Warm up: the first visit makes the tenant's pass-signing key.
			require.Equal(t, http.StatusCreated, h.post("/v1/visits", visit(0)).Status)

			measure := func(name string, do func(i int)) {
				txs0, w0, c0 := count()
				for i := range n {
					do(i)
				}
				txs1, w1, c1 := count()
				t.Logf("%s %s: %.1f transactions, %.1f writing logged tables, %.1f rate-limit counts per request",
					st.name, name, float64(txs1-txs0)/n, float64(w1-w0)/n, float64(c1-c0)/n)
				require.Equal(t, int64(n), w1-w0, "%s: one write transaction per request, the action with its stored response", name)
				if st.name == "postgres" {
					claims := c1 - c0
					require.Equal(t, int64(txsPerRequest*n)+claims, txs1-txs0,
						"%s: key, idempotency record and one transaction for the action with the reads that decide it; the replay's key and record; and the rate-limit claims", name)
					// The enterprise budget (12,000 a minute) is claimed 60
					// requests at a time: the 2n counts of a measure (the
					// request's and the replay's) take one claim at most.
					require.LessOrEqual(t, claims, int64(1), "%s: the rate-limit counts are claimed in slices", name)
				}
			}
			var ids []string
			measure("POST /v1/visits", func(i int) {
				r := h.post("/v1/visits", visit(i))
				require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
				ids = append(ids, r.Body["id"].(string))
			})
			measure("POST /v1/visits/{id}/check-in", func(i int) {
				r := h.post("/v1/visits/"+ids[i]+"/check-in", nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			})
			measure("POST /v1/teams", func(i int) {
				r := h.post("/v1/teams", map[string]any{"name": "Counted team " + uuid(), "member_ids": []string{host}})
				require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			})
		})
	}
}
