package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/shared/fakeclock"
)

// stores are the engines every HTTP test runs on: SQLite always,
// PostgreSQL when SVC_TEST_POSTGRES_URL is set.
var stores = []struct {
	name string
	open func(t *testing.T) cloud.Store
}{
	{"sqlite", func(t *testing.T) cloud.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", func(t *testing.T) cloud.Store { return postgrestest.New(t) }},
}

// eachStore runs fn once per store engine.
func eachStore(t *testing.T, fn func(t *testing.T, open func(t *testing.T) cloud.Store)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { fn(t, s.open) })
	}
}

// newClock is a harness clock at the tests' start.
func newClock() *fakeclock.Clock { return fakeclock.New(time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)) }

// harness is one API server over one store, with a seeded organisation.
type harness struct {
	t      testing.TB
	replay bool         // resend each POST it keys, to hold the replay to the first answer
	client *http.Client // nil: http.DefaultClient
	store  cloud.Store
	svc    *cloud.Service
	clock  *fakeclock.Clock
	url    string
	seed   cloud.SeedResult
	api    *httpapi.Server
}

type options struct {
	limits map[cloud.Plan]int
	plan   cloud.Plan
	wrap   func(cloud.Store) cloud.Store // a fault-injecting wrapper
	config func(*httpapi.Config)         // changes to the server's configuration
	// timeout is the server's RequestTimeout (zero: its default).
	timeout time.Duration
}

func newHarness(t *testing.T, open func(t *testing.T) cloud.Store, opts ...func(*options)) *harness {
	t.Helper()
	o := options{plan: cloud.PlanPro}
	for _, f := range opts {
		f(&o)
	}
	base := open(t)
	h := &harness{t: t, clock: newClock()}
	return h.serve(t, base, o)
}

// serve starts a server on store; two harnesses built from one store are
// two API processes sharing it.
func (h *harness) serve(t *testing.T, base cloud.Store, o options) *harness {
	t.Helper()
	store := base
	if o.wrap != nil {
		store = o.wrap(base)
	}
	h.store = store
	h.svc = cloud.NewService(store, h.clock.Now)
	if h.seed.Organisation.ID == "" {
		res, err := cloud.NewService(base, h.clock.Now).Seed(context.Background(), "Harness Org", o.plan)
		require.NoError(t, err)
		h.seed = res
	}
	cfg := httpapi.Config{Service: h.svc, RateLimits: o.limits, Now: h.clock.Now,
		Logger: slog.New(&apartLog{t: t}), RequestTimeout: o.timeout}
	if o.config != nil {
		o.config(&cfg)
	}
	api, err := httpapi.New(context.Background(), cfg)
	require.NoError(t, err)
	h.api = api
	h.replay = o.limits == nil // a replay counts against a rate limit under test
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// apartLog fails the test when the server reports a write request whose
// action committed apart from its stored response (docs/decisions.md,
// "Idempotency"): every POST must store its response with its action.
type apartLog struct {
	t     testing.TB
	attrs []slog.Attr
}

func (l *apartLog) Enabled(context.Context, slog.Level) bool { return true }

// twoTransactions are the operations docs/decisions.md ("Idempotency")
// lists as writing twice: closing a visit made from a booking also
// releases the booking, in a transaction of its own after the one that
// stores the response.
var twoTransactions = []string{"/v1/visits/:visit_id/cancel", "/v1/visits/:visit_id/reschedule"}

func (l *apartLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "committed") {
		return nil
	}
	var b strings.Builder
	for _, a := range l.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	listed := false
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		listed = listed || a.Key == "path" && slices.Contains(twoTransactions, a.Value.String())
		return true
	})
	if r.Level < slog.LevelWarn && listed {
		return nil
	}
	l.t.Errorf("server: %s:%s", r.Message, b.String())
	return nil
}

func (l *apartLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &apartLog{t: l.t, attrs: append(append([]slog.Attr{}, l.attrs...), as...)}
}

func (l *apartLog) WithGroup(string) slog.Handler { return l }

func withLimits(l map[cloud.Plan]int) func(*options) { return func(o *options) { o.limits = l } }
func withPlan(p cloud.Plan) func(*options) {
	return func(o *options) { o.plan = p }
}
func withWrap(w func(cloud.Store) cloud.Store) func(*options) { return func(o *options) { o.wrap = w } }
func withConfig(f func(*httpapi.Config)) func(*options)       { return func(o *options) { o.config = f } }
func withTimeout(d time.Duration) func(*options)              { return func(o *options) { o.timeout = d } }

// response is a read response; JSON bodies are decoded into Body.
type response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
	Took   time.Duration // from sending the request to the end of the answer
}

// req is one request to send.
type req struct {
	method, path, key string
	body              any    // marshalled as JSON unless raw is set
	raw               []byte // sent as is
	header            map[string]string
	noIdem            bool // leave out the automatic Idempotency-Key
}

// do sends r, checks the conventions every response keeps (request ID in
// header and problem body, problem content type for errors) and validates
// the response against the OpenAPI document.
func (h *harness) do(r req) response {
	h.t.Helper()
	var body io.Reader
	switch {
	case r.raw != nil:
		body = bytes.NewReader(r.raw)
	case r.body != nil:
		b, err := json.Marshal(r.body)
		require.NoError(h.t, err)
		body = bytes.NewReader(b)
	}
	httpReq, err := http.NewRequest(r.method, h.url+r.path, body)
	require.NoError(h.t, err)
	if r.key != "" {
		httpReq.Header.Set("Authorization", "Bearer "+r.key)
	}
	if body != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	autoKey := r.method == http.MethodPost && !r.noIdem && r.header["Idempotency-Key"] == ""
	if autoKey {
		httpReq.Header.Set("Idempotency-Key", uuid())
	}
	for k, v := range r.header {
		httpReq.Header.Set(k, v)
	}
	client := h.client
	if client == nil {
		client = http.DefaultClient
	}
	start := time.Now()
	resp, err := client.Do(httpReq)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	out := response{Status: resp.StatusCode, Header: resp.Header, Raw: raw, Took: time.Since(start)}
	if len(raw) > 0 && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		require.NoError(h.t, json.Unmarshal(raw, &out.Body), "body: %s", raw)
	}
	rid := resp.Header.Get("Svc-Request-Id")
	require.Regexp(h.t, `^req_[0-7][0-9a-hjkmnp-tv-z]{25}$`, rid, "Svc-Request-Id on %s %s", r.method, r.path)
	if resp.StatusCode >= 400 {
		require.Equal(h.t, "application/problem+json", resp.Header.Get("Content-Type"), "%s", raw)
		require.Equal(h.t, rid, out.Body["request_id"], "request_id in the body equals Svc-Request-Id")
		require.Equal(h.t, float64(resp.StatusCode), out.Body["status"])
	}
	validateResponse(h.t, httpReq, resp.StatusCode, resp.Header, raw)
	// 401 and 403 are decided before the key is looked at, 405 before
	// any operation, 429, 500 and 503 are not stored: everything else is
	// replayed.
	if autoKey && h.replay && resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden &&
		resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		h.requireReplay(r, httpReq.Header.Get("Idempotency-Key"), out)
	}
	return out
}

// requireReplay sends r again with the key it was sent with: the answer is
// the first one, byte for byte, marked replayed (docs/decisions.md,
// "Idempotency"). Every POST the harness keys itself goes through it.
func (h *harness) requireReplay(r req, key string, first response) {
	h.t.Helper()
	r.header = maps.Clone(r.header)
	if r.header == nil {
		r.header = map[string]string{}
	}
	r.header["Idempotency-Key"] = key
	again := h.do(r)
	require.Equal(h.t, first.Status, again.Status, "replay of %s %s: %s", r.method, r.path, again.Raw)
	require.Equal(h.t, string(first.Raw), string(again.Raw), "replay of %s %s", r.method, r.path)
	require.Equal(h.t, "true", again.Header.Get("Idempotent-Replayed"), "replay of %s %s", r.method, r.path)
	for _, name := range []string{"Svc-Request-Id", "Location", "Content-Type"} {
		require.Equal(h.t, first.Header.Get(name), again.Header.Get(name), "%s of the replay of %s %s", name, r.method, r.path)
	}
}

// get, post and patch are do with the test-mode secret key.
func (h *harness) get(path string) response {
	h.t.Helper()
	return h.do(req{method: http.MethodGet, path: path, key: h.seed.Keys.SecretTest})
}

func (h *harness) post(path string, body any) response {
	h.t.Helper()
	return h.do(req{method: http.MethodPost, path: path, key: h.seed.Keys.SecretTest, body: body})
}

func (h *harness) patch(path string, body any) response {
	h.t.Helper()
	return h.do(req{method: http.MethodPatch, path: path, key: h.seed.Keys.SecretTest, body: body})
}

// testTenant is the seeded organisation's test mode.
func (h *harness) testTenant() cloud.Tenant {
	return cloud.Tenant{OrgID: h.seed.Organisation.ID, Mode: cloud.ModeTest}
}

func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// requireProblem asserts a problem's status, code and, when given, the
// locations of its errors.
func requireProblem(t testing.TB, r response, status int, code string, locations ...string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Raw)
	require.Equal(t, code, r.Body["code"], "%s", r.Raw)
	if len(locations) == 0 {
		return
	}
	var got []string
	errs, _ := r.Body["errors"].([]any)
	for _, e := range errs {
		got = append(got, e.(map[string]any)["location"].(string))
	}
	require.ElementsMatch(t, locations, got, "%s", r.Raw)
}

// data returns a list response's rows.
func data(t testing.TB, r response) []map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	rows, ok := r.Body["data"].([]any)
	require.True(t, ok, "%s", r.Raw)
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		out[i] = row.(map[string]any)
	}
	return out
}

func idsOf(rows []map[string]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r["id"].(string)
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(sub)) }
