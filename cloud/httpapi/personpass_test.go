package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passtoken"
)

// newPerson creates a person through the API and returns their body.
func newPerson(t *testing.T, h *harness, name string) map[string]any {
	t.Helper()
	r := h.post("/v1/people", map[string]any{"name": name})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.Body
}

// verifyPersonPass checks the token is a personal pass of the test tenant
// and returns its claims.
func verifyPersonPass(t *testing.T, h *harness, token string) passtoken.PersonClaims {
	t.Helper()
	keys, err := h.svc.PassKeySet(context.Background(), h.testTenant())
	require.NoError(t, err)
	c, err := passtoken.VerifyPerson(token, keys)
	require.NoError(t, err, "the token is a personal pass signed by the organisation's key")
	return c
}

// A person has a pass from their creation: its token names them and the
// issue time the person shows as pass_issued_at, a whole second.
func TestPersonPass_Shape(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		h.clock.Advance(1500 * time.Millisecond)
		p := newPerson(t, h, "Ada Lovelace")
		id := p["id"].(string)
		require.Equal(t, "2026-11-21T09:00:01.000Z", p["pass_issued_at"], "the creation time, cut to the second")
		require.Equal(t, "2026-11-21T09:00:01.500Z", p["created_at"])

		r := h.get("/v1/people/" + id + "/pass")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		require.Len(t, r.Body, 3, "person_id, token, issued_at: %s", r.Raw)
		require.Equal(t, id, r.Body["person_id"])
		require.Equal(t, p["pass_issued_at"], r.Body["issued_at"])
		tok := r.Body["token"].(string)
		require.True(t, strings.HasPrefix(tok, passtoken.PersonPrefix), tok)
		require.Len(t, tok, passtoken.PersonLen)
		c := verifyPersonPass(t, h, tok)
		require.Equal(t, id, c.PersonID)
		require.Equal(t, time.Date(2026, 11, 21, 9, 0, 1, 0, time.UTC), c.IssuedAt)

		got := h.get("/v1/people/" + id)
		require.Equal(t, p["pass_issued_at"], got.Body["pass_issued_at"])
		for _, row := range data(t, h.get("/v1/people?limit=100")) {
			require.Contains(t, row, "pass_issued_at", "every person in a list shows it")
		}
	})
}

// The token depends only on the person's issue time (and the
// organisation's key): asking twice gives the same pass.
func TestPersonPass_SameTokenTwice(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		id := newPerson(t, h, "Grace Hopper")["id"].(string)
		first := h.get("/v1/people/" + id + "/pass")
		require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
		h.clock.Advance(3 * time.Hour)
		second := h.get("/v1/people/" + id + "/pass")
		require.Equal(t, http.StatusOK, second.Status, "%s", second.Raw)
		require.Equal(t, first.Body, second.Body)
	})
}

// A reissue gives a new token with a later issue time, which GET /pass
// and the person then show; the person's person.updated event fires; the
// POST replays under its Idempotency-Key.
func TestPersonPass_ReissueChangesIt(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		id := newPerson(t, h, "Alan Turing")["id"].(string)
		old := h.get("/v1/people/" + id + "/pass").Body
		h.clock.Advance(10*time.Minute + 250*time.Millisecond)

		idem := uuid()
		r := h.do(req{method: http.MethodPost, path: "/v1/people/" + id + "/reissue-pass", key: h.seed.Keys.SecretTest,
			header: map[string]string{"Idempotency-Key": idem}})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, id, r.Body["person_id"])
		require.NotEqual(t, old["token"], r.Body["token"])
		require.Equal(t, "2026-11-21T09:10:00.000Z", r.Body["issued_at"])
		c := verifyPersonPass(t, h, r.Body["token"].(string))
		require.Equal(t, time.Date(2026, 11, 21, 9, 10, 0, 0, time.UTC), c.IssuedAt)

		again := h.do(req{method: http.MethodPost, path: "/v1/people/" + id + "/reissue-pass", key: h.seed.Keys.SecretTest,
			header: map[string]string{"Idempotency-Key": idem}})
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Equal(t, r.Body, again.Body, "a replay, not a second reissue")

		now := h.get("/v1/people/" + id + "/pass")
		require.Equal(t, r.Body, now.Body, "the pass shown is the new one")
		require.Equal(t, r.Body["issued_at"], h.get("/v1/people/" + id).Body["pass_issued_at"])

		events := data(t, h.get("/v1/events?type=person.updated"))
		require.NotEmpty(t, events)
		require.Equal(t, id, events[0]["data"].(map[string]any)["id"])
		require.Equal(t, r.Body["issued_at"], events[0]["data"].(map[string]any)["pass_issued_at"])

		// A second reissue in the same second still moves the time on.
		r2 := h.post("/v1/people/"+id+"/reissue-pass", map[string]any{})
		require.Equal(t, http.StatusOK, r2.Status, "%s", r2.Raw)
		require.Equal(t, "2026-11-21T09:10:01.000Z", r2.Body["issued_at"])
		require.NotEqual(t, r.Body["token"], r2.Body["token"])

		bad := h.post("/v1/people/"+id+"/reissue-pass", map[string]any{"reason": "lost"})
		requireProblem(t, bad, http.StatusUnprocessableEntity, "validation_failed", "body.reason")
	})
}

// pass.png is a QR code of exactly the token GET /pass returns.
func TestPersonPass_PNGDecodesToItsToken(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		id := newPerson(t, h, "Hedy Lamarr")["id"].(string)
		r := h.get("/v1/people/" + id + "/pass.png")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "image/png", r.Header.Get("Content-Type"))
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		want := h.get("/v1/people/" + id + "/pass").Body["token"]
		require.Equal(t, want, decodeQR(t, r.Raw), "the QR code holds exactly the token")
		t.Run("zbarimg reads the same token", func(t *testing.T) {
			require.Equal(t, want, zbarimg(t, r.Raw))
		})
	})
}

// A deactivated person's pass does not work: showing or reissuing it is
// invalid_state; reactivated, the same pass works again.
func TestPersonPass_DeactivatedIsInvalidState(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		id := newPerson(t, h, "Katherine Johnson")["id"].(string)
		before := h.get("/v1/people/" + id + "/pass").Body
		require.Equal(t, http.StatusOK, h.post("/v1/people/"+id+"/deactivate", nil).Status)

		for _, r := range []response{
			h.get("/v1/people/" + id + "/pass"),
			h.get("/v1/people/" + id + "/pass.png"),
			h.post("/v1/people/"+id+"/reissue-pass", nil),
		} {
			requireProblem(t, r, http.StatusConflict, "invalid_state")
			require.Contains(t, r.Body["detail"], "inactive")
		}
		require.Equal(t, http.StatusOK, h.post("/v1/people/"+id+"/reactivate", nil).Status)
		require.Equal(t, before, h.get("/v1/people/"+id+"/pass").Body, "the pass is as it was")
	})
}

// An unknown person, another mode's person and a malformed ID.
func TestPersonPass_NotFound(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		live := h.seed.Live.People[0]
		for _, id := range []string{ids.New(ids.Person), live} {
			requireProblem(t, h.get("/v1/people/"+id+"/pass"), http.StatusNotFound, "not_found")
			requireProblem(t, h.get("/v1/people/"+id+"/pass.png"), http.StatusNotFound, "not_found")
			requireProblem(t, h.post("/v1/people/"+id+"/reissue-pass", nil), http.StatusNotFound, "not_found")
		}
		for _, path := range []string{"/v1/people/visit_01jd0m7x2kc8d7e6f5g4h3j2k1/pass", "/v1/people/person_123/pass.png"} {
			requireProblem(t, h.get(path), http.StatusUnprocessableEntity, "validation_failed", "path.person_id")
		}
		requireProblem(t, h.get("/v1/people/"+h.seed.Test.People[0]+"/pass?format=svg"), http.StatusUnprocessableEntity,
			"validation_failed", "query.format")
	})
}

// Reading a pass and reissuing it both need people:write: a pass opens
// doors, so people:read does not show it (TestScopes_PassesNeedAWriteScope).
func TestPersonPass_ScopeMissing(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		id := h.seed.Test.People[0]
		_, readOnly, err := h.svc.CreateKey(context.Background(), h.testTenant(), cloud.KindSecret, []cloud.Scope{cloud.ScopePeopleRead})
		require.NoError(t, err)
		for _, r := range []response{
			h.do(req{method: http.MethodGet, path: "/v1/people/" + id + "/pass", key: readOnly}),
			h.do(req{method: http.MethodGet, path: "/v1/people/" + id + "/pass.png", key: readOnly}),
			h.do(req{method: http.MethodPost, path: "/v1/people/" + id + "/reissue-pass", key: readOnly}),
		} {
			requireProblem(t, r, http.StatusForbidden, "scope_missing")
			require.Contains(t, r.Body["detail"], "people:write")
		}
		r := h.do(req{method: http.MethodGet, path: "/v1/people/" + id + "/pass", key: h.seed.Keys.PublishableTest})
		requireProblem(t, r, http.StatusForbidden, "forbidden")
	})
}
