package postgres_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/storetest"
)

// TestListCalls checks the table of lists and filters covers the Store.
func TestListCalls(t *testing.T) { storetest.CheckListCalls(t) }

// TestListPlans checks every list, with each filter, is served by its index
// (storetest.ListCalls): the plan of EXPLAIN (FORMAT JSON) must scan the
// index, hold no Seq Scan and, where the index gives the order, no Sort.
// The tables are empty, on which the planner would read them whole, so
// the statements are explained with enable_seqscan off and, where the
// index gives the order, enable_sort off: the plan chosen then shows
// whether an index serves the filter (and the order) at all.
func TestListPlans(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	s, conn := planStore(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = rec })
	// Rows in the tenant the calls list, none of which matches a call's
	// filter, then ANALYZE: on them the planner sees each filter as
	// selective, as a filter that matches few rows is, and the list's
	// index, which would have to be read whole, as the dearer path.
	for _, q := range fillPlans {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	storetest.RunListPlans(t, s, func(t *testing.T, sorted bool, run func() error) storetest.Plan {
		rec.start()
		err := run()
		first, ok := rec.first()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatal("the call ran no statement")
		}
		return explain(t, conn, sorted, first)
	})
}

type statement struct {
	sql  string
	args []any
}

// recorder keeps the first statement a pool runs after start.
type recorder struct {
	mu  sync.Mutex
	on  bool
	got *statement
}

func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.got = true, nil
}

func (r *recorder) first() (statement, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	if r.got == nil {
		return statement{}, false
	}
	return *r.got, true
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on && r.got == nil {
		r.got = &statement{d.SQL, d.Args}
	}
	return ctx
}

func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Index     string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
}

// explain returns the plan of st, explained in a transaction with
// enable_seqscan (and with sorted, enable_sort) off.
func explain(t *testing.T, conn *pgx.Conn, sorted bool, st statement) storetest.Plan {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	set := []string{"SET LOCAL enable_seqscan = off"}
	if sorted {
		set = append(set, "SET LOCAL enable_sort = off")
	}
	for _, q := range set {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var out []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+st.sql, st.args...).Scan(&out); err != nil {
		t.Fatalf("explain %s: %v", st.sql, err)
	}
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("explain %s: %v: %s", st.sql, err, out)
	}
	plan := storetest.Plan{Text: st.sql + "\n"}
	var walk func(n planNode, depth int)
	walk = func(n planNode, depth int) {
		plan.Text += strings.Repeat("  ", depth+1) + n.NodeType + " " + n.Relation + " " + n.Index + " " + n.IndexCond + "\n"
		switch n.NodeType {
		case "Seq Scan":
			plan.FullScans = append(plan.FullScans, n.Relation)
		case "Sort", "Incremental Sort":
			plan.Sorts = true
		}
		if n.Index != "" && !slices.Contains(plan.Indexes, n.Index) {
			plan.Indexes = append(plan.Indexes, n.Index)
		}
		for _, col := range []string{"created_at", "occurred_at", "starts_on"} {
			if strings.Contains(n.IndexCond, "("+col+",") || strings.Contains(n.IndexCond, "("+col+" <") {
				plan.KeysetRange = true
			}
		}
		for _, c := range n.Plans {
			walk(c, depth+1)
		}
	}
	walk(doc[0].Plan, 0)
	return plan
}

// fillPlans are the rows TestListPlans lists among: rows of each
// listed table in the tenant of storetest.RunListPlans, with values no
// call asks for, created a minute apart from 2026-01-01.
var fillPlans = []string{
	`INSERT INTO sites (org_id, mode, id, name, timezone, created_at, updated_at)
		SELECT 'org_plans', 'live', 'site_' || i, 'Site', 'UTC', now(), now() FROM generate_series(1, 20) i`,
	`INSERT INTO visits (org_id, mode, id, status, type, site_id, host_id, visitor_id, expected_at, doc, created_at, updated_at)
		SELECT 'org_plans', 'live', 'vst_' || i, 'checked_out', 'guest', 'site_' || (i % 20 + 1), 'per_' || (i % 500),
			'vis_' || i, '2025-01-01'::timestamptz + i * interval '1 minute', '{"receiver":{"kind":"person","person_id":"per_1"}}',
			'2026-01-01'::timestamptz + i * interval '1 minute', now() FROM generate_series(1, 5000) i`,
	`INSERT INTO visit_hosts (org_id, mode, visit_id, person_id) SELECT 'org_plans', 'live', 'vst_' || i, 'per_' || (i % 500) FROM generate_series(1, 5000) i`,
	`INSERT INTO bookings (org_id, mode, id, type_id, site_id, visitor_id, status, starts_at, doc, created_at, updated_at)
		SELECT 'org_plans', 'live', 'bkg_' || i, 'bt_' || (i % 20), 'site_' || (i % 20 + 1), 'vis_' || i, 'declined',
			'2025-01-01'::timestamptz + i * interval '1 minute', '{}', '2026-01-01'::timestamptz + i * interval '1 minute', now()
		FROM generate_series(1, 5000) i`,
	`INSERT INTO events (org_id, mode, id, type, object_type, object_id, data, created_at)
		SELECT 'org_plans', 'live', 'evt_' || i, 'visit.updated', 'visit', 'vst_' || i, '{}', '2026-01-01'::timestamptz + i * interval '1 minute'
		FROM generate_series(1, 5000) i`,
	`INSERT INTO audit_events (org_id, mode, id, action, actor_kind, object_type, object_id, detail, created_at)
		SELECT 'org_plans', 'live', 'aud_' || i, 'visit.update', 'api_key', 'visit', 'vst_' || i, '{}', '2026-01-01'::timestamptz + i * interval '1 minute'
		FROM generate_series(1, 5000) i`,
	`INSERT INTO attendance_events (id, org_id, mode, person_id, site_id, kind, source, occurred_at, received_at, day, created_at)
		SELECT 'att_' || i, 'org_plans', 'live', 'per_' || (i % 500), 'site_' || (i % 20 + 1), 'in', 'gate',
			'2026-01-01'::timestamptz + i * interval '1 minute', now(), '2026-01-01', now() FROM generate_series(1, 5000) i`,
	`INSERT INTO people (org_id, mode, id, name, name_search, email, email_fold, site_id, active, created_at, updated_at)
		SELECT 'org_plans', 'live', 'per_' || i, 'Person ' || i, 'person ' || i, 'p' || i || '@example.com', 'p' || i || '@example.com',
			'site_' || (i % 20 + 1), false, '2026-01-01'::timestamptz + i * interval '1 minute', now() FROM generate_series(1, 5000) i`,
	`INSERT INTO teams (org_id, mode, id, name, name_search, site_id, visitors_can_choose, archived, created_at, updated_at)
		SELECT 'org_plans', 'live', 'team_' || i, 'Team ' || i, 'team ' || i, 'site_' || (i % 20 + 1), false, false,
			'2026-01-01'::timestamptz + i * interval '1 minute', now() FROM generate_series(1, 5000) i`,
	`INSERT INTO timesheet_periods (id, org_id, mode, kind, starts_on, ends_on, payroll_on, label, closes_at, created_at)
		SELECT 'tsp_' || i, 'org_plans', 'live', 'weekly', to_char('2020-01-06'::date + i * 7, 'YYYY-MM-DD'),
			to_char('2020-01-12'::date + i * 7, 'YYYY-MM-DD'), to_char('2020-01-15'::date + i * 7, 'YYYY-MM-DD'), 'Week', now(), now()
		FROM generate_series(1, 300) i`,
	`INSERT INTO timesheets (id, org_id, mode, period_id, person_id, status, minutes, days, punches, unpaired, created_at, updated_at)
		SELECT 'ts_' || i, 'org_plans', 'live', 'tsp_' || (i / 20 + 1), 'per_' || (i % 20), 'open', 0, 0, 0, 0,
			'2026-01-01'::timestamptz + i * interval '1 minute', now() FROM generate_series(1, 5000) i`,
	`INSERT INTO webhook_endpoints (org_id, mode, id, url, description, event_types, secret, created_at, updated_at)
		VALUES ('org_fill', 'live', 'we_plans', 'https://example.com/hook', '', '{*}', 'secret', now(), now())`,
	`INSERT INTO webhook_deliveries (endpoint_id, event_id, org_id, mode, event_type, status, created_at, updated_at)
		SELECT 'we_plans', 'evt_' || i, 'org_plans', 'live', 'visit.updated', 'succeeded', '2026-01-01'::timestamptz + i * interval '1 minute', now()
		FROM generate_series(1, 5000) i`,
	`INSERT INTO webhook_attempts (id, endpoint_id, event_id, org_id, mode, created_at, duration_us, succeeded)
		SELECT 'wa_' || i, 'we_plans', 'evt_' || i, 'org_plans', 'live', '2026-01-01'::timestamptz + i * interval '1 minute', 1000, true
		FROM generate_series(1, 5000) i`,
	`ANALYZE sites, visits, visit_hosts, bookings, events, audit_events, attendance_events, people, teams, timesheet_periods,
		timesheets, webhook_endpoints, webhook_deliveries, webhook_attempts`,
}

// TestHostListKeepsItsPlan checks that the host filter of the visits
// list reuses its prepared statement's generic plan rather than planning
// each request again, for hosts with many visits (1,000 each here, as
// for cloud/bench/lists at 200,000 visits). With the page's LIMIT a
// parameter, PostgreSQL costs the generic plan as if it returned a tenth
// of a host's visits, dearer than the custom plan for 26 rows once a host
// has a few hundred, and plans every run: 0.4–0.5 ms of a 1 ms request
// (docs/performance.md, "The PostgreSQL host filter").
func TestHostListKeepsItsPlan(t *testing.T) {
	ctx := context.Background()
	s, conn := planStore(t, func(cfg *pgxpool.Config) {
		cfg.MaxConns = 1 // pg_prepared_statements is the connection's
	})
	for _, q := range []string{
		`INSERT INTO sites (org_id, mode, id, name, timezone, created_at, updated_at) VALUES ('org_hosts', 'live', 'site_1', 'Site', 'UTC', now(), now())`,
		`INSERT INTO visits (org_id, mode, id, status, type, site_id, host_id, expected_at, doc, created_at, updated_at)
			SELECT 'org_hosts', 'live', 'vst_' || i, 'checked_out', 'guest', 'site_1', 'per_' || (i % 3),
				'2026-01-01'::timestamptz + i * interval '1 minute', '{}', '2026-01-01'::timestamptz + i * interval '1 minute', now()
			FROM generate_series(1, 3000) i`,
		`INSERT INTO visit_hosts (org_id, mode, visit_id, person_id) SELECT 'org_hosts', 'live', 'vst_' || i, 'per_' || (i % 3) FROM generate_series(1, 3000) i`,
		`ANALYZE sites, visits, visit_hosts`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tenant := cloud.Tenant{OrgID: "org_hosts", Mode: cloud.ModeLive}
	// PostgreSQL plans a prepared statement's first five runs custom, then
	// compares.
	for range 10 {
		got, more, err := s.ListVisits(ctx, tenant, cloud.VisitFilter{HostID: "per_1"}, cloud.Page{Limit: 25})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 25 || !more || got[0].ID != "vst_2998" {
			t.Fatalf("got %d visits (more %v), the first %+v; want the newest 25 of per_1's 1,000, from vst_2998", len(got), more, got[0])
		}
	}
	generic, custom, err := s.PreparedPlans(ctx, "FROM visit_hosts h")
	if err != nil {
		t.Fatal(err)
	}
	if generic == 0 {
		t.Fatalf("the host list was planned custom %d times and generic %d: it plans each request again", custom, generic)
	}
}

// planStore opens a store on a new schema, its pool configured by tune,
// and a connection of its own to the schema for the test's statements.
func planStore(t *testing.T, tune func(*pgxpool.Config)) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	tune(cfg)
	s, err := postgres.OpenConfig(ctx, cfg, kektest.Ring())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, schemaConn(t, url, schema)
}

// schemaConn opens a connection of the test's own to schema, closed when
// the test ends.
func schemaConn(t *testing.T, url, schema string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
