// Package benchutil holds what the load programs under cloud/bench share:
// a statement tracer for a PostgreSQL pool and nearest-rank percentiles.
package benchutil

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
)

// SQLTracer counts and times the statements of a PostgreSQL pool while it
// is on, by their first words. Set it as the pool's ConnConfig.Tracer.
type SQLTracer struct {
	on    atomic.Bool
	mu    sync.Mutex
	stats map[string]*sqlStat
}

type sqlStat struct {
	n     int
	total time.Duration
}

type traceKey struct{}

type traceStart struct {
	sql string
	at  time.Time
}

// On starts or stops counting.
func (t *SQLTracer) On(on bool) { t.on.Store(on) }

// TraceQueryStart implements pgx.QueryTracer.
func (t *SQLTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !t.on.Load() {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, traceStart{d.SQL, time.Now()})
}

// TraceQueryEnd implements pgx.QueryTracer.
func (t *SQLTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	st, ok := ctx.Value(traceKey{}).(traceStart)
	if !ok {
		return
	}
	d := time.Since(st.at)
	key := strings.Join(strings.Fields(st.sql), " ")
	if len(key) > 100 {
		key = key[:100]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stats == nil {
		t.stats = map[string]*sqlStat{}
	}
	s := t.stats[key]
	if s == nil {
		s = &sqlStat{}
		t.stats[key] = s
	}
	s.n++
	s.total += d
}

// Report prints the statements by total time, and per unit of work (n of
// them, each called unit: "fact", "delivery").
func (t *SQLTracer) Report(w io.Writer, unit string, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]string, 0, len(t.stats))
	var all time.Duration
	calls := 0
	for k, s := range t.stats {
		keys = append(keys, k)
		all += s.total
		calls += s.n
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(t.stats[b].total, t.stats[a].total) })
	fmt.Fprintf(w, "SQL during the run: %d statements (%.2f a %s), %.1f s in all (statements of concurrent callers overlap)\n",
		calls, float64(calls)/float64(n), unit, all.Seconds())
	for _, k := range keys {
		s := t.stats[k]
		fmt.Fprintf(w, "  %8d  %6.2f a %s  %7.1f s  %7.3f ms each  %s\n", s.n, float64(s.n)/float64(n), unit, s.total.Seconds(),
			MS(s.total)/float64(s.n), k)
	}
}

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Pct is the p-th percentile of sorted ds, nearest rank; 0 when ds is empty.
func Pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds))*p/100+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// LoadAvg is the machine's 1, 5 and 15 minute load averages as
// /proc/loadavg gives them, or "?" where it cannot be read: every figure a
// load program prints carries it, since a busy machine skews them.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// AnalyzeSchema runs ANALYZE (VACUUM ANALYZE with vacuum) on every table
// of a PostgreSQL schema, as autovacuum would in time, so a measure after
// a bulk load plans on real statistics.
func AnalyzeSchema(ctx context.Context, conn *pgx.Conn, schema string, vacuum bool) error {
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1`, schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	verb := "ANALYZE "
	if vacuum {
		verb = "VACUUM ANALYZE "
	}
	for _, t := range tables {
		if _, err := conn.Exec(ctx, verb+pgx.Identifier{schema, t}.Sanitize()); err != nil {
			return fmt.Errorf("%s%s: %w", strings.ToLower(verb), t, err)
		}
	}
	return nil
}

// API serves httpapi on svc in this process, as the load programs measure
// it: the full middleware stack, the rate limit raised so that it does not
// bind but still counted on every request, and no log.
func API(ctx context.Context, svc *cloud.Service) (*httptest.Server, error) {
	srv, err := httpapi.New(ctx, httpapi.Config{Service: svc, RateLimits: map[cloud.Plan]int{cloud.PlanEnterprise: 1 << 30},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return httptest.NewServer(srv), nil
}
