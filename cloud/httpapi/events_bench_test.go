package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
)

// BenchmarkPostVisitsEvents measures what writing events costs POST
// /v1/visits: the same requests through the full handler stack with the
// service's event renderer set (events on, as svc-cloud serves) and unset
// (no events written), on SQLite and on PostgreSQL (skipped unless
// SVC_TEST_POSTGRES_URL is set). Each request makes a new visit with a
// visitor of its own, as cloud/bench/visits.lua does. After the timed loop
// the benchmark counts the visit.created events written, so it cannot
// measure the wrong configuration unnoticed.
func BenchmarkPostVisitsEvents(b *testing.B) {
	for _, st := range []string{"sqlite", "postgres"} {
		b.Run("store="+st, func(b *testing.B) {
			for _, events := range []bool{true, false} {
				name := "events=off"
				if events {
					name = "events=on"
				}
				b.Run(name, func(b *testing.B) { benchPostVisits(b, st, events, 1) })
			}
		})
	}
}

// BenchmarkPostVisits is POST /v1/visits with events on, from 16
// goroutines a processor (32 on two cores, as cloud/bench/bench.sh's wrk
// connections), so that concurrent requests share SQLite's commits as they
// do under load. Besides the wall time it reports cpu-ns/op, the process's
// CPU time (user and system, every goroutine: the handlers, SQLite, the
// GC) over the timed loop divided by the requests: the cost that bounds
// the rate when the server is CPU-bound, and one that the machine's other
// load changes much less than the wall time.
func BenchmarkPostVisits(b *testing.B) {
	for _, st := range []string{"sqlite", "postgres"} {
		b.Run("store="+st, func(b *testing.B) { benchPostVisits(b, st, true, 16) })
	}
}

// benchWarmup is how many visits each run makes before the timer starts:
// they warm the connections and, on PostgreSQL, give ANALYZE rows to see.
// After 100 the visitors' table was a few pages, PostgreSQL cached a
// plan that scans it for the visitor's read, and every timed request
// scanned it whole as it grew (docs/performance.md, "Issue 20,
// thirteenth pass"); after 1,000 the read goes through its index.
const benchWarmup = 1000

// benchPostVisits runs the POST /v1/visits benchmarks; parallelism is
// b.SetParallelism's.
func benchPostVisits(b *testing.B, storeName string, events bool, parallelism int) {
	ctx := context.Background()
	var store cloud.Store
	analyze := func() {}
	switch storeName {
	case "sqlite":
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "cloud.db"), kektest.Ring())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		store = s
	case "postgres":
		url := postgrestest.URL(b)
		schema := postgrestest.NewSchema(b, url)
		s, err := postgrestest.OpenIn(b, url, schema)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		store = s
		// The test instance may run without autovacuum: analyze the
		// schema after the warm-up, as cloud/bench/bench.sh does, so the
		// planner does not go on believing the tables empty.
		analyze = func() {
			postgrestest.Exec(b, url, `DO $$DECLARE t text; BEGIN
				FOR t IN SELECT format('%I.%I', schemaname, tablename) FROM pg_tables WHERE schemaname = '`+schema+`' LOOP
					EXECUTE 'ANALYZE ' || t;
				END LOOP; END$$`)
		}
	}

	svc := cloud.NewService(store, time.Now)
	seed, err := svc.Seed(ctx, "Bench", cloud.PlanEnterprise)
	if err != nil {
		b.Fatal(err)
	}
	api, err := httpapi.New(ctx, httpapi.Config{Service: svc, RateLimits: map[cloud.Plan]int{cloud.PlanEnterprise: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	if !events {
		svc.SetEventRenderer(nil) // httpapi.New set it; unset, the service writes no events
	}
	tenant := cloud.Tenant{OrgID: seed.Organisation.ID, Mode: cloud.ModeTest}
	key := seed.Keys.SecretTest

	// A meeting at the first test-mode site hosted by the first person,
	// expected from an hour on for 12 hours; only the visitor's email
	// changes from request to request.
	now := time.Now().UTC()
	head := `{"site_id": "` + seed.Test.Sites[0].ID + `", "host_id": "` + seed.Test.People[0] +
		`", "type": "meeting", "expected_at": "` + now.Add(time.Hour).Format(time.RFC3339) +
		`", "expected_until": "` + now.Add(13*time.Hour).Format(time.RFC3339) +
		`", "visitor": {"name": "Load Visitor", "email": "load.`
	var n atomic.Int64
	post := func() error {
		body := head + strconv.FormatInt(n.Add(1), 10) + `@example.org"}}`
		req := httptest.NewRequest(http.MethodPost, "/v1/visits", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", uuid())
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		if w.Code != http.StatusCreated {
			return &statusError{w.Code, w.Body.String()}
		}
		return nil
	}

	for range benchWarmup {
		if err := post(); err != nil {
			b.Fatal(err)
		}
	}
	analyze()
	before := countEvents(b, store, tenant, "")

	b.ReportAllocs()
	b.SetParallelism(parallelism)
	cpu := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := post(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	if b.Failed() {
		return
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")

	created := countEvents(b, store, tenant, cloud.EventVisitCreated)
	switch {
	case events && created != benchWarmup+b.N:
		b.Fatalf("events on: %d visit.created events for %d visits", created, benchWarmup+b.N)
	case !events && created != 0:
		b.Fatalf("events off: %d visit.created events written", created)
	}
	b.ReportMetric(float64(countEvents(b, store, tenant, "")-before)/float64(b.N), "events/op")
}

// cpuTime is the CPU time the process has used so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return "status " + strconv.Itoa(e.code) + ": " + e.body }

// countEvents counts the tenant's events of type typ (every type when
// empty), page by page.
func countEvents(b *testing.B, store cloud.Store, t cloud.Tenant, typ string) int {
	b.Helper()
	n := 0
	p := cloud.Page{Limit: 100}
	for {
		evs, more, err := store.ListEvents(context.Background(), t, cloud.EventFilter{Type: typ}, p)
		if err != nil {
			b.Fatal(err)
		}
		n += len(evs)
		if !more || len(evs) == 0 {
			return n
		}
		last := evs[len(evs)-1]
		p.After = &cloud.Position{CreatedAt: last.CreatedAt, ID: last.ID}
	}
}
