// Package postgrestest opens PostgreSQL stores for tests, each on a fresh
// schema of its own that is dropped when the test ends.
//
// It may import cloud/postgres, cloud/kek, pgx and the standard library.
package postgrestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
)

// EnvURL names the variable holding the test database's URL; EnvRequire,
// set to 1 (as .ci/run does), turns a missing URL from a skip into a
// failure, so CI cannot pass without the PostgreSQL suite.
const (
	EnvURL     = "SVC_TEST_POSTGRES_URL"
	EnvRequire = "SVC_TEST_REQUIRE_SERVICES"
)

// URL returns the test database's URL, or skips t when it is not set.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(EnvURL + " is not set but " + EnvRequire + "=1")
		}
		t.Skip(EnvURL + " is not set")
	}
	return url
}

// Exec runs one statement on a connection of its own.
func Exec(t testing.TB, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// NewSchema creates an empty schema with a random name, dropped with
// everything in it when the test ends.
func NewSchema(t testing.TB, url string) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "svc_test_" + hex.EncodeToString(b[:])
	Exec(t, url, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { Exec(t, url, "DROP SCHEMA "+schema+" CASCADE") })
	return schema
}

// OpenIn opens a Store whose connections use schema, with the test KEK
// (kektest).
func OpenIn(t testing.TB, url, schema string) (*postgres.Store, error) {
	t.Helper()
	return OpenInWith(t, url, schema, kektest.Ring())
}

// OpenInWith is OpenIn with a KEK ring of the test's.
func OpenInWith(t testing.TB, url, schema string, keys *kek.Ring) (*postgres.Store, error) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	return postgres.OpenConfig(context.Background(), cfg, keys)
}

// New opens a Store on a fresh schema, closed before the schema is dropped.
// It skips t when the test database is not configured.
func New(t testing.TB) *postgres.Store {
	t.Helper()
	url := URL(t)
	schema := NewSchema(t, url)
	s, err := OpenIn(t, url, schema)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
