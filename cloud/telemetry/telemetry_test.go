package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/telemetry"
	"github.com/svc-vms/svc/shared/promtest"
	"github.com/svc-vms/svc/sync/mqttsync"
)

func openSQLite(t testing.TB) cloud.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// env is the API with its telemetry, as svc-cloud serve wires them, on a
// seeded store.
type env struct {
	t     testing.TB
	store cloud.Store
	svc   *cloud.Service
	tel   *telemetry.Telemetry
	api   http.Handler // the API listener's handler: the probes, then the API
	seed  cloud.SeedResult
}

func newEnv(t testing.TB, store cloud.Store, cfg telemetry.Config) *env {
	t.Helper()
	ctx := context.Background()
	svc := cloud.NewService(store, time.Now)
	seed, err := svc.Seed(ctx, "Telemetry", cloud.PlanPro)
	require.NoError(t, err)
	cfg.Store = store
	tel := telemetry.New(cfg)
	api, err := httpapi.New(ctx, httpapi.Config{Service: svc, Observer: tel, RateLimits: map[cloud.Plan]int{cloud.PlanPro: 10}})
	require.NoError(t, err)
	return &env{t: t, store: store, svc: svc, tel: tel, api: tel.Probes(api), seed: seed}
}

// do sends a request to the API listener's handler.
func (e *env) do(method, path, body string, header ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, path, nil)
	} else {
		r = httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	}
	r.Header.Set("Authorization", "Bearer "+e.seed.Keys.SecretTest)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	e.api.ServeHTTP(w, r)
	return w
}

// scrape reads /metrics from the admin listener's handler.
func (e *env) scrape() []byte {
	e.t.Helper()
	w := httptest.NewRecorder()
	e.tel.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(e.t, http.StatusOK, w.Code)
	return w.Body.Bytes()
}

// families parses a scrape.
func families(t testing.TB, scrape []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(scrape))
	require.NoError(t, err)
	return mfs
}

// value is the value of the family's series with exactly these labels;
// ok is false when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func requireValue(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := value(mfs, name, labels)
	require.True(t, ok, "no series %s%v", name, labels)
	require.Equal(t, want, got, "%s%v", name, labels)
}

// TestMetrics_AfterRequests scrapes /metrics after some requests: the
// API's series are labelled with route templates (never a request's own
// path), method and status class; idempotency replays, conflicts (a key
// reused with another body) and rate-limit refusals are counted; the store's pools, the Go runtime, the process and
// the build are there; and promtool accepts the whole.
func TestMetrics_AfterRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t testing.TB) cloud.Store
	}{{"sqlite", openSQLite}, {"postgres", func(t testing.TB) cloud.Store { return postgrestest.New(t) }}} {
		t.Run(tc.name, func(t *testing.T) {
			sync := func() mqttsync.CloudState {
				return mqttsync.CloudState{Connected: true, FactsApplied: 7, FactsRejected: 2, Dropped: 3, ChangesSent: 11}
			}
			e := newEnv(t, tc.open(t), telemetry.Config{Version: "1.2.3", Sync: sync})
			teams := e.do(http.MethodGet, "/v1/teams?limit=1", "")
			require.Equal(t, http.StatusOK, teams.Code, teams.Body.String())
			var page struct{ Data []struct{ ID string } }
			require.NoError(t, json.Unmarshal(teams.Body.Bytes(), &page))
			require.NotEmpty(t, page.Data)
			teamID := page.Data[0].ID
			require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/v1/teams/"+teamID, "").Code)
			require.Equal(t, http.StatusNotFound, e.do(http.MethodGet, "/v1/teams/team_01h2xcejqtf2nbrexx3vqjhp41", "").Code)
			require.Equal(t, http.StatusNotFound, e.do(http.MethodGet, "/v1/no/such/path", "").Code)
			key := "8e0c6b8e-3c1a-4f4e-9d55-2b8f7c1e0a42"
			require.Equal(t, http.StatusCreated, e.do(http.MethodPost, "/v1/teams", `{"name":"Scraped"}`, "Idempotency-Key", key).Code)
			replay := e.do(http.MethodPost, "/v1/teams", `{"name":"Scraped"}`, "Idempotency-Key", key)
			require.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
			// The same key with another body is a conflict (docs/decisions.md).
			reused := e.do(http.MethodPost, "/v1/teams", `{"name":"Scraped again"}`, "Idempotency-Key", key)
			require.Equal(t, http.StatusUnprocessableEntity, reused.Code, reused.Body.String())
			require.Contains(t, reused.Body.String(), `"code":"idempotency_key_reused"`)
			// 8 keyed requests so far; the organisation may make 10 a minute.
			for range 2 {
				require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/v1/organisation", "").Code)
			}
			// A minute boundary between the requests would restart the
			// count: then a few more requests are refused all the same.
			limited := 0
			for range 12 {
				if e.do(http.MethodGet, "/v1/organisation", "").Code == http.StatusTooManyRequests {
					limited++
				}
			}
			require.Positive(t, limited)
			require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/healthz", "").Code)

			scrape := e.scrape()
			mfs := families(t, scrape)
			requireValue(t, mfs, "svc_cloud_http_requests_total", map[string]string{"route": "/v1/teams/{team_id}", "method": "GET", "status": "2xx"}, 1)
			requireValue(t, mfs, "svc_cloud_http_requests_total", map[string]string{"route": "/v1/teams/{team_id}", "method": "GET", "status": "4xx"}, 1)
			requireValue(t, mfs, "svc_cloud_http_requests_total", map[string]string{"route": httpapi.RouteUnmatched, "method": "GET", "status": "4xx"}, 1)
			requireValue(t, mfs, "svc_cloud_http_requests_total", map[string]string{"route": "/v1/teams", "method": "POST", "status": "2xx"}, 2)
			requireValue(t, mfs, "svc_cloud_http_request_duration_seconds", map[string]string{"route": "/v1/teams/{team_id}", "method": "GET"}, 2)
			requireValue(t, mfs, "svc_cloud_idempotency_replays_total", map[string]string{}, 1)
			requireValue(t, mfs, "svc_cloud_http_requests_total", map[string]string{"route": "/v1/teams", "method": "POST", "status": "4xx"}, 1)
			requireValue(t, mfs, "svc_cloud_idempotency_conflicts_total", map[string]string{"reason": "key_reused"}, 1)
			requireValue(t, mfs, "svc_cloud_idempotency_conflicts_total", map[string]string{"reason": "in_flight"}, 0)
			requireValue(t, mfs, "svc_cloud_rate_limited_total", map[string]string{"limit": "organisation"}, float64(limited))
			requireValue(t, mfs, "svc_cloud_rate_limited_total", map[string]string{"limit": "pass_link"}, 0)
			requireValue(t, mfs, "svc_cloud_build_info", map[string]string{"version": "1.2.3", "goversion": runtime.Version()}, 1)
			requireValue(t, mfs, "svc_cloud_mqtt_connected", map[string]string{}, 1)
			requireValue(t, mfs, "svc_cloud_mqtt_facts_total", map[string]string{"result": "applied"}, 7)
			requireValue(t, mfs, "svc_cloud_mqtt_facts_total", map[string]string{"result": "rejected"}, 2)
			requireValue(t, mfs, "svc_cloud_mqtt_facts_total", map[string]string{"result": "failed"}, 0)
			requireValue(t, mfs, "svc_cloud_mqtt_messages_dropped_total", map[string]string{}, 3)
			requireValue(t, mfs, "svc_cloud_mqtt_feed_changes_sent_total", map[string]string{}, 11)

			// No label holds an ID or a path, and the probe is not an API
			// request: 21 were made.
			var total float64
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						require.NotContains(t, l.GetValue(), teamID, "%s{%s}", mf.GetName(), l.GetName())
						require.NotContains(t, l.GetValue(), "team_01h2x", "%s{%s}", mf.GetName(), l.GetName())
						require.NotContains(t, l.GetValue(), "/no/such", "%s{%s}", mf.GetName(), l.GetName())
					}
					if mf.GetName() == "svc_cloud_http_requests_total" {
						total += m.GetCounter().GetValue()
					}
				}
			}
			require.Equal(t, float64(21), total)

			pools := e.store.Stats().Pools
			require.NotEmpty(t, pools)
			for _, p := range pools {
				requireValue(t, mfs, "svc_cloud_db_connections_max", map[string]string{"pool": p.Name}, float64(p.MaxOpen))
				_, ok := value(mfs, "svc_cloud_db_connections", map[string]string{"pool": p.Name, "state": "idle"})
				require.True(t, ok, "pool %s", p.Name)
				_, ok = value(mfs, "svc_cloud_db_connection_waits_total", map[string]string{"pool": p.Name})
				require.True(t, ok, "pool %s", p.Name)
			}
			_, counted := value(mfs, "svc_cloud_db_statement_errors_total", map[string]string{"kind": "other"})
			require.Equal(t, e.store.Stats().Errors != nil, counted, "statement errors are shown where the store counts them")
			if wal := e.store.Stats().WAL; wal != nil {
				// The requests above committed, so the checkpointer has
				// been asked; its counter may not have moved yet.
				_, done := value(mfs, "svc_cloud_db_wal_checkpoints_total", map[string]string{"result": "done"})
				require.True(t, done, "SQLite shows its checkpoints")
				_, logged := value(mfs, "svc_cloud_db_wal_frames", map[string]string{"state": "logged"})
				require.True(t, logged)
			} else {
				_, shown := value(mfs, "svc_cloud_db_wal_checkpoints_total", map[string]string{"result": "done"})
				require.False(t, shown, "PostgreSQL has no SQLite checkpoints")
			}
			for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
				require.Contains(t, mfs, name)
			}

			t.Run("promtool", func(t *testing.T) { promtest.CheckMetrics(t, scrape) })
		})
	}
}

// TestMetrics_StatementErrors: on PostgreSQL, a unique key refusing a
// write shows as a constraint error.
func TestMetrics_StatementErrors(t *testing.T) {
	e := newEnv(t, postgrestest.New(t), telemetry.Config{})
	before, _ := value(families(t, e.scrape()), "svc_cloud_db_statement_errors_total", map[string]string{"kind": "constraint"})
	body := `{"name":"Twice","email":"twice@example.com"}`
	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, "/v1/people", body, "Idempotency-Key", "5f0c6b8e-3c1a-4f4e-9d55-2b8f7c1e0a01").Code)
	dup := e.do(http.MethodPost, "/v1/people", body, "Idempotency-Key", "5f0c6b8e-3c1a-4f4e-9d55-2b8f7c1e0a02")
	require.Equal(t, http.StatusConflict, dup.Code, dup.Body.String())
	after, ok := value(families(t, e.scrape()), "svc_cloud_db_statement_errors_total", map[string]string{"kind": "constraint"})
	require.True(t, ok)
	require.Greater(t, after, before)
}

// behind is a store whose database lacks a migration.
type behind struct{ cloud.Store }

func (behind) Ready(context.Context) error { return cloud.ErrSchemaBehind }

// TestReadyz: 200 with every check ok; 503 naming the failing check when
// the broker is disconnected, the schema is behind or the database is
// closed; /healthz stays 200 throughout. A change is logged once.
func TestReadyz(t *testing.T) {
	var connected atomic.Bool
	connected.Store(true)
	var logs bytes.Buffer
	store := openSQLite(t)
	sync := func() mqttsync.CloudState { return mqttsync.CloudState{Connected: connected.Load()} }
	e := newEnv(t, store, telemetry.Config{Sync: sync, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	probe := func(path string) (int, string) {
		w := httptest.NewRecorder()
		e.api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		require.Equal(t, "no-store", w.Header().Get("Cache-Control"))
		return w.Code, strings.TrimSpace(w.Body.String())
	}

	code, body := probe("/readyz")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"status":"ok","checks":{"database":"ok","migrations":"ok","broker":"ok"}}`, body)

	connected.Store(false)
	for range 3 {
		code, body = probe("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.JSONEq(t, `{"status":"fail","checks":{"database":"ok","migrations":"ok","broker":"fail"}}`, body)
	}
	require.Equal(t, 1, strings.Count(logs.String(), `"msg":"not ready"`), "logged once, not at every probe: %s", logs.String())
	require.Contains(t, logs.String(), `"failing":"broker"`)
	connected.Store(true)
	code, _ = probe("/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, logs.String(), `"msg":"ready"`)

	// The same checks on the admin listener.
	w := httptest.NewRecorder()
	e.tel.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusOK, w.Code)

	// Not a GET: 405, with Allow.
	w = httptest.NewRecorder()
	e.api.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/readyz", nil))
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
	require.Equal(t, "GET, HEAD", w.Header().Get("Allow"))

	// HEAD: the status, no body.
	w = httptest.NewRecorder()
	e.api.ServeHTTP(w, httptest.NewRequest(http.MethodHead, "/healthz", nil))
	require.Equal(t, http.StatusOK, w.Code)
	require.Empty(t, w.Body.String())

	lag := telemetry.New(telemetry.Config{Store: behind{store}})
	w = httptest.NewRecorder()
	lag.Readyz(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.JSONEq(t, `{"status":"fail","checks":{"database":"ok","migrations":"fail"}}`, w.Body.String(), "no broker check without a broker")

	require.NoError(t, store.Close())
	code, body = probe("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.JSONEq(t, `{"status":"fail","checks":{"database":"fail","migrations":"unknown","broker":"ok"}}`, body)
	code, body = probe("/healthz")
	require.Equal(t, http.StatusOK, code, "the process still serves")
	require.JSONEq(t, `{"status":"ok"}`, body)
}

// TestProbes_PassTheRest: the API listener's other paths reach the API.
func TestProbes_PassTheRest(t *testing.T) {
	e := newEnv(t, openSQLite(t), telemetry.Config{})
	w := e.do(http.MethodGet, "/v1/organisation", "")
	require.Equal(t, http.StatusOK, w.Code)
	require.NotEmpty(t, w.Header().Get("Svc-Request-Id"))
	w = e.do(http.MethodGet, "/healthzz", "")
	require.Equal(t, http.StatusNotFound, w.Code)
	require.Equal(t, "application/problem+json", w.Header().Get("Content-Type"), "the API's own 404")
}

// TestReadyz_Draining: after Drain, /readyz answers 503 with the status
// "draining" although every check passes, on both listeners, and the
// API still answers.
func TestReadyz_Draining(t *testing.T) {
	e := newEnv(t, openSQLite(t), telemetry.Config{})
	w := httptest.NewRecorder()
	e.api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	require.Equal(t, http.StatusOK, w.Code)

	e.tel.Drain()
	for _, h := range []http.Handler{e.api, e.tel.Handler()} {
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		require.Equal(t, http.StatusServiceUnavailable, w.Code)
		require.JSONEq(t, `{"status":"draining","checks":{"database":"ok","migrations":"ok"}}`, w.Body.String())
	}
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/v1/organisation", "").Code, "requests are still served")
}
