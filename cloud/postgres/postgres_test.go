package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/storetest"
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
