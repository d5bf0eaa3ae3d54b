// Package stores runs a test on each cloud store: SQLite in the test's
// temporary directory, and PostgreSQL on a fresh schema
// (postgrestest.New: skipped without SVC_TEST_POSTGRES_URL, a failure
// without it when SVC_TEST_REQUIRE_SERVICES is 1).
//
// It may import cloud, cloud/sqlite, cloud/postgres/postgrestest,
// cloud/kek/kektest and the standard library.
package stores

import (
	"path/filepath"
	"testing"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
)

// Each runs fn as the subtests "sqlite" and "postgres", each with a new
// store that is closed when the subtest ends.
func Each(t *testing.T, fn func(t *testing.T, store cloud.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
		if err != nil {
			t.Fatalf("open the SQLite store: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
	t.Run("postgres", func(t *testing.T) { fn(t, postgrestest.New(t)) })
}
