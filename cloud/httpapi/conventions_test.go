package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/shared/ids"
)

// faultStore wraps a real store; a set function field replaces one method.
type faultStore struct {
	cloud.Store
	listTeams  func(ctx context.Context, t cloud.Tenant, f cloud.TeamFilter, p cloud.Page) ([]cloud.Team, bool, error)
	createTeam func(ctx context.Context, tm cloud.Team) error
}

func (f *faultStore) ListTeams(ctx context.Context, t cloud.Tenant, fl cloud.TeamFilter, p cloud.Page) ([]cloud.Team, bool, error) {
	if f.listTeams != nil {
		return f.listTeams(ctx, t, fl, p)
	}
	return f.Store.ListTeams(ctx, t, fl, p)
}

func (f *faultStore) CreateTeam(ctx context.Context, tm cloud.Team) error {
	if f.createTeam != nil {
		return f.createTeam(ctx, tm)
	}
	return f.Store.CreateTeam(ctx, tm)
}

func TestAuth_Unauthorized(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		revokedKey, revoked, err := h.svc.CreateKey(context.Background(), h.testTenant(), cloud.KindSecret, nil)
		require.NoError(t, err)
		require.NoError(t, h.svc.RevokeKey(context.Background(), h.seed.Organisation.ID, revokedKey.ID))
		cases := map[string]map[string]string{
			"missing":        nil,
			"not bearer":     {"Authorization": "Basic " + h.seed.Keys.SecretTest},
			"empty bearer":   {"Authorization": "Bearer "},
			"unknown prefix": {"Authorization": "Bearer sk_test_" + strings.Repeat("a", 32)},
			"short":          {"Authorization": "Bearer svc_sk_test_abc"},
			"bad characters": {"Authorization": "Bearer svc_sk_test_" + strings.Repeat("-", 32)},
			"unknown":        {"Authorization": "Bearer " + cloud.NewKeySecret(cloud.KindSecret, cloud.ModeTest)},
			"mode swapped":   {"Authorization": "Bearer svc_sk_live_" + strings.TrimPrefix(h.seed.Keys.SecretTest, "svc_sk_test_")},
			"revoked":        {"Authorization": "Bearer " + revoked},
		}
		for name, header := range cases {
			t.Run(name, func(t *testing.T) {
				r := h.do(req{method: http.MethodGet, path: "/v1/teams", header: header})
				requireProblem(t, r, http.StatusUnauthorized, "unauthorized")
				require.Contains(t, r.Header.Get("WWW-Authenticate"), "Bearer")
			})
		}
		// The same request with the seeded key works: the cases above fail
		// for their key, not for something else.
		require.Equal(t, http.StatusOK, h.get("/v1/teams").Status)
	})
}

func TestAuth_ScopeMissing(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		_, key, err := h.svc.CreateKey(context.Background(), h.testTenant(), cloud.KindSecret, []cloud.Scope{cloud.ScopeSitesRead})
		require.NoError(t, err)
		r := h.do(req{method: http.MethodGet, path: "/v1/teams", key: key})
		requireProblem(t, r, http.StatusForbidden, "scope_missing")
		require.Contains(t, r.Body["detail"], "people:read")
		require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: "/v1/sites", key: key}).Status)
		r = h.do(req{method: http.MethodPost, path: "/v1/sites", key: key, body: map[string]any{"name": "X", "timezone": "UTC"}})
		requireProblem(t, r, http.StatusForbidden, "scope_missing")
		require.Contains(t, r.Body["detail"], "sites:write")
	})
}

func TestAuth_PublishableForbidden(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		for _, path := range []string{"/v1/teams", "/v1/people", "/v1/organisation", "/v1/sites"} {
			r := h.do(req{method: http.MethodGet, path: path, key: h.seed.Keys.PublishableTest})
			requireProblem(t, r, http.StatusForbidden, "forbidden")
		}
		r := h.do(req{method: http.MethodPost, path: "/v1/teams", key: h.seed.Keys.PublishableTest, body: map[string]any{"name": "X"}})
		requireProblem(t, r, http.StatusForbidden, "forbidden")
	})
}

func TestAuth_PlanRequiredInLiveMode(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		for _, plan := range []cloud.Plan{cloud.PlanFree, cloud.PlanGrowth} {
			h := newHarness(t, open, withPlan(plan))
			r := h.do(req{method: http.MethodGet, path: "/v1/teams", key: h.seed.Keys.SecretLive})
			requireProblem(t, r, http.StatusForbidden, "plan_required")
			require.Contains(t, r.Body["detail"], "Pro")
			require.Equal(t, http.StatusOK, h.get("/v1/teams").Status, "test mode works on %s", plan)
		}
		for _, plan := range []cloud.Plan{cloud.PlanPro, cloud.PlanEnterprise} {
			h := newHarness(t, open, withPlan(plan))
			r := h.do(req{method: http.MethodGet, path: "/v1/teams", key: h.seed.Keys.SecretLive})
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", plan, r.Raw)
		}
	})
}

func TestIsolation_OtherOrganisationAndModeAreNotFound(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		other, err := h.svc.Seed(context.Background(), "Other Org", cloud.PlanPro)
		require.NoError(t, err)
		mine := map[string]string{
			"teams": h.seed.Test.Teams[0], "people": h.seed.Test.People[0],
			"sites": h.seed.Test.Sites[0].ID, "gates": h.seed.Test.Sites[0].Gates[0],
		}
		live := map[string]string{
			"teams": h.seed.Live.Teams[0], "people": h.seed.Live.People[0],
			"sites": h.seed.Live.Sites[0].ID, "gates": h.seed.Live.Sites[0].Gates[0],
		}
		for kind, id := range mine {
			require.Equal(t, http.StatusOK, h.get("/v1/"+kind+"/"+id).Status)
			requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/" + kind + "/" + id, key: other.Keys.SecretTest}), http.StatusNotFound, "not_found")
			requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/" + kind + "/" + id, key: h.seed.Keys.SecretLive}), http.StatusNotFound, "not_found")
			requireProblem(t, h.do(req{method: http.MethodPatch, path: "/v1/" + kind + "/" + id, key: other.Keys.SecretTest, body: map[string]any{"name": "Taken"}}), http.StatusNotFound, "not_found")
			requireProblem(t, h.get("/v1/"+kind+"/"+live[kind]), http.StatusNotFound, "not_found")
		}
		// Lists hold only the caller's own tenant.
		for _, row := range data(t, h.do(req{method: http.MethodGet, path: "/v1/teams?limit=100&include_archived=true", key: other.Keys.SecretTest})) {
			require.NotContains(t, h.seed.Test.Teams, row["id"])
		}
		// Another organisation's person cannot be made a member.
		r := h.post("/v1/teams", map[string]any{"name": "Mixed", "member_ids": []string{other.Test.People[0]}})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.member_ids[0]")
	})
}

func TestErrors_BadRequests(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		key := h.seed.Keys.SecretTest
		r := h.do(req{method: http.MethodPost, path: "/v1/teams", key: key, raw: []byte(`{"name": "x",`)})
		requireProblem(t, r, http.StatusBadRequest, "bad_request")
		r = h.do(req{method: http.MethodPost, path: "/v1/teams", key: key, raw: []byte(`{"name":"x"}`), header: map[string]string{"Content-Type": "text/plain"}})
		requireProblem(t, r, http.StatusBadRequest, "bad_request")
		require.Contains(t, r.Body["detail"], "Content-Type")
		r = h.do(req{method: http.MethodPost, path: "/v1/teams", key: key, raw: []byte(`[1,2]`)})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body")
		r = h.do(req{method: http.MethodGet, path: "/v1/teams?q=%zz", key: key})
		requireProblem(t, r, http.StatusBadRequest, "bad_request")
		r = h.do(req{method: http.MethodGet, path: "/v1/nowhere", key: key})
		requireProblem(t, r, http.StatusNotFound, "not_found")
		r = h.do(req{method: http.MethodGet, path: "/elsewhere"})
		requireProblem(t, r, http.StatusNotFound, "not_found")
		r = h.do(req{method: http.MethodDelete, path: "/v1/teams", key: key})
		requireProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		big := `{"name":"` + strings.Repeat("a", 1<<20) + `"}`
		r = h.do(req{method: http.MethodPost, path: "/v1/teams", key: key, raw: []byte(big)})
		requireProblem(t, r, http.StatusBadRequest, "bad_request")
	})
}

// A path asked with a method it does not take answers 405
// method_not_allowed with Allow naming the methods it takes, before any
// key is looked at; an unknown path stays 404 without Allow.
func TestErrors_WrongMethodIs405WithAllow(t *testing.T) {
	h := newHarness(t, stores[0].open) // decided before any store is read
	visit := "/v1/visits/" + ids.New(ids.Visit)
	for _, c := range []struct {
		method, path, allow string
	}{
		{http.MethodDelete, "/v1/teams", "GET, POST"},
		{http.MethodPut, visit, "GET, PATCH"},
		{http.MethodGet, visit + "/check-in", "POST"},
		{http.MethodPost, visit + "/pass.png", "GET"},
		{http.MethodPost, "/v1/openapi.json", "GET"},
		{http.MethodPatch, "/v1/visitors/" + ids.New(ids.Visitor), "DELETE, GET"},
		{http.MethodOptions, "/v1/webhook-endpoints/" + ids.New(ids.WebhookEndpoint), "DELETE, GET, PATCH"},
	} {
		for _, key := range []string{"", h.seed.Keys.SecretTest} {
			r := h.do(req{method: c.method, path: c.path, key: key})
			requireProblem(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
			require.Equal(t, c.allow, r.Header.Get("Allow"), "%s %s", c.method, c.path)
			require.Contains(t, r.Body["detail"], c.allow, "%s %s", c.method, c.path)
			require.Equal(t, strings.SplitN(c.path, "?", 2)[0], r.Body["instance"])
		}
	}

	// HEAD is a method like the others: the API has no HEAD operation.
	// Its answer has no body, so it is read here rather than by h.do.
	head, err := http.NewRequest(http.MethodHead, h.url+"/v1/teams", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(head)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "GET, POST", resp.Header.Get("Allow"))

	for _, path := range []string{"/v1/nowhere", "/v1/teams/" + ids.New(ids.Team) + "/archive", "/v2/teams"} {
		r := h.do(req{method: http.MethodDelete, path: path, key: h.seed.Keys.SecretTest})
		requireProblem(t, r, http.StatusNotFound, "not_found")
		require.Empty(t, r.Header.Get("Allow"), path)
	}
	// A path one segment longer than a route's is no path of the API, even
	// with the method the route has (echo's last parameter would take the
	// rest of the path).
	for _, path := range []string{"/v1/teams/" + ids.New(ids.Team) + "/archive", visit + "/x/y"} {
		r := h.do(req{method: http.MethodGet, path: path, key: h.seed.Keys.SecretTest})
		requireProblem(t, r, http.StatusNotFound, "not_found")
	}
}

func TestErrors_PanicIsInternalError(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withWrap(func(s cloud.Store) cloud.Store {
			return &faultStore{Store: s, listTeams: func(context.Context, cloud.Tenant, cloud.TeamFilter, cloud.Page) ([]cloud.Team, bool, error) {
				panic("boom: secret internals")
			}}
		}))
		r := h.get("/v1/teams")
		requireProblem(t, r, http.StatusInternalServerError, "internal_error")
		require.NotContains(t, string(r.Raw), "boom")
		require.NotContains(t, string(r.Raw), "goroutine")
		// The server lives on.
		require.Equal(t, http.StatusOK, h.get("/v1/sites").Status)
	})
}

func TestValidation_ListsEveryProblem(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		r := h.post("/v1/people", map[string]any{"name": 7, "email": "not-an-email", "phone": "07700 900123", "site_id": "site_nope", "colour": "blue"})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed",
			"body.name", "body.email", "body.phone", "body.site_id", "body.colour")
		r = h.post("/v1/teams", map[string]any{"name": "", "member_ids": "x", "visitors_can_choose": "yes", "archived": true})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed",
			"body.name", "body.member_ids", "body.visitors_can_choose", "body.archived")
		r = h.post("/v1/sites", map[string]any{"name": "HQ", "timezone": "Mars/Olympus", "address": map[string]any{"line1": "", "country": "gb", "floor": 3}})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed",
			"body.timezone", "body.address.line1", "body.address.country", "body.address.floor")
		r = h.get("/v1/teams/team_123")
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "path.team_id")
		r = h.get("/v1/teams/" + ids.New(ids.Person))
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "path.team_id")
		r = h.get("/v1/teams/" + ids.New(ids.Team))
		requireProblem(t, r, http.StatusNotFound, "not_found")
		r = h.get("/v1/teams?colour=blue&limit=5&limit=6")
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "query.colour", "query.limit")
	})
}

func TestIdempotency_HeaderRequired(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		key := h.seed.Keys.SecretTest
		r := h.do(req{method: http.MethodPost, path: "/v1/teams", key: key, body: map[string]any{"name": "A"}, noIdem: true})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "header.Idempotency-Key")
		r = h.do(req{method: http.MethodPost, path: "/v1/teams", key: key, body: map[string]any{"name": "A"}, header: map[string]string{"Idempotency-Key": "not-a-uuid"}})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "header.Idempotency-Key")
	})
}

func TestIdempotency_ReplayAndReuse(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		k := uuid()
		send := func(body any, path string, key string) response {
			return h.do(req{method: http.MethodPost, path: path, key: key, body: body, header: map[string]string{"Idempotency-Key": k}})
		}
		first := send(map[string]any{"name": "Idem Team"}, "/v1/teams", h.seed.Keys.SecretTest)
		require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
		again := send(map[string]any{"name": "Idem Team"}, "/v1/teams", h.seed.Keys.SecretTest)
		require.Equal(t, first.Status, again.Status)
		require.Equal(t, first.Raw, again.Raw)
		require.Equal(t, first.Header.Get("Location"), again.Header.Get("Location"))
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Empty(t, first.Header.Get("Idempotent-Replayed"))
		rows := data(t, h.get("/v1/teams?q=idem+team"))
		require.Len(t, rows, 1, "the replay did not create a second team")

		requireProblem(t, send(map[string]any{"name": "Other Team"}, "/v1/teams", h.seed.Keys.SecretTest), http.StatusUnprocessableEntity, "idempotency_key_reused")
		requireProblem(t, send(map[string]any{"name": "Idem Team", "timezone": "UTC"}, "/v1/sites", h.seed.Keys.SecretTest), http.StatusUnprocessableEntity, "idempotency_key_reused")

		// Keys belong to one organisation and mode: the same key in live
		// mode is a new request.
		live := send(map[string]any{"name": "Idem Team"}, "/v1/teams", h.seed.Keys.SecretLive)
		require.Equal(t, http.StatusCreated, live.Status, "%s", live.Raw)
		require.NotEqual(t, first.Body["id"], live.Body["id"])

		// Errors other than 429, 500 and 503 are stored too.
		k = uuid()
		bad := send(map[string]any{"name": ""}, "/v1/teams", h.seed.Keys.SecretTest)
		require.Equal(t, http.StatusUnprocessableEntity, bad.Status)
		badAgain := send(map[string]any{"name": ""}, "/v1/teams", h.seed.Keys.SecretTest)
		require.Equal(t, bad.Raw, badAgain.Raw)
		require.Equal(t, bad.Header.Get("Svc-Request-Id"), badAgain.Header.Get("Svc-Request-Id"))

		// After 24 hours the key is free again.
		k = uuid()
		one := send(map[string]any{"name": "Daily Team"}, "/v1/teams", h.seed.Keys.SecretTest)
		h.clock.Advance(24*time.Hour + time.Minute)
		two := send(map[string]any{"name": "Daily Team"}, "/v1/teams", h.seed.Keys.SecretTest)
		require.Equal(t, http.StatusCreated, two.Status)
		require.NotEqual(t, one.Body["id"], two.Body["id"])
		require.Empty(t, two.Header.Get("Idempotent-Replayed"))
	})
}

func TestIdempotency_InFlightConflict(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		h := newHarness(t, open, withWrap(func(s cloud.Store) cloud.Store {
			return &faultStore{Store: s, createTeam: func(ctx context.Context, tm cloud.Team) error {
				once.Do(func() { close(entered); <-release })
				return s.CreateTeam(ctx, tm)
			}}
		}))
		k := uuid()
		send := func() response {
			return h.do(req{method: http.MethodPost, path: "/v1/teams", key: h.seed.Keys.SecretTest,
				body: map[string]any{"name": "Slow Team"}, header: map[string]string{"Idempotency-Key": k}})
		}
		first := make(chan response)
		go func() { first <- send() }()
		<-entered
		requireProblem(t, send(), http.StatusConflict, "conflict")
		close(release)
		require.Equal(t, http.StatusCreated, (<-first).Status)
		require.Equal(t, "true", send().Header.Get("Idempotent-Replayed"))
	})
}

// TestIdempotency_RacedAcrossProcesses: a retry reaching another process
// while the first request still runs acts there too, but only one
// transaction can store the key: the one that loses rolls back and
// replays the winner's response. One team is made.
func TestIdempotency_RacedAcrossProcesses(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		base := open(t)
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		a := newHarness(t, func(*testing.T) cloud.Store { return base }, withWrap(func(s cloud.Store) cloud.Store {
			return &faultStore{Store: s, createTeam: func(ctx context.Context, tm cloud.Team) error {
				once.Do(func() { close(entered); <-release })
				return s.CreateTeam(ctx, tm)
			}}
		}))
		b := &harness{t: t, clock: a.clock, seed: a.seed}
		b.serve(t, base, options{})
		k := uuid()
		send := func(h *harness) response {
			return h.do(req{method: http.MethodPost, path: "/v1/teams", key: h.seed.Keys.SecretTest,
				body: map[string]any{"name": "Raced Team"}, header: map[string]string{"Idempotency-Key": k}})
		}
		first := make(chan response)
		go func() { first <- send(a) }()
		<-entered
		won := send(b)
		require.Equal(t, http.StatusCreated, won.Status, "%s", won.Raw)
		require.Empty(t, won.Header.Get("Idempotent-Replayed"))
		close(release)
		lost := <-first
		require.Equal(t, http.StatusCreated, lost.Status, "%s", lost.Raw)
		require.Equal(t, "true", lost.Header.Get("Idempotent-Replayed"), "the loser replays the winner")
		require.Equal(t, string(won.Raw), string(lost.Raw))
		require.Equal(t, won.Header.Get("Svc-Request-Id"), lost.Header.Get("Svc-Request-Id"))
		n := 0
		for _, tm := range data(t, a.get("/v1/teams?limit=100")) {
			if tm["name"] == "Raced Team" {
				n++
			}
		}
		require.Equal(t, 1, n, "one team made")
	})
}

func TestIdempotency_ServerErrorsAreNotStored(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		var mu sync.Mutex
		fail := true
		h := newHarness(t, open, withWrap(func(s cloud.Store) cloud.Store {
			return &faultStore{Store: s, createTeam: func(ctx context.Context, tm cloud.Team) error {
				mu.Lock()
				defer mu.Unlock()
				if fail {
					fail = false
					return errors.New("disk on fire")
				}
				return s.CreateTeam(ctx, tm)
			}}
		}))
		k := uuid()
		send := func() response {
			return h.do(req{method: http.MethodPost, path: "/v1/teams", key: h.seed.Keys.SecretTest,
				body: map[string]any{"name": "Retry Team"}, header: map[string]string{"Idempotency-Key": k}})
		}
		requireProblem(t, send(), http.StatusInternalServerError, "internal_error")
		r := send()
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Empty(t, r.Header.Get("Idempotent-Replayed"))
	})
}

func TestRateLimit_PerOrganisationModeAndMinute(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withLimits(map[cloud.Plan]int{cloud.PlanPro: 3}))
		for i := 1; i <= 3; i++ {
			r := h.get("/v1/sites")
			require.Equal(t, http.StatusOK, r.Status)
			require.Equal(t, "3", r.Header.Get("RateLimit-Limit"))
			require.Equal(t, strconv.Itoa(3-i), r.Header.Get("RateLimit-Remaining"))
			reset, err := strconv.Atoi(r.Header.Get("RateLimit-Reset"))
			require.NoError(t, err)
			require.True(t, reset >= 1 && reset <= 60, "reset %d", reset)
		}
		r := h.get("/v1/sites")
		requireProblem(t, r, http.StatusTooManyRequests, "rate_limited")
		require.Equal(t, "60", r.Header.Get("Retry-After"), "the harness clock sits on a minute boundary")
		// A 429 is not stored under its Idempotency-Key.
		k := uuid()
		post := func() response {
			return h.do(req{method: http.MethodPost, path: "/v1/teams", key: h.seed.Keys.SecretTest,
				body: map[string]any{"name": "Limited"}, header: map[string]string{"Idempotency-Key": k}})
		}
		requireProblem(t, post(), http.StatusTooManyRequests, "rate_limited")
		// Live mode has its own budget.
		require.Equal(t, http.StatusOK, h.do(req{method: http.MethodGet, path: "/v1/sites", key: h.seed.Keys.SecretLive}).Status)
		// The next minute starts afresh, and the key acts.
		h.clock.Advance(time.Minute)
		created := post()
		require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
		require.Equal(t, "2", created.Header.Get("RateLimit-Remaining"))
	})
}

// TestRateLimit_SharedAcrossProcesses runs two API servers on one
// PostgreSQL store: their requests count against one budget.
func TestRateLimit_SharedAcrossProcesses(t *testing.T) {
	open := stores[1].open
	base := open(t)
	limits := withLimits(map[cloud.Plan]int{cloud.PlanPro: 4})
	a := newHarness(t, func(*testing.T) cloud.Store { return base }, limits)
	b := &harness{t: t, clock: a.clock, seed: a.seed}
	var o options
	limits(&o)
	b.serve(t, base, o)
	require.Equal(t, http.StatusOK, a.get("/v1/sites").Status)
	require.Equal(t, http.StatusOK, b.get("/v1/sites").Status)
	require.Equal(t, http.StatusOK, a.get("/v1/sites").Status)
	require.Equal(t, http.StatusOK, b.get("/v1/sites").Status)
	requireProblem(t, a.get("/v1/sites"), http.StatusTooManyRequests, "rate_limited")
	requireProblem(t, b.get("/v1/sites"), http.StatusTooManyRequests, "rate_limited")

	// And an Idempotency-Key used on one is replayed by the other.
	a.clock.Advance(time.Minute)
	k := uuid()
	first := a.do(req{method: http.MethodPost, path: "/v1/teams", key: a.seed.Keys.SecretTest, body: map[string]any{"name": "Shared"}, header: map[string]string{"Idempotency-Key": k}})
	require.Equal(t, http.StatusCreated, first.Status)
	second := b.do(req{method: http.MethodPost, path: "/v1/teams", key: b.seed.Keys.SecretTest, body: map[string]any{"name": "Shared"}, header: map[string]string{"Idempotency-Key": k}})
	require.Equal(t, first.Raw, second.Raw)
	require.Equal(t, "true", second.Header.Get("Idempotent-Replayed"))
}

// claimCounter counts the claims a server makes on the shared request
// counters, and the requests they claim.
type claimCounter struct {
	cloud.Store
	claims, claimed atomic.Int64
}

func (c *claimCounter) CountRequests(ctx context.Context, t cloud.Tenant, w time.Time, n int64) (int64, error) {
	c.claims.Add(1)
	c.claimed.Add(n)
	return c.Store.CountRequests(ctx, t, w, n)
}

// TestRateLimit_ClaimedInSlicesAcrossProcesses runs two API servers on
// one PostgreSQL store with a budget large enough to be claimed in
// slices: together they admit no more than the budget and at most a slice
// less one each fewer, and they write the shared counter once a slice,
// not once a request. A refusal once the budget is spent writes nothing.
func TestRateLimit_ClaimedInSlicesAcrossProcesses(t *testing.T) {
	const limit = 5 * httpapi.LeaseFraction
	size := int64(limit / httpapi.LeaseFraction)
	base := stores[1].open(t)
	counters := []*claimCounter{{}, {}}
	wrap := func(i int) func(*options) {
		return withWrap(func(s cloud.Store) cloud.Store { counters[i].Store = s; return counters[i] })
	}
	limits := withLimits(map[cloud.Plan]int{cloud.PlanPro: limit})
	a := newHarness(t, func(*testing.T) cloud.Store { return base }, limits, wrap(0))
	b := &harness{t: t, clock: a.clock, seed: a.seed}
	var o options
	limits(&o)
	wrap(1)(&o)
	b.serve(t, base, o)

	admitted, refused := 0, [2]int{}
	for i := 0; refused[0] < 3 || refused[1] < 3; i++ {
		require.Less(t, i, 2*limit, "the servers never refused")
		h := []*harness{a, b}[i%2]
		r := h.get("/v1/sites")
		switch r.Status {
		case http.StatusOK:
			require.Zero(t, refused[i%2], "a server admitted a request after refusing one in the same minute")
			admitted++
			remaining, err := strconv.Atoi(r.Header.Get("RateLimit-Remaining"))
			require.NoError(t, err)
			require.Less(t, remaining, limit)
		default:
			requireProblem(t, r, http.StatusTooManyRequests, "rate_limited")
			refused[i%2]++
		}
	}
	require.LessOrEqual(t, admitted, limit, "never more than the budget")
	require.GreaterOrEqual(t, int64(admitted), limit-2*(size-1), "at most a slice less one early, per server")
	for i, c := range counters {
		claims := c.claims.Load()
		require.Equal(t, claims*size, c.claimed.Load(), "server %d claims whole slices", i)
		require.LessOrEqual(t, claims, int64(limit)/size+1, "server %d claims once a slice, and once more to learn the budget is spent", i)
	}
	// The next minute starts afresh.
	a.clock.Advance(time.Minute)
	r := a.get("/v1/sites")
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, strconv.Itoa(limit-1), r.Header.Get("RateLimit-Remaining"))
}

func TestIdempotency_ExpiredKeysArePurged(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		h.post("/v1/teams", map[string]any{"name": "Old"})
		h.clock.Advance(time.Hour)
		h.post("/v1/teams", map[string]any{"name": "Newer"})
		h.clock.Advance(23*time.Hour + time.Minute) // the first is past 24 hours, the second is not
		require.NoError(t, h.api.Purge(context.Background()))
		// Purge again from the store's side: only the newer record is left,
		// and it goes once it too is older than the window.
		left, err := h.store.PurgeIdempotencyKeys(context.Background(), h.clock.Now())
		require.NoError(t, err)
		require.Equal(t, int64(1), left, "Purge removed the expired record and kept the live one")
	})
}
