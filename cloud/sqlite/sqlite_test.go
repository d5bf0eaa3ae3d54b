package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/storetest"
	"github.com/svc-vms/svc/shared/ids"
)

func newStore(t *testing.T) cloud.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) { storetest.Run(t, newStore) }

// TestReopen checks the schema migrations run once: a second open of the
// same file keeps its rows.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, kektest.Ring())
	if err != nil {
		t.Fatal(err)
	}
	o := cloud.Organisation{ID: "org_01h2xcejqtf2nbrexx3vqjhp41", Name: "Acme", Plan: cloud.PlanPro}
	if err := s.CreateOrganisation(ctx, o); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(ctx, path, kektest.Ring())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Organisation(ctx, o.ID)
	if err != nil || got.Name != "Acme" {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}

// TestAuditEvents_StoredAsWritten checks what the contract cannot see: an
// event's detail is kept byte for byte, {} when there is none, and an
// event without an actor or a request has NULL in their columns.
func TestAuditEvents_StoredAsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, kektest.Ring())
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

	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM audit_events WHERE actor_id IS NULL AND request_id IS NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d events have NULL actor_id and request_id, want 2", n)
	}
}

// TestSealing runs the sealing checks on a file, read raw.
func TestSealing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	storetest.RunSealing(t, storetest.SealingDB{
		Open: func(t testing.TB, keys *kek.Ring) (storetest.Resealer, error) {
			return sqlite.Open(context.Background(), path, keys)
		},
		Value: func(t testing.TB, query string, args ...any) []byte {
			var v []byte
			if err := raw.QueryRow(query, args...).Scan(&v); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return v
		},
		Exec: func(t testing.TB, query string, args ...any) {
			if _, err := raw.Exec(query, args...); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		},
	})
}

// TestOpen_FileIsPrivate: a new database file, and the -wal and -shm
// files SQLite makes beside it, are readable by their owner only.
func TestOpen_FileIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "cloud.db")
	s, err := sqlite.Open(context.Background(), path, kektest.Ring())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateOrganisation(context.Background(), cloud.Organisation{ID: ids.New(ids.Organisation), Name: "Acme", Plan: cloud.PlanPro}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", name, got, want)
		}
	}
}

// BenchmarkApplyFacts: go test -run '^$' -bench ApplyFacts -benchtime 5000x ./cloud/sqlite/
func BenchmarkApplyFacts(b *testing.B) {
	for _, n := range []int{2, 32, 128} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "cloud.db"), kektest.Ring())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			storetest.BenchApplyFacts(b, s, n)
		})
	}
}
