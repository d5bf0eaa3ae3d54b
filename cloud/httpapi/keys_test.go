package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Tests of docs/decisions.md, "Keys, scopes and what a publishable key may
// see (issue 15)".

// vera is the visitor visitBody invites: what the organisation holds about
// her once a secret key has invited her.
var vera = struct{ name, email, phone, company string }{"Vera Visitor", "vera@example.org", "+447700900123", "Acme"}

// requireNoVera fails when raw shows anything the organisation holds about
// vera beyond what the caller sent (sent lists the values it did send).
func requireNoVera(t *testing.T, raw []byte, sent ...string) {
	t.Helper()
	rest := strings.ToLower(string(raw))
	for _, s := range sent {
		rest = strings.ReplaceAll(rest, strings.ToLower(s), "")
	}
	for _, v := range []string{"vera", vera.email, vera.phone, vera.company} {
		require.NotContains(t, rest, strings.ToLower(v), "nothing stored about vera that was not sent: %s", raw)
	}
}

// requireSentOnlyTo checks every message about the visit went to to, and
// that none names vera.
func requireSentOnlyTo(t *testing.T, h *harness, visitID, to string) {
	t.Helper()
	msgs := messagesOf(t, h, visitID)
	require.NotEmpty(t, msgs, "the pass went out")
	for _, m := range msgs {
		require.Equal(t, to, m["to"], "only to the contact given: %v", m)
		require.NotContains(t, m["body"], "Vera", "the message greets whom the caller named")
	}
}

// A publishable key that gives only an existing visitor's email, or only
// their phone, gets back what it sent and a visitor ID of its own, and the
// pass goes to what it gave, not to what the organisation holds.
func TestPublishable_PreRegistrationShowsOnlyWhatItSent(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		pk := h.seed.Keys.PublishableTest
		invited := createVisit(t, h, nil) // vera, by a secret key
		veraID := invited["visitor"].(map[string]any)["id"].(string)

		for _, c := range []struct {
			name, field, value, channel string
		}{
			{"email only", "email", "VERA@example.org", "email"},
			{"phone only", "phone", vera.phone, "sms"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := h.do(req{method: http.MethodPost, path: "/v1/visits", key: pk, body: visitBody(h, func(b map[string]any) {
					b["visitor"] = map[string]any{"name": "Mallory", c.field: c.value}
				})})
				require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
				requireNoVera(t, r.Raw, c.value)
				got := r.Body["visitor"].(map[string]any)
				want := map[string]any{"id": got["id"], "name": "Mallory", "email": nil, "phone": nil, "company": nil}
				want[c.field] = c.value
				require.Equal(t, want, got, "the visitor is exactly what was sent")
				require.NotEqual(t, veraID, got["id"], "a visitor ID of its own: an old one would tell vera is known, and since when")
				require.Equal(t, []any{c.channel}, r.Body["pass"].(map[string]any)["channels"])
				for _, host := range r.Body["hosts"].([]any) {
					require.Empty(t, host.(map[string]any)["name"], "a publishable key reads no names of people")
				}
				requireSentOnlyTo(t, h, r.Body["id"].(string), c.value)
			})
		}

		t.Run("approved later: the pass still goes only where the caller said", func(t *testing.T) {
			r := h.do(req{method: http.MethodPost, path: "/v1/visits", key: pk, body: visitBody(h, func(b map[string]any) {
				b["type"] = "site_tour"
				b["visitor"] = map[string]any{"name": "Mallory", "email": vera.email}
			})})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			requireNoVera(t, r.Raw, vera.email)
			id := r.Body["id"].(string)
			require.Equal(t, http.StatusOK, action(h, id, "approve", nil).Status)
			requireSentOnlyTo(t, h, id, vera.email)
			require.Equal(t, http.StatusOK, action(h, id, "resend-pass", nil).Status)
			requireSentOnlyTo(t, h, id, vera.email)
		})

		t.Run("a secret key still finds vera's own record, not one a publishable key made", func(t *testing.T) {
			v := createVisit(t, h, func(b map[string]any) {
				b["visitor"] = map[string]any{"name": "V. Visitor", "email": vera.email}
			})
			got := v["visitor"].(map[string]any)
			require.Equal(t, veraID, got["id"])
			require.Equal(t, vera.name, got["name"])
			require.Equal(t, vera.phone, got["phone"])
		})
	})
}

// The same for bookings: confirmed at once, or pending and confirmed later.
func TestPublishable_BookingShowsOnlyWhatItSent(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		pk := h.seed.Keys.PublishableTest
		createVisit(t, h, nil) // vera, by a secret key
		for _, confirm := range []bool{false, true} {
			bt := createBookingType(t, h, func(b map[string]any) { b["requires_confirmation"] = confirm })
			r := h.do(req{method: http.MethodPost, path: "/v1/bookings", key: pk, body: bookingBody(bt["id"].(string), monday9,
				func(b map[string]any) { b["visitor"] = map[string]any{"name": "Mallory", "email": vera.email} })})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			requireNoVera(t, r.Raw, vera.email)
			require.Equal(t, map[string]any{"id": r.Body["visitor"].(map[string]any)["id"], "name": "Mallory", "email": vera.email,
				"phone": nil, "company": nil}, r.Body["visitor"])
			visitID, _ := r.Body["visit_id"].(string)
			if confirm {
				c := bookingAction(h, r.Body["id"].(string), "confirm", nil)
				require.Equal(t, http.StatusOK, c.Status, "%s", c.Raw)
				visitID = c.Body["visit_id"].(string)
			}
			requireSentOnlyTo(t, h, visitID, vera.email)
		}
	})
}

// A host who invited vera can replace her visit with a slot she booked
// herself through a publishable key: her own booking has a record of its
// own, and is still hers by its address.
func TestReschedule_ToABookingTheVisitorMadeThemselves(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, nil)
		v := createVisit(t, h, nil)
		r := h.do(req{method: http.MethodPost, path: "/v1/bookings", key: h.seed.Keys.PublishableTest, body: bookingBody(bt["id"].(string), monday9,
			func(b map[string]any) { b["visitor"] = map[string]any{"name": "Vera", "email": "VERA@example.org"} })})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		moved := action(h, v["id"].(string), "reschedule", map[string]any{"booking_id": r.Body["id"]})
		require.Equal(t, http.StatusOK, moved.Status, "%s", moved.Raw)
		require.Equal(t, r.Body["id"], moved.Body["rescheduled_to"].(map[string]any)["booking_id"])
	})
}

// errorMessage is the one problem a 422 at location carries.
func errorMessage(t *testing.T, r response, location string) string {
	t.Helper()
	requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", location)
	return r.Body["errors"].([]any)[0].(map[string]any)["message"].(string)
}

// A host, team, visit type or booking type a publishable key cannot use is
// refused exactly as one that does not exist: the answer tells nothing of
// what the organisation holds (a deactivated person's name, an archived
// team, a closed type).
func TestPublishable_ErrorsTellNothingStored(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		pk := h.seed.Keys.PublishableTest
		previsit := func(change func(map[string]any)) response {
			return h.do(req{method: http.MethodPost, path: "/v1/visits", key: pk, body: visitBody(h, change)})
		}

		person := h.post("/v1/people", map[string]any{"name": "Dora Departed"}).Body["id"].(string)
		require.Equal(t, http.StatusOK, h.post("/v1/people/"+person+"/deactivate", nil).Status)
		unknown := errorMessage(t, previsit(func(b map[string]any) { b["host_id"] = ids.New(ids.Person) }), "body.host_id")
		got := errorMessage(t, previsit(func(b map[string]any) { b["host_id"] = person }), "body.host_id")
		require.Equal(t, unknown, got)
		require.NotContains(t, got, "Dora")

		noTeam := func(b map[string]any) { delete(b, "host_id"); b["team_id"] = ids.New(ids.Team) }
		unknown = errorMessage(t, previsit(noTeam), "body.team_id")
		closed := h.post("/v1/teams", map[string]any{"name": "Closed", "visitors_can_choose": false}).Body["id"].(string)
		archived := h.post("/v1/teams", map[string]any{"name": "Gone"}).Body["id"].(string)
		require.Equal(t, http.StatusOK, h.patch("/v1/teams/"+archived, map[string]any{"archived": true}).Status)
		for _, team := range []string{closed, archived} {
			require.Equal(t, unknown, errorMessage(t, previsit(func(b map[string]any) { delete(b, "host_id"); b["team_id"] = team }), "body.team_id"))
		}

		putTour(t, h, func(vt *cloud.VisitType) { vt.Key, vt.Enabled = "off_tour", false })
		unknown = errorMessage(t, previsit(func(b map[string]any) { b["type"] = "no_such_type" }), "body.type")
		for _, key := range []string{"delivery", "off_tour"} { // closed to pre-registration, turned off
			require.Equal(t, strings.Replace(unknown, "no_such_type", key, 1),
				errorMessage(t, previsit(func(b map[string]any) { b["type"] = key }), "body.type"))
		}

		bt := createBookingType(t, h, nil)
		require.Equal(t, http.StatusOK, h.patch("/v1/booking-types/"+bt["id"].(string), map[string]any{"archived": true}).Status)
		book := func(id string) response {
			return h.do(req{method: http.MethodPost, path: "/v1/bookings", key: pk, body: bookingBody(id, monday9, nil)})
		}
		require.Equal(t, errorMessage(t, book(ids.New(ids.BookingType)), "body.booking_type_id"),
			errorMessage(t, book(bt["id"].(string)), "body.booking_type_id"), "an archived type is one it cannot read")
	})
}

// A response is replayed only to the key it answered: a publishable key
// sending a secret key's Idempotency-Key and body does not get the secret
// key's answer.
func TestIdempotency_ReplayedOnlyToTheSameKey(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		key := uuid()
		send := func(apiKey string) response {
			return h.do(req{method: http.MethodPost, path: "/v1/visits", key: apiKey, body: visitBody(h, nil),
				header: map[string]string{"Idempotency-Key": key}})
		}
		first := send(h.seed.Keys.SecretTest)
		require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
		r := send(h.seed.Keys.PublishableTest)
		requireProblem(t, r, http.StatusUnprocessableEntity, "idempotency_key_reused")
		require.Empty(t, r.Header.Get("Idempotent-Replayed"))
		require.NotContains(t, string(r.Raw), first.Body["id"].(string))
		again := send(h.seed.Keys.SecretTest)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "the key that made it still gets its replay")
		require.Equal(t, first.Raw, again.Raw)
	})
}
