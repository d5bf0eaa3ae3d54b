package sitetest

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/poll"

	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// The environment: where the external services are, whether they must be.
const (
	// EnvMQTT is Mosquitto's URL (tcp://host:1883): anonymous, no ACL.
	EnvMQTT = "SVC_TEST_MQTT_URL"
	// EnvPostgres is the test database's URL; each World gets a fresh
	// schema of it.
	EnvPostgres = postgrestest.EnvURL
	// EnvRequire set to 1 makes a service that is not configured a
	// failure instead of a skip, so CI cannot pass without it.
	EnvRequire = postgrestest.EnvRequire
	// EnvLog set to anything writes the halves', brokers' and edges'
	// logs to stderr.
	EnvLog = "SVC_TEST_LOG"
)

// Brokers and stores.
const (
	Embedded  = "embedded"  // sync/broker in the test process
	Mosquitto = "mosquitto" // at EnvMQTT
	SQLite    = "sqlite"    // cloud/sqlite in a temporary directory
	Postgres  = "postgres"  // cloud/postgres on a fresh schema at EnvPostgres
)

// Options choose a World's broker and store, and adjust its halves.
type Options struct {
	Broker string // Embedded or Mosquitto
	Store  string // SQLite or Postgres
	// Cloud adjusts each cloud half's configuration after the harness's
	// test defaults (cloudConfig); nil leaves them.
	Cloud func(*mqttsync.CloudConfig)
}

// Each runs fn as one subtest per broker and store, named
// "broker/store", each in parallel with the others. stores limits the
// stores (nil: SQLite and Postgres). A combination whose service is not
// configured is skipped, or fails with EnvRequire=1.
func Each(t *testing.T, stores []string, fn func(t *testing.T, opts Options)) {
	t.Helper()
	if stores == nil {
		stores = []string{SQLite, Postgres}
	}
	for _, b := range []string{Embedded, Mosquitto} {
		for _, s := range stores {
			t.Run(b+"/"+s, func(t *testing.T) {
				t.Parallel()
				if b == Mosquitto {
					mosquittoURL(t)
				}
				if s == Postgres {
					postgrestest.URL(t)
				}
				fn(t, Options{Broker: b, Store: s})
			})
		}
	}
}

// mosquittoURL returns EnvMQTT, skipping t when it is unset (failing it
// with EnvRequire=1).
func mosquittoURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(EnvMQTT)
	if url == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s is not set but %s=1", EnvMQTT, EnvRequire)
		}
		t.Skipf("%s is not set", EnvMQTT)
	}
	return url
}

// Logger is where a World's parts log: stderr with EnvLog set, nowhere
// otherwise.
func Logger(t testing.TB, part string) *slog.Logger {
	if os.Getenv(EnvLog) == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name(), "part", part)
}

// Eventually polls cond until it holds, and fails t with msg (formatted
// with args) when timeout passes first. It polls (shared/poll) every millisecond at first and
// backs off to every 100 ms, so that a poll of the API for a minute stays
// well inside an organisation's rate limit (3,000 requests a minute in
// test mode).
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	if !poll.Until(timeout, 100*time.Millisecond, cond) {
		t.Fatalf("after %v: "+msg, append([]any{timeout}, args...)...)
	}
}
