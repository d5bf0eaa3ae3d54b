package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/poll"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
)

// Database outages (docs/decisions.md, "Database outages (issue 15)"):
// while PostgreSQL is down, restarting or stalled, every request answers
// 503 unavailable with Retry-After within its deadline, never 500 and
// never later; when it is back, requests succeed again.

// outageDeadline is the servers' request deadline in these tests; slack
// is what a request may take beyond it (the test's own HTTP round trip,
// a loaded machine).
const (
	outageDeadline = 2 * time.Second
	outageSlack    = 2 * time.Second
)

// requireUnavailable asserts a 503 unavailable with Retry-After.
func requireUnavailable(t testing.TB, r response) {
	t.Helper()
	requireProblem(t, r, http.StatusServiceUnavailable, "unavailable")
	require.Equal(t, "2", r.Header.Get("Retry-After"), "%s", r.Raw)
}

// timed sends r and asserts it answered within the deadline.
func (h *harness) timed(r req) response {
	h.t.Helper()
	out := h.do(r)
	require.Less(h.t, out.Took, outageDeadline+outageSlack, "%s %s answered %d after %v", r.method, r.path, out.Status, out.Took)
	return out
}

func (h *harness) sites() req {
	return req{method: http.MethodGet, path: "/v1/sites", key: h.seed.Keys.SecretTest}
}

func (h *harness) newTeam() req {
	return req{method: http.MethodPost, path: "/v1/teams", key: h.seed.Keys.SecretTest, body: map[string]any{"name": "Outage team " + uuid()}}
}

// poll sends r until it answers want, or fails after 30 s; every answer
// before is a 503 unavailable within the deadline.
func (h *harness) poll(r req, want int) response {
	h.t.Helper()
	var out response
	require.True(h.t, poll.Until(30*time.Second, 100*time.Millisecond, func() bool {
		if out = h.timed(r); out.Status == want {
			return true
		}
		requireUnavailable(h.t, out)
		return false
	}), "%s %s still answers %d after 30 s", r.method, r.path, out.Status)
	return out
}

// outcome is one answer the background load got.
type outcome struct {
	what       string
	status     int
	code       string
	retryAfter string
	took       time.Duration
	err        error
}

// load sends GET /v1/sites and POST /v1/teams one after another until
// stop is closed, and returns what each got.
func (h *harness) load(stop <-chan struct{}) func() []outcome {
	var mu sync.Mutex
	var out []outcome
	done := make(chan struct{})
	client := &http.Client{Timeout: outageDeadline + outageSlack}
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := h.sites()
			if i%2 == 1 {
				r = h.newTeam()
			}
			var body []byte
			if r.body != nil {
				body, _ = json.Marshal(r.body)
			}
			req, _ := http.NewRequest(r.method, h.url+r.path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+r.key)
			if r.method == http.MethodPost {
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", uuid())
			}
			start := time.Now()
			resp, err := client.Do(req)
			o := outcome{what: r.method + " " + r.path, err: err}
			if err == nil {
				var p struct{ Code string }
				_ = json.NewDecoder(resp.Body).Decode(&p)
				resp.Body.Close()
				o.status, o.code, o.retryAfter = resp.StatusCode, p.Code, resp.Header.Get("Retry-After")
			}
			o.took = time.Since(start)
			mu.Lock()
			out = append(out, o)
			mu.Unlock()
		}
	}()
	return func() []outcome {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

// requireOutcomes asserts the background load never got a 500 or waited
// past the deadline, and got 503s during the outage.
func requireOutcomes(t *testing.T, outs []outcome) {
	t.Helper()
	unavailable := 0
	for _, o := range outs {
		require.NoError(t, o.err, o.what)
		require.Less(t, o.took, outageDeadline+outageSlack, "%s answered %d after %v", o.what, o.status, o.took)
		if o.status < 300 {
			continue
		}
		require.Equal(t, http.StatusServiceUnavailable, o.status, "%s: %d %s", o.what, o.status, o.code)
		require.Equal(t, "unavailable", o.code, o.what)
		require.Equal(t, "2", o.retryAfter, o.what)
		unavailable++
	}
	require.NotZero(t, unavailable, "the load met the outage (%d requests)", len(outs))
}

// TestOutage_PostgresRestart stops a private PostgreSQL server (fast
// shutdown: open sessions are ended, idle connections in the pool die)
// and starts it again while requests are made.
func TestOutage_PostgresRestart(t *testing.T) {
	srv := postgrestest.NewServer(t)
	h := outageHarness(t, func(t *testing.T) (cloud.Store, error) {
		return postgres.Open(context.Background(), srv.URL, kektest.Ring())
	})
	require.Equal(t, http.StatusCreated, h.do(h.newTeam()).Status)
	h.throughOutage(t, 3, srv.Stop, srv.Start)
}

// outageHarness is a harness on the store open makes, whose requests have
// the outage tests' deadline and a client that waits a little longer, and
// which answers a first read.
func outageHarness(t *testing.T, open func(t *testing.T) (cloud.Store, error)) *harness {
	t.Helper()
	h := newHarness(t, func(t *testing.T) cloud.Store {
		s, err := open(t)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, withTimeout(outageDeadline))
	h.client = &http.Client{Timeout: outageDeadline + outageSlack}
	require.Equal(t, http.StatusOK, h.do(h.sites()).Status)
	return h
}

// throughOutage runs requests in the background while cut takes the
// database away: probes (rounds of a read and a write) answer 503
// unavailable within the deadline; once heal brings it back, requests
// succeed again, and no request of the background load saw a 500 or a
// hang.
func (h *harness) throughOutage(t *testing.T, rounds int, cut, heal func()) {
	t.Helper()
	stop := make(chan struct{})
	outcomes := h.load(stop)
	cut()
	for range rounds {
		requireUnavailable(t, h.timed(h.sites()))
		requireUnavailable(t, h.timed(h.newTeam()))
	}
	heal()
	h.poll(h.sites(), http.StatusOK)
	h.poll(h.newTeam(), http.StatusCreated)
	close(stop)
	requireOutcomes(t, outcomes())
}

// TestOutage_StalledConnection puts a proxy between the store and
// PostgreSQL and pauses it: connections stay open and nothing answers.
func TestOutage_StalledConnection(t *testing.T) {
	base := postgrestest.URL(t)
	u, err := url.Parse(base)
	require.NoError(t, err)
	proxy := postgrestest.NewProxy(t, u.Host)
	u.Host = proxy.Addr
	schema := postgrestest.NewSchema(t, base)
	h := outageHarness(t, func(t *testing.T) (cloud.Store, error) { return postgrestest.OpenIn(t, u.String(), schema) })
	h.throughOutage(t, 2, proxy.Pause, proxy.Resume)
}

// TestOutage_SQLiteLocked holds the SQLite file's write lock from another
// connection (another process writing to it): writes wait for it until
// their deadline and answer 503 unavailable; reads go on; when the lock
// is released, writes succeed.
func TestOutage_SQLiteLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.db")
	h := newHarness(t, func(t *testing.T) cloud.Store {
		s, err := sqlite.Open(context.Background(), path, kektest.Ring())
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}, withTimeout(outageDeadline))
	h.client = &http.Client{Timeout: outageDeadline + outageSlack}
	require.Equal(t, http.StatusCreated, h.do(h.newTeam()).Status)

	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer other.Close()
	conn, err := other.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	require.NoError(t, err)

	requireUnavailable(t, h.timed(h.newTeam()))
	require.Equal(t, http.StatusOK, h.timed(h.sites()).Status, "reads go on")

	_, err = conn.ExecContext(context.Background(), "ROLLBACK")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, h.timed(h.newTeam()).Status)
}
