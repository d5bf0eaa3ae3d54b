package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
)

// engines are the store flags of each engine a command-line test runs
// on: SQLite under the data directory always, and PostgreSQL on a fresh
// schema when SVC_TEST_POSTGRES_URL is set.
var engines = []struct {
	name  string
	flags func(t *testing.T) []string
}{
	{"sqlite", func(*testing.T) []string { return nil }},
	{"postgres", func(t *testing.T) []string {
		url := postgrestest.URL(t)
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		return []string{"--database-url", url + sep + "search_path=" + postgrestest.NewSchema(t, url)}
	}},
}

// TestMigrate_ThenServeNoMigrate: serve --no-migrate refuses a database
// that lacks migrations, naming the fix; svc-cloud migrate applies them
// and exits; then serve --no-migrate starts.
func TestMigrate_ThenServeNoMigrate(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			dir := t.TempDir()
			store := e.flags(t)
			var out bytes.Buffer
			err := run(context.Background(), append([]string{"serve", "--data", dir, "--no-migrate", "--mqtt-url", "off", "--addr", "127.0.0.1:0",
				"--metrics-listen", ""}, store...), &out, os.Stderr)
			require.ErrorIs(t, err, cloud.ErrSchemaBehind)
			require.ErrorContains(t, err, "run svc-cloud migrate first")

			require.Contains(t, runCLI(t, append([]string{"migrate", "--data", dir}, store...)...), "every migration applied")
			require.Contains(t, runCLI(t, append([]string{"migrate", "--data", dir}, store...)...), "every migration applied", "again: nothing to do")

			startServe(t, dir, append(store, "--no-migrate")...)
		})
	}
}
