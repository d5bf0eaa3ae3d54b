package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/storetest"
)

func newStore(t *testing.T) cloud.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cloud.db"))
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
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	o := cloud.Organisation{ID: "org_01h2xcejqtf2nbrexx3vqjhp41", Name: "Acme", Plan: cloud.PlanPro}
	if err := s.CreateOrganisation(ctx, o); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Organisation(ctx, o.ID)
	if err != nil || got.Name != "Acme" {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}
