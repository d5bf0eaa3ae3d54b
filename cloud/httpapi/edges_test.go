package httpapi_test

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/shared/edgeauth"
	"github.com/svc-vms/svc/sync/protocol"
)

// appliance is an appliance's identity key, making signed requests.
type appliance struct {
	priv ed25519.PrivateKey
	skew time.Duration // its clock minus the harness's
}

func newAppliance(t testing.TB) *appliance {
	_, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	return &appliance{priv: priv}
}

// do sends a request signed by the appliance.
func (a *appliance) do(h *harness, method, path string, body []byte) response {
	h.t.Helper()
	r := httptest.NewRequest(method, path, nil)
	edgeauth.Sign(r, body, a.priv, h.clock.Now().Add(a.skew))
	header := map[string]string{}
	for _, k := range []string{edgeauth.HeaderKey, edgeauth.HeaderTime, edgeauth.HeaderSignature} {
		header[k] = r.Header.Get(k)
	}
	raw := body
	if raw == nil {
		raw = []byte{}
	}
	return h.do(req{method: method, path: path, raw: raw, header: header, noIdem: true})
}

var testBroker = httpapi.EdgeBroker{URL: "ssl://mqtt.example.com:8883", CA: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")}

func withBroker() func(*options) {
	return withConfig(func(c *httpapi.Config) { c.EdgeBroker = testBroker })
}

// enrol has a new appliance ask for a code and returns it with the code.
func enrol(t *testing.T, h *harness) (*appliance, string) {
	t.Helper()
	a := newAppliance(t)
	r := a.do(h, http.MethodPost, "/v1/enrolments", nil)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return a, r.Body["code"].(string)
}

// demoEdge enrols an appliance at the test-mode London site and returns
// its edge's ID.
func (h *harness) demoEdge(t *testing.T) string {
	t.Helper()
	_, code := enrol(t, h)
	r := h.post("/v1/edges", map[string]any{"code": code, "site_id": london(h).ID, "name": "Lobby"})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.Body["id"].(string)
}

// The maintenance loop (Server.Purge) deletes an enrolment whose code
// expired more than cloud.EnrolmentRetention ago: its appliance's poll is
// then not_found, and it asks for a new code.
func TestEnrolments_PurgedByMaintenance(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		a, _ := enrol(t, h)
		h.clock.Advance(cloud.EnrolmentTTL + cloud.EnrolmentRetention)
		require.NoError(t, h.api.Purge(t.Context()))
		r := a.do(h, http.MethodGet, "/v1/enrolments/self", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "expired", r.Body["state"], "kept for the retention")

		h.clock.Advance(time.Second)
		require.NoError(t, h.api.Purge(t.Context()))
		r = a.do(h, http.MethodGet, "/v1/enrolments/self", nil)
		requireProblem(t, r, http.StatusNotFound, "not_found")
		r = a.do(h, http.MethodPost, "/v1/enrolments", nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	})
}

// The installer's path: an appliance asks for a code and polls; the code
// is claimed with a secret key; the appliance's next poll has its
// configuration; the fleet lists it, filtered, and shows it; revoking it
// says so. A code works once; its clock skew is shown.
func TestEdges_EnrolClaimListRevoke(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		a := newAppliance(t)
		a.skew = 45 * time.Second
		r := a.do(h, http.MethodPost, "/v1/enrolments", []byte("{}"))
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Equal(t, "waiting", r.Body["state"])
		require.Regexp(t, `^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$`, r.Body["code"])
		require.Equal(t, "2026-11-21T09:15:00.000Z", r.Body["expires_at"], "15 minutes")
		require.Equal(t, 45.0, r.Body["clock_skew_seconds"])
		require.Equal(t, true, r.Body["clock_skew_warning"])
		code := r.Body["code"].(string)

		r = a.do(h, http.MethodGet, "/v1/enrolments/self", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "waiting", r.Body["state"])
		require.Nil(t, r.Body["code"], "the code is shown by the answer that made it only")
		require.Nil(t, r.Body["configuration"])

		site := london(h)
		r = h.post("/v1/edges", map[string]any{"code": strings.ToLower(code), "site_id": site.ID, "name": "Lobby"})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		edge := r.Body
		id := edge["id"].(string)
		require.Equal(t, "/v1/edges/"+id, r.Header.Get("Location"))
		require.Equal(t, "offline", edge["state"])
		require.Equal(t, true, edge["enrolled_by_code"])
		require.Equal(t, 45.0, edge["clock_skew_seconds"])
		require.Equal(t, true, edge["clock_skew_warning"])
		require.Nil(t, edge["update"])

		again := h.post("/v1/edges", map[string]any{"code": code, "site_id": h.seed.Test.Sites[1].ID})
		requireProblem(t, again, http.StatusConflict, "invalid_state", "body.code")

		a.skew = time.Second
		r = a.do(h, http.MethodGet, "/v1/enrolments/self", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		require.Equal(t, "claimed", r.Body["state"])
		conf := r.Body["configuration"].(map[string]any)
		require.Equal(t, id, conf["edge_id"])
		require.Equal(t, map[string]any{"mode": "test", "org_id": h.seed.Organisation.ID, "site_id": site.ID,
			"name": conf["site"].(map[string]any)["name"], "time_zone": "Europe/London"}, conf["site"])
		broker := conf["broker"].(map[string]any)
		require.Equal(t, testBroker.URL, broker["url"])
		require.Equal(t, string(testBroker.CA), broker["ca"])
		require.Equal(t, id, broker["username"])
		_, err := h.svc.AuthenticateEdge(t.Context(), id, broker["password"].(string))
		require.NoError(t, err, "the password delivered opens the broker")
		gates := conf["gates"].([]any)
		require.Len(t, gates, len(site.Gates))
		for i, g := range gates {
			require.Equal(t, site.Gates[i], g.(map[string]any)["id"])
		}

		// It connects and reports: online, with what it said.
		free := uint64(5 << 30)
		oldest := h.clock.Now().Add(-time.Minute)
		require.NoError(t, h.svc.RecordEdgeStatus(t.Context(), cloud.EdgeSite(h.testTenant(), site.ID), protocol.Status{
			EdgeID: id, State: "online", At: h.clock.Now().Add(-2 * time.Second), Seq: 1, Outbox: 2, Software: "svc-edge 1.0",
			OutboxOldest: &oldest, Cache: &protocol.CacheCounts{Visits: 3, People: 4, Gates: 2, Keys: 1}, DiskFree: &free}))
		got := h.get("/v1/edges/" + id)
		require.Equal(t, http.StatusOK, got.Status, "%s", got.Raw)
		require.Equal(t, "online", got.Body["state"])
		require.Nil(t, got.Body["offline_since"])
		require.Equal(t, "svc-edge 1.0", got.Body["software_version"])
		require.Equal(t, -2.0, got.Body["clock_skew_seconds"], "measured at the status")
		require.Equal(t, false, got.Body["clock_skew_warning"])
		require.Equal(t, float64(free), got.Body["disk_free_bytes"])
		require.Equal(t, map[string]any{"depth": 2.0, "oldest_fact_at": "2026-11-21T08:59:00.000Z"}, got.Body["outbox"])
		require.Equal(t, map[string]any{"visits": 3.0, "people": 4.0, "gates": 2.0, "keys": 1.0}, got.Body["cache"])
		head := got.Body["feed_head"].(float64)
		require.Equal(t, head-1, got.Body["lag"])

		r = a.do(h, http.MethodGet, "/v1/enrolments/self", nil)
		require.Equal(t, "enrolled", r.Body["state"], "nothing more to deliver once it connected")
		require.Nil(t, r.Body["configuration"])

		list := data(t, h.get("/v1/edges?site_id="+site.ID+"&state=online"))
		require.Len(t, list, 1)
		require.Equal(t, id, list[0]["id"])
		require.Empty(t, data(t, h.get("/v1/edges?state=offline")))
		requireProblem(t, h.get("/v1/edges?state=lost"), http.StatusUnprocessableEntity, "validation_failed", "query.state")

		// Silent for 3 minutes: offline.
		h.clock.Advance(cloud.EdgeSilentAfter + time.Second)
		require.Len(t, data(t, h.get("/v1/edges?state=offline")), 1)

		r = h.post("/v1/edges/"+id+"/revoke", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "2026-11-21T09:03:01.000Z", r.Body["revoked_at"])
		_, err = h.svc.AuthenticateEdge(t.Context(), id, broker["password"].(string))
		require.ErrorIs(t, err, cloud.ErrUnauthorized, "a revoked edge's password stops working")
		r = a.do(h, http.MethodGet, "/v1/enrolments/self", nil)
		require.Equal(t, "revoked", r.Body["state"])
	})
}

// Unsigned, badly signed and far-off requests are unauthorized; a key that
// asked for nothing is not_found; asking again gives a new code.
func TestEnrolments_Signatures(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		requireProblem(t, h.do(req{method: http.MethodPost, path: "/v1/enrolments", noIdem: true}), http.StatusUnauthorized, "unauthorized")
		a := newAppliance(t)
		a.skew = 6 * time.Minute
		r := a.do(h, http.MethodPost, "/v1/enrolments", nil)
		requireProblem(t, r, http.StatusUnauthorized, "unauthorized")
		require.Contains(t, r.Body["detail"], "6m0s", "says how far off the clock is")
		a.skew = 0
		requireProblem(t, a.do(h, http.MethodGet, "/v1/enrolments/self", nil), http.StatusNotFound, "not_found")
		requireProblem(t, a.do(h, http.MethodPost, "/v1/enrolments", []byte(`{"x":1}`)), http.StatusUnprocessableEntity, "validation_failed")
		first := a.do(h, http.MethodPost, "/v1/enrolments", nil).Body["code"]
		second := a.do(h, http.MethodPost, "/v1/enrolments", nil).Body["code"]
		require.NotEqual(t, first, second)
		r = h.post("/v1/edges", map[string]any{"code": first, "site_id": london(h).ID})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.code")
	})
}

// Codes per client address are limited: the eleventh in a minute is
// rate_limited.
func TestEnrolments_AddressLimit(t *testing.T) {
	h := newHarness(t, stores[0].open, withBroker())
	for range httpapi.EnrolAddressLimit {
		a := newAppliance(t)
		require.Equal(t, http.StatusCreated, a.do(h, http.MethodPost, "/v1/enrolments", nil).Status)
	}
	r := newAppliance(t).do(h, http.MethodPost, "/v1/enrolments", nil)
	requireProblem(t, r, http.StatusTooManyRequests, "rate_limited")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
}

// Wrong codes lock the organisation's claims out; an expired code is
// invalid_state; a site with an appliance is conflict.
func TestEdges_ClaimRefusals(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		_, code := enrol(t, h)
		site := london(h).ID
		h.clock.Advance(cloud.EnrolmentTTL)
		r := h.post("/v1/edges", map[string]any{"code": code, "site_id": site})
		requireProblem(t, r, http.StatusConflict, "invalid_state", "body.code")
		require.Contains(t, r.Body["detail"], "expired")

		h.demoEdge(t)
		_, code = enrol(t, h)
		requireProblem(t, h.post("/v1/edges", map[string]any{"code": code, "site_id": site}), http.StatusConflict, "conflict", "body.site_id")

		for range cloud.ClaimAttempts - 1 { // the conflict above was not a wrong code
			requireProblem(t, h.post("/v1/edges", map[string]any{"code": "0000-0000", "site_id": site}),
				http.StatusUnprocessableEntity, "validation_failed", "body.code")
		}
		requireProblem(t, h.post("/v1/edges", map[string]any{"code": "banana", "site_id": site}),
			http.StatusUnprocessableEntity, "validation_failed", "body.code")
		r = h.post("/v1/edges", map[string]any{"code": code, "site_id": h.seed.Test.Sites[1].ID})
		requireProblem(t, r, http.StatusTooManyRequests, "rate_limited")
		require.Equal(t, "900", r.Header.Get("Retry-After"))
	})
}

// Publishable keys cannot see the fleet, keys without sites:read (a
// visits:read key) are refused, and another organisation's or mode's edge
// is not_found.
func TestEdges_Isolation(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		id := h.demoEdge(t)
		for _, path := range []string{"/v1/edges", "/v1/edges/" + id} {
			requireProblem(t, h.do(req{method: http.MethodGet, path: path, key: h.seed.Keys.PublishableTest}), http.StatusForbidden, "forbidden")
			r := h.do(req{method: http.MethodGet, path: path, key: newKey(t, h, cloud.ScopeVisitsRead)})
			requireProblem(t, r, http.StatusForbidden, "scope_missing")
			require.Contains(t, r.Body["detail"], "sites:read")
		}
		requireProblem(t, h.do(req{method: http.MethodPost, path: "/v1/edges/" + id + "/revoke", key: newKey(t, h, cloud.ScopeSitesRead)}),
			http.StatusForbidden, "scope_missing")
		live := h.do(req{method: http.MethodGet, path: "/v1/edges/" + id, key: h.seed.Keys.SecretLive})
		requireProblem(t, live, http.StatusNotFound, "not_found")
		require.Empty(t, data(t, h.do(req{method: http.MethodGet, path: "/v1/edges", key: h.seed.Keys.SecretLive})))
		other, err := cloud.NewService(h.store, h.clock.Now).Seed(t.Context(), "Other Org", cloud.PlanPro)
		require.NoError(t, err)
		for _, r := range []req{
			{method: http.MethodGet, path: "/v1/edges/" + id, key: other.Keys.SecretTest},
			{method: http.MethodPost, path: "/v1/edges/" + id + "/revoke", key: other.Keys.SecretTest},
		} {
			requireProblem(t, h.do(r), http.StatusNotFound, "not_found")
		}
		require.Equal(t, http.StatusOK, h.get("/v1/edges/"+id).Status, "not revoked by the other organisation")
		var e map[string]any
		require.NoError(t, json.Unmarshal(h.get("/v1/edges/"+id).Raw, &e))
		require.Nil(t, e["revoked_at"])
	})
}

// Revoking an edge fires edge.revoked once (a second revoke fires
// nothing), with the Edge as data, listed by GET /events and delivered to
// a webhook endpoint subscribed to it.
func TestEdges_RevokedEventDelivered(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		d := withHooks(t, h)
		r := newReceiver(t, 0)
		subscribe(t, h, r, "edge.revoked")
		id := h.demoEdge(t)
		require.Equal(t, http.StatusOK, h.post("/v1/edges/"+id+"/revoke", nil).Status)
		require.Equal(t, http.StatusOK, h.post("/v1/edges/"+id+"/revoke", nil).Status)
		events := data(t, h.get("/v1/events?type=edge.revoked"))
		require.Len(t, events, 1, "fired once")
		ev := events[0]
		body := ev["data"].(map[string]any)
		require.Equal(t, id, body["id"])
		require.Equal(t, "edge", body["object"])
		require.NotNil(t, body["revoked_at"])
		drain(t, d)
		_, ok, invalid := r.snapshot()
		require.Empty(t, invalid)
		require.Equal(t, map[string]int{ev["id"].(string): 1}, ok, "delivered once")
	})
}
