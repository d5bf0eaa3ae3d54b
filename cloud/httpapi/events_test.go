package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// events returns the harness's test-mode events, oldest first, with q
// (a query string) applied.
func events(t *testing.T, h *harness, q string) []map[string]any {
	t.Helper()
	rows := data(t, h.get("/v1/events?limit=100&"+q))
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows
}

// typesOf is the type of each event about object id, in order.
func typesOf(rows []map[string]any, id string) []string {
	var out []string
	for _, e := range rows {
		if e["data"].(map[string]any)["id"] == id {
			out = append(out, e["type"].(string))
		}
	}
	return out
}

// Each visit operation fires the spec's events, in order, each carrying the
// visit exactly as the API returned it at that moment.
func TestEvents_VisitLifeFiresTheNamedEvents(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, func(b map[string]any) { b["expected_at"] = "2026-11-21T09:00:00Z" }) // now
		id := v["id"].(string)
		in := action(h, id, "check-in", nil)
		require.Equal(t, http.StatusOK, in.Status, "%s", in.Raw)
		out := action(h, id, "check-out", nil)
		require.Equal(t, http.StatusOK, out.Status, "%s", out.Raw)
		re := action(h, id, "re-enter", nil)
		require.Equal(t, http.StatusCreated, re.Status, "%s", re.Raw)
		moved := createVisit(t, h, nil)
		r := action(h, moved["id"].(string), "reschedule", map[string]any{"expected_at": "2026-11-25T14:00:00Z"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		next := r.Body["rescheduled_to"].(map[string]any)["visit_id"].(string)

		rows := events(t, h, "")
		require.Equal(t, []string{"visit.created", "pass.sent", "visit.checked_in", "visit.checked_out"}, typesOf(rows, id),
			"the source visit: created with its pass sent, checked in and out; the re-entry changes nothing the API shows of it")
		require.Equal(t, []string{"visit.created", "visit.checked_in"}, typesOf(rows, re.Body["id"].(string)), "re-enter")
		require.Equal(t, []string{"visit.created", "pass.sent", "visit.cancelled", "pass.revoked"}, typesOf(rows, moved["id"].(string)),
			"reschedule closes the visit")
		require.Equal(t, []string{"visit.created", "pass.sent"}, typesOf(rows, next), "and creates the new one")

		byType := map[string]map[string]any{}
		for _, e := range rows {
			if e["data"].(map[string]any)["id"] == id {
				byType[e["type"].(string)] = e
			}
		}
		require.Equal(t, v, byType["visit.created"]["data"], "visit.created carries the visit as POST returned it")
		require.Equal(t, in.Body, byType["visit.checked_in"]["data"], "visit.checked_in carries the visit as check-in returned it")
		require.Equal(t, out.Body, byType["visit.checked_out"]["data"])

		e := byType["visit.checked_in"]
		require.Regexp(t, `^evt_[0-7][0-9a-hjkmnp-tv-z]{25}$`, e["id"])
		require.Equal(t, "event", e["object"])
		require.Equal(t, "test", e["mode"])
		require.Equal(t, h.seed.Organisation.ID, e["organisation_id"])
		require.Regexp(t, `^req_`, e["request_id"], "the request that checked the visit in")
		require.Equal(t, in.Header.Get("Svc-Request-Id"), e["request_id"])
		require.Equal(t, in.Body["checked_in_at"], e["created_at"])

		got := h.get("/v1/events/" + e["id"].(string))
		require.Equal(t, http.StatusOK, got.Status, "%s", got.Raw)
		require.Equal(t, e, got.Body)
	})
}

// Sensitive and masked answers never appear in an event, though the visit
// keeps them.
func TestEvents_NeverCarrySensitiveAnswers(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		v := createVisit(t, h, func(b map[string]any) {
			b["type"] = "site_tour"
			b["custom_fields"] = map[string]any{"company": "Acme", "id_number": "X123-SECRET", "nda": true}
		})
		id := v["id"].(string)
		r := h.patch("/v1/visits/"+id, map[string]any{"purpose": "Audit", "custom_fields": map[string]any{"company": "Beta", "id_number": "Y9-SECRET", "nda": true}})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, http.StatusOK, action(h, id, "cancel", nil).Status)
		raw := h.get("/v1/events?limit=100")
		require.Equal(t, http.StatusOK, raw.Status)
		require.NotContains(t, string(raw.Raw), "SECRET")
		require.Equal(t, []string{"visit.created", "pass.sent", "visit.updated", "visit.cancelled"}, typesOf(events(t, h, ""), id))
		for _, e := range events(t, h, "") {
			fields := e["data"].(map[string]any)["custom_fields"].(map[string]any)
			require.NotContains(t, fields, "id_number")
		}
	})
}

// person.reactivated carries the same Person object as person.deactivated;
// visitor.erased carries no personal data.
func TestEvents_PeopleAndErasure(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		p := h.post("/v1/people", map[string]any{"name": "Pat Person", "email": "pat@example.org"})
		require.Equal(t, http.StatusCreated, p.Status, "%s", p.Raw)
		pid := p.Body["id"].(string)
		off := h.post("/v1/people/"+pid+"/deactivate", nil)
		require.Equal(t, http.StatusOK, off.Status, "%s", off.Raw)
		on := h.post("/v1/people/"+pid+"/reactivate", nil)
		require.Equal(t, http.StatusOK, on.Status, "%s", on.Raw)
		rows := events(t, h, "")
		require.Equal(t, []string{"person.created", "person.deactivated", "person.reactivated"}, typesOf(rows, pid))
		var deact, react map[string]any
		for _, e := range rows {
			switch e["type"] {
			case "person.deactivated":
				deact = e["data"].(map[string]any)
			case "person.reactivated":
				react = e["data"].(map[string]any)
			}
		}
		require.Equal(t, off.Body, deact)
		require.Equal(t, on.Body, react)
		keys := func(m map[string]any) []string {
			var out []string
			for k := range m {
				out = append(out, k)
			}
			return out
		}
		require.ElementsMatch(t, keys(deact), keys(react), "the same Person object")

		v := createVisit(t, h, nil)
		vid := v["visitor"].(map[string]any)["id"].(string)
		require.Equal(t, http.StatusNoContent, h.do(req{method: http.MethodDelete, path: "/v1/visitors/" + vid, key: h.seed.Keys.SecretTest}).Status)
		erased := events(t, h, "type=visitor.erased")
		require.Len(t, erased, 1)
		d := erased[0]["data"].(map[string]any)
		require.Equal(t, vid, d["id"])
		require.Equal(t, "visitor", d["object"])
		require.Contains(t, d, "erased_at")
		require.Len(t, d, 3, "nothing else: %v", d)
		all := h.get("/v1/events?limit=100&type=visitor.erased")
		for _, personal := range []string{"Vera", "vera@example.org", "+447700900123"} {
			require.NotContains(t, string(all.Raw), personal)
		}
	})
}

func TestEvents_FiltersPagingAndErrors(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		a := createVisit(t, h, nil)["id"].(string)
		h.clock.Advance(60 * 60 * 1e9)
		b := createVisit(t, h, nil)["id"].(string)
		require.Equal(t, []string{b, a}, dataIDs(t, h, "type=visit.created"), "newest first")
		require.Equal(t, []string{b}, dataIDs(t, h, "type=visit.created&created_from=2026-11-21T09:30:00Z"))
		require.Equal(t, []string{a}, dataIDs(t, h, "type=visit.created&created_before=2026-11-21T09:30:00Z"))

		page := h.get("/v1/events?limit=1")
		require.Equal(t, http.StatusOK, page.Status)
		require.Equal(t, true, page.Body["has_more"])
		next := h.get("/v1/events?limit=1&cursor=" + page.Body["next_cursor"].(string))
		require.Equal(t, http.StatusOK, next.Status, "%s", next.Raw)
		require.NotEqual(t, page.Body["data"], next.Body["data"])

		for q, loc := range map[string]string{"type=visit.exploded": "query.type", "created_from=soon": "query.created_from",
			"created_from=2026-11-21T10:00:00Z&created_before=2026-11-21T09:00:00Z": "query.created_before", "colour=red": "query.colour"} {
			requireProblem(t, h.get("/v1/events?"+q), http.StatusUnprocessableEntity, "validation_failed", loc)
		}
		requireProblem(t, h.get("/v1/events/evt_123"), http.StatusUnprocessableEntity, "validation_failed", "path.event_id")
		requireProblem(t, h.get("/v1/events/evt_01jc0000000000000000000000"), http.StatusNotFound, "not_found")
		live := h.do(req{method: http.MethodGet, path: "/v1/events", key: h.seed.Keys.SecretLive})
		require.Equal(t, http.StatusOK, live.Status, "%s", live.Raw)
		require.Empty(t, live.Body["data"], "test mode's events are not live mode's")
	})
}

func dataIDs(t *testing.T, h *harness, q string) []string {
	t.Helper()
	var out []string
	for _, e := range data(t, h.get("/v1/events?"+q)) {
		out = append(out, e["data"].(map[string]any)["id"].(string))
	}
	return out
}

// Reading events in live mode needs Growth or above; test mode works on
// every plan.
func TestEvents_PlanRule(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		for plan, live := range map[cloud.Plan]int{cloud.PlanFree: http.StatusForbidden, cloud.PlanGrowth: http.StatusOK} {
			h := newHarness(t, open, withPlan(plan))
			r := h.do(req{method: http.MethodGet, path: "/v1/events", key: h.seed.Keys.SecretLive})
			if live == http.StatusForbidden {
				requireProblem(t, r, http.StatusForbidden, "plan_required")
			} else {
				require.Equal(t, live, r.Status, "%s: %s", plan, r.Raw)
			}
			require.Equal(t, http.StatusOK, h.get("/v1/events").Status, "test mode on %s", plan)
		}
	})
}

// Erasing a visitor takes their personal data out of the earlier events
// of their visits too, and out of webhook deliveries still to be sent:
// the events stay, with what the visits show after the erasure.
func TestEvents_ErasureScrubsEarlierEvents(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		r := newReceiver(t, 0)
		subscribe(t, h, r, "visit.created")
		v := createVisit(t, h, func(b map[string]any) { b["purpose"] = "Vera's secret project" })
		id := v["id"].(string)
		r2 := h.patch("/v1/visits/"+id, map[string]any{"purpose": "Vera again"})
		require.Equal(t, http.StatusOK, r2.Status, "%s", r2.Raw)
		createVisit(t, h, func(b map[string]any) {
			b["visitor"] = map[string]any{"name": "Olga Other", "email": "olga@example.org"}
		})
		before := events(t, h, "")
		require.Contains(t, string(h.get("/v1/events?limit=100").Raw), "vera@example.org")

		vid := v["visitor"].(map[string]any)["id"].(string)
		require.Equal(t, http.StatusNoContent, h.do(req{method: http.MethodDelete, path: "/v1/visitors/" + vid, key: h.seed.Keys.SecretTest}).Status)
		all := h.get("/v1/events?limit=100")
		for _, personal := range []string{"Vera", "vera@example.org", "+447700900123", "secret project"} {
			require.NotContains(t, string(all.Raw), personal)
		}
		require.Contains(t, string(all.Raw), "olga@example.org", "another visitor's events keep their data")
		after := events(t, h, "")
		require.Len(t, after, len(before)+1, "every event stays; visitor.erased is added")
		require.Equal(t, []string{"visit.created", "pass.sent", "visit.updated"}, typesOf(after, id))
		created := after[0]["data"].(map[string]any)
		require.Equal(t, "expected", created["status"], "what is not personal stays as it was")
		require.Equal(t, v["created_at"], created["created_at"])

		require.Equal(t, 2, drain(t, d))
		_, ok, invalid := r.snapshot()
		require.Empty(t, invalid)
		require.Len(t, ok, 2)
		for eid := range ok {
			require.NotContains(t, string(r.bodies[eid]), "vera@example.org", "the pending delivery sends the scrubbed event")
		}
	})
}
