package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/shared/lockedbuf"
)

// observations records what the server tells its Observer.
type observations struct {
	mu   sync.Mutex
	list []httpapi.Observation
}

func (o *observations) ObserveRequest(x httpapi.Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, x)
}

// next waits for the observation after the first n (the server tells the
// Observer once the response is written, which the client may have read
// already) and returns it.
func (o *observations) next(t *testing.T, n int) httpapi.Observation {
	t.Helper()
	var x httpapi.Observation
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		if len(o.list) > n {
			x = o.list[n]
			return true
		}
		return false
	}, 5*time.Second, time.Millisecond, "no observation %d", n+1)
	return x
}

func (o *observations) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.list)
}

// logBuffer is the JSON log of a server, written from its goroutines.
type logBuffer struct{ lockedbuf.Buffer }

// accessLine waits for the access log line of the request with the ID and
// returns it decoded.
func (l *logBuffer) accessLine(t *testing.T, requestID string) map[string]any {
	t.Helper()
	var found map[string]any
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(l.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] == requestID {
				found = rec
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "no access log line for %s in:\n%s", requestID, l)
	return found
}

// rawRequest sends a request the harness's checks would refuse (an unknown
// method or path) and returns its status and request ID.
func rawRequest(t *testing.T, method, url, key string) (int, string) {
	t.Helper()
	r, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Svc-Request-Id")
}

// TestAccessLog_Fields: every request is one line at info with the request
// ID the response carries, the tenant and key ID of its key (never the
// key), the route template (never the path: a pass link's path is the
// credential), the status, the time taken and the bytes sent.
func TestAccessLog_Fields(t *testing.T) {
	var logs logBuffer
	h := newHarness(t, stores[0].open, withConfig(func(c *httpapi.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	}))
	ctx := context.Background()
	team, err := h.svc.CreateTeam(ctx, h.testTenant(), cloud.TeamInput{Name: cloud.Some("Logged team")})
	require.NoError(t, err)
	key := h.seed.Keys.SecretTest
	p, err := h.svc.Authenticate(ctx, key)
	require.NoError(t, err)

	r := h.get("/v1/teams/" + team.ID)
	require.Equal(t, http.StatusOK, r.Status)
	line := logs.accessLine(t, r.Header.Get("Svc-Request-Id"))
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "GET", line["method"])
	require.Equal(t, "/v1/teams/{team_id}", line["route"])
	require.Equal(t, float64(200), line["status"])
	require.Equal(t, float64(len(r.Raw)), line["bytes"])
	require.GreaterOrEqual(t, line["duration_ms"], float64(0))
	require.Equal(t, h.seed.Organisation.ID, line["org_id"])
	require.Equal(t, "test", line["mode"])
	require.Equal(t, p.Key.ID, line["key_id"])
	require.NotContains(t, line, "code", "a success has no problem code")

	// A problem: its code, and no tenant when no key was taken.
	status, rid := rawRequest(t, http.MethodGet, h.url+"/v1/no-such-thing/123", key)
	require.Equal(t, http.StatusNotFound, status)
	line = logs.accessLine(t, rid)
	require.Equal(t, httpapi.RouteUnmatched, line["route"])
	require.Equal(t, "not_found", line["code"])
	require.NotContains(t, line, "org_id")
	require.NotContains(t, line, "key_id")

	// A pass link that is not ours: the route, not the link.
	status, rid = rawRequest(t, http.MethodGet, h.url+"/v1/passes/secretlinkvalue0123456789", "")
	require.Equal(t, http.StatusNotFound, status)
	line = logs.accessLine(t, rid)
	require.Equal(t, "/v1/passes/{link}", line["route"])

	all := logs.String()
	secret := strings.TrimPrefix(key, "svc_sk_test_")
	require.NotEmpty(t, secret)
	require.NotContains(t, all, secret, "the log never holds a key")
	require.NotContains(t, all, "secretlinkvalue0123456789", "the log never holds a pass link")
	require.NotContains(t, all, "/v1/teams/"+team.ID, "the log holds routes, not paths")
}

// TestAccessLog_Off: above info, no access log line is written.
func TestAccessLog_Off(t *testing.T) {
	var logs logBuffer
	h := newHarness(t, stores[0].open, withConfig(func(c *httpapi.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}))
	require.Equal(t, http.StatusOK, h.get("/v1/teams").Status)
	require.NotContains(t, logs.String(), `"msg":"request"`)
}

// TestObserver_Labels: the Observer gets the route template, a method
// from a fixed set, the status, and what rate limits and Idempotency-Keys
// did.
func TestObserver_Labels(t *testing.T) {
	rec := &observations{}
	entered, release := make(chan struct{}), make(chan struct{})
	var slow sync.Once
	h := newHarness(t, stores[0].open, withLimits(map[cloud.Plan]int{cloud.PlanPro: 5}), withConfig(func(c *httpapi.Config) {
		c.Observer = rec
	}), withWrap(func(s cloud.Store) cloud.Store {
		return &faultStore{Store: s, createTeam: func(ctx context.Context, tm cloud.Team) error {
			slow.Do(func() { close(entered); <-release })
			return s.CreateTeam(ctx, tm)
		}}
	}))
	key := h.seed.Keys.SecretTest
	team, _, err := h.svc.Store().ListTeams(context.Background(), h.testTenant(), cloud.TeamFilter{}, cloud.Page{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, team)

	n := rec.len()
	require.Equal(t, http.StatusOK, h.get("/v1/teams/"+team[0].ID).Status)
	o := rec.next(t, n)
	require.Equal(t, "/v1/teams/{team_id}", o.Route)
	require.Equal(t, "GET", o.Method)
	require.Equal(t, 200, o.Status)
	require.Positive(t, o.Bytes)
	require.Empty(t, o.RateLimit)
	require.Empty(t, o.Idempotency)

	n = rec.len()
	status, _ := rawRequest(t, "BREW", h.url+"/v1/teams", key)
	require.GreaterOrEqual(t, status, 400)
	o = rec.next(t, n)
	require.Equal(t, "other", o.Method, "a method out of the set is other")
	require.Equal(t, httpapi.RouteUnmatched, o.Route, "no operation has the method")

	n = rec.len()
	status, _ = rawRequest(t, http.MethodGet, h.url+"/nothing/here", key)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, httpapi.RouteUnmatched, rec.next(t, n).Route)

	// One key: the first request runs, a second meanwhile is in flight,
	// a third after it is replayed, and another body with it is reused.
	k := uuid()
	send := func(name string) response {
		return h.do(req{method: http.MethodPost, path: "/v1/teams", key: key,
			body: map[string]any{"name": name}, header: map[string]string{"Idempotency-Key": k}})
	}
	first := make(chan response)
	go func() { first <- send("Observed team") }()
	<-entered
	n = rec.len()
	requireProblem(t, send("Observed team"), http.StatusConflict, "conflict")
	o = rec.next(t, n)
	require.Equal(t, "in_flight", o.Idempotency)
	require.Equal(t, "POST", o.Method)
	require.Equal(t, 409, o.Status)
	close(release)
	require.Equal(t, http.StatusCreated, (<-first).Status)

	n = rec.len()
	require.Equal(t, "true", send("Observed team").Header.Get("Idempotent-Replayed"))
	require.Equal(t, "replayed", rec.next(t, n).Idempotency)
	n = rec.len()
	requireProblem(t, send("Another team"), http.StatusUnprocessableEntity, "idempotency_key_reused")
	require.Equal(t, "key_reused", rec.next(t, n).Idempotency)

	// The organisation's 5 requests a minute (keyed ones above) are spent.
	n = rec.len()
	requireProblem(t, h.get("/v1/teams"), http.StatusTooManyRequests, "rate_limited")
	o = rec.next(t, n)
	require.Equal(t, "organisation", o.RateLimit)
	require.Equal(t, 429, o.Status)
}
