package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/storetest"
	"github.com/svc-vms/svc/shared/ids"
)

func newStore(t *testing.T) cloud.Store { return postgrestest.New(t) }

func TestContract(t *testing.T) {
	postgrestest.URL(t)
	storetest.Run(t, newStore)
}

// TestOpen_Concurrent opens several stores on one empty schema at once: the
// advisory lock must let exactly one of them apply each migration.
func TestOpen_Concurrent(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			s, err := postgrestest.OpenIn(t, url, schema)
			if err == nil {
				_ = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, distinct int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT version) FROM "+schema+".schema_migrations").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || rows != distinct {
		t.Errorf("schema_migrations holds %d rows, %d versions; want each version once", rows, distinct)
	}
}

// TestOpen_Reopen closes a store and opens its schema again: the data stays
// and the migrations already applied are not run twice (they would fail:
// their CREATE TABLEs have no IF NOT EXISTS).
func TestOpen_Reopen(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	ctx := context.Background()
	s, err := postgrestest.OpenIn(t, url, schema)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	org := cloud.Organisation{ID: "org_01h2xcejqtf2nbrexx3vqjhp41", Name: "Acme", Plan: cloud.PlanPro, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateOrganisation(ctx, org); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	s, err = postgrestest.OpenIn(t, url, schema)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	got, err := s.Organisation(ctx, org.ID)
	if err != nil {
		t.Fatalf("organisation after reopen: %v", err)
	}
	if got != org {
		t.Errorf("organisation after reopen = %+v, want %+v", got, org)
	}
}

// TestAuditEvents_StoredAsWritten checks what the contract cannot see: an
// event's detail is kept byte for byte (json, not jsonb), {} when there is
// none, and an event without an actor or a request has NULL in their
// columns.
func TestAuditEvents_StoredAsWritten(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	ctx := context.Background()
	s, err := postgrestest.OpenIn(t, url, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tn := cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeLive}
	now := time.Now().UTC().Truncate(time.Microsecond)
	v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitExpected, Type: "meeting", SiteID: ids.New(ids.Site),
		CreatedAt: now, UpdatedAt: now}
	const detail = "{\"b\": 1,  \"a\": [1, 2.50, \"caf\\u00e9\"],\n \"b\": {}}"
	event := func(d json.RawMessage) cloud.AuditEvent {
		return cloud.AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: tn, Action: cloud.AuditPassRulesOverridden,
			ActorKind: cloud.ActorSystem, ObjectType: "visit", ObjectID: v.ID, Detail: d, CreatedAt: now}
	}
	with, without := event(json.RawMessage(detail)), event(nil)
	if err := s.CreateVisit(ctx, v, cloud.VisitWrites{Audit: []cloud.AuditEvent{with, without}}); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.ListAuditEvents(ctx, tn, cloud.AuditFilter{ObjectID: v.ID}, cloud.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("listed %d events, want 2", len(got))
	}
	for _, g := range got {
		if want := map[string]string{with.ID: detail, without.ID: `{}`}[g.ID]; string(g.Detail) != want {
			t.Errorf("detail of %s = %q, want %q", g.ID, g.Detail, want)
		}
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".audit_events WHERE actor_id IS NULL AND request_id IS NULL").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d events have NULL actor_id and request_id, want 2", n)
	}
}

// TestSealing runs the sealing checks on a schema, read raw.
func TestSealing(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	ctx := context.Background()
	conn := schemaConn(t, url, schema)
	// dollars numbers the ? placeholders of the shared checks.
	dollars := func(q string) string {
		var b strings.Builder
		n := 0
		for _, r := range q {
			if r == '?' {
				n++
				fmt.Fprintf(&b, "$%d", n)
				continue
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	storetest.RunSealing(t, storetest.SealingDB{
		Open: func(t testing.TB, keys *kek.Ring) (storetest.Resealer, error) {
			return postgrestest.OpenInWith(t, url, schema, keys)
		},
		Value: func(t testing.TB, query string, args ...any) []byte {
			var v any
			if err := conn.QueryRow(ctx, dollars(query), args...).Scan(&v); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			switch v := v.(type) {
			case string:
				return []byte(v)
			case []byte:
				return v
			}
			t.Fatalf("%s: %T", query, v)
			return nil
		},
		Exec: func(t testing.TB, query string, args ...any) {
			if _, err := conn.Exec(ctx, dollars(query), args...); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		},
	})
}

// BenchmarkApplyFacts: go test -run '^$' -bench ApplyFacts -benchtime 5000x ./cloud/postgres/
func BenchmarkApplyFacts(b *testing.B) {
	for _, n := range []int{2, 32, 128} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			storetest.BenchApplyFacts(b, postgrestest.New(b), n)
		})
	}
}
