package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// messagesOf returns the outbox messages of a visit, newest first.
func messagesOf(t *testing.T, h *harness, visitID string) []map[string]any {
	t.Helper()
	return data(t, h.get("/v1/messages?limit=100&visit_id="+visitID))
}

// deskVisit is a visit for no one in particular at the first site.
func deskVisit(t *testing.T, h *harness) map[string]any {
	t.Helper()
	return createVisit(t, h, func(b map[string]any) { delete(b, "host_id") })
}

// The spec's two reschedule rows of the transition table and the row
// refusing every other status.
func TestVisits_TransitionTableReschedule(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		h.at(time.Date(2026, 11, 22, 9, 50, 0, 0, time.UTC))
		later := map[string]any{"expected_at": "2026-11-24T15:00:00Z"}

		t.Run("expected, reschedule: cancelled, rescheduled_to set, pass stops, new visit", func(t *testing.T) {
			v := createVisit(t, h, nil)
			id := v["id"].(string)
			r := action(h, id, "reschedule", later)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			require.Equal(t, "cancelled", r.Body["status"])
			require.Equal(t, "2026-11-22T09:50:00.000Z", r.Body["cancelled_at"])
			to := r.Body["rescheduled_to"].(map[string]any)
			require.Equal(t, "2026-11-22T09:50:00.000Z", to["at"])
			require.Nil(t, to["booking_id"])
			next := h.get("/v1/visits/" + to["visit_id"].(string))
			require.Equal(t, http.StatusOK, next.Status)
			require.Equal(t, "expected", next.Body["status"])
			requireProblem(t, action(h, id, "check-in", map[string]any{"override_pass_rules": true}),
				http.StatusConflict, "invalid_state", "pass_rule.ended")
		})
		t.Run("awaiting_approval, reschedule: cancelled, as the row above", func(t *testing.T) {
			r := h.do(req{method: http.MethodPost, path: "/v1/visits", key: h.seed.Keys.PublishableTest,
				body: visitBody(h, func(b map[string]any) { b["type"] = "site_tour" })})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			require.Equal(t, "awaiting_approval", r.Body["status"])
			id := r.Body["id"].(string)
			r = action(h, id, "reschedule", later)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			require.Equal(t, "cancelled", r.Body["status"])
			require.NotNil(t, r.Body["rescheduled_to"].(map[string]any)["visit_id"])
		})
		for _, st := range []struct {
			status string
			reach  func(id string)
		}{
			{"checked_in", func(id string) { require.Equal(t, http.StatusOK, action(h, id, "check-in", nil).Status) }},
			{"checked_out", func(id string) {
				require.Equal(t, http.StatusOK, action(h, id, "check-in", nil).Status)
				require.Equal(t, http.StatusOK, action(h, id, "check-out", nil).Status)
			}},
			{"cancelled", func(id string) { require.Equal(t, http.StatusOK, action(h, id, "cancel", nil).Status) }},
		} {
			t.Run(st.status+", reschedule: unchanged, invalid_state with the status", func(t *testing.T) {
				id := createVisit(t, h, nil)["id"].(string)
				st.reach(id)
				r := action(h, id, "reschedule", later)
				requireProblem(t, r, http.StatusConflict, "invalid_state")
				require.Contains(t, r.Body["detail"], st.status)
				got := h.get("/v1/visits/" + id).Body
				require.Equal(t, st.status, got["status"])
				require.Nil(t, got["rescheduled_to"])
			})
		}
	})
}

func TestReschedule_NewInvitationForTheSameVisitorAndType(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		people := h.seed.Test.People
		v := createVisit(t, h, func(b map[string]any) {
			delete(b, "host_id")
			b["host_ids"] = []string{people[0], people[1]}
			b["purpose"] = "Budget review"
			b["type"] = "interview"
		})
		id := v["id"].(string)
		r := action(h, id, "reschedule", map[string]any{"expected_at": "2026-11-25T14:00:00Z", "note": "Host is ill"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		newID := r.Body["rescheduled_to"].(map[string]any)["visit_id"].(string)
		require.NotEqual(t, id, newID)

		n := h.get("/v1/visits/" + newID).Body
		require.Equal(t, "expected", n["status"])
		require.Equal(t, "invitation", n["source"])
		require.Equal(t, "interview", n["type"], "same visit type")
		require.Equal(t, v["visitor"].(map[string]any)["id"], n["visitor"].(map[string]any)["id"], "same visitor")
		require.Equal(t, "Budget review", n["purpose"])
		require.Equal(t, "2026-11-25T14:00:00.000Z", n["expected_at"])
		require.Equal(t, "2026-11-25T23:59:59.999Z", n["expected_until"], "the end of that day in London")
		require.Equal(t, people[0], n["host_id"], "whoever the visit was for")
		require.Len(t, n["hosts"], 2)
		require.Equal(t, "people", n["audience"])
		require.Equal(t, newID, n["pass"].(map[string]any)["for_visit_id"])
		require.Equal(t, []any{"email", "sms"}, n["pass"].(map[string]any)["channels"], "send_pass defaults to true")

		var toVisitor, toHosts []string
		for _, m := range messagesOf(t, h, newID) {
			if m["to"] == "vera@example.org" || m["to"] == "+447700900123" {
				toVisitor = append(toVisitor, m["channel"].(string))
			} else {
				toHosts = append(toHosts, m["to"].(string))
			}
		}
		require.ElementsMatch(t, []string{"email", "sms"}, toVisitor, "the pass for the new time")
		require.ElementsMatch(t, []string{"person01@example.com", "person02@example.com"}, toHosts, "the new visit's hosts are told")

		old := h.get("/v1/visits/" + id)
		requireProblem(t, h.get("/v1/visits/"+id+"/pass.png"), http.StatusConflict, "invalid_state")
		require.Equal(t, "cancelled", old.Body["status"])
	})
}

func TestReschedule_HostsTimesAndPass(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		people, teams := h.seed.Test.People, h.seed.Test.Teams
		resched := func(body map[string]any) map[string]any {
			t.Helper()
			id := createVisit(t, h, nil)["id"].(string)
			r := action(h, id, "reschedule", body)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			return h.get("/v1/visits/" + r.Body["rescheduled_to"].(map[string]any)["visit_id"].(string)).Body
		}
		n := resched(map[string]any{"expected_at": "2026-11-25T14:00:00Z", "host_id": people[2]})
		require.Equal(t, people[2], n["host_id"])
		require.Len(t, n["hosts"], 1)

		n = resched(map[string]any{"expected_at": "2026-11-25T14:00:00Z", "team_id": teams[1]})
		require.Nil(t, n["host_id"])
		require.Equal(t, "team", n["audience"])
		require.Equal(t, teams[1], n["team"].(map[string]any)["id"])

		n = resched(map[string]any{"expected_at": "2026-11-25T14:00:00Z", "expected_until": "2026-11-26T12:00:00Z",
			"purpose": "Second try", "send_pass": false})
		require.Equal(t, "2026-11-26T12:00:00.000Z", n["expected_until"])
		require.Equal(t, "Second try", n["purpose"])
		require.Nil(t, n["pass"].(map[string]any)["last_sent_at"], "send_pass false sends nothing")
		require.Equal(t, []any{}, n["pass"].(map[string]any)["channels"])

		n = resched(map[string]any{"expected_at": "2026-11-25T14:00:00Z", "pass_channels": []string{"sms"}})
		require.Equal(t, []any{"sms"}, n["pass"].(map[string]any)["channels"])

		id := createVisit(t, h, nil)["id"].(string)
		for _, tc := range []struct {
			body map[string]any
			locs []string
		}{
			{map[string]any{"expected_at": "2026-11-25T14:00:00Z", "expected_until": "2026-11-25T13:00:00Z"}, []string{"body.expected_until"}},
			{map[string]any{"expected_at": "2026-11-25T14:00:00Z", "note": strings.Repeat("n", 501)}, []string{"body.note"}},
			{map[string]any{"expected_at": "2026-11-25T14:00:00Z", "purpose": strings.Repeat("p", 301)}, []string{"body.purpose"}},
			{map[string]any{"expected_at": "2026-11-25T14:00:00Z", "pass_channels": []string{}}, []string{"body.pass_channels"}},
			{map[string]any{"expected_at": "2026-11-25T14:00:00Z", "host_id": people[6]}, []string{"body.host_id"}},
			{map[string]any{"expected_at": "2026-11-25T14:00:00Z", "host_ids": make([]string, 11)}, []string{"body.host_ids"}},
		} {
			r := action(h, id, "reschedule", tc.body)
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", tc.locs...)
		}
		require.Equal(t, "expected", h.get("/v1/visits/" + id).Body["status"], "a refused reschedule leaves the visit")
	})
}

// Both or neither of expected_at and booking_id is 422 (docs/decisions.md).
func TestReschedule_ExactlyOneOfExpectedAtAndBookingID(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		id := createVisit(t, h, nil)["id"].(string)
		requireProblem(t, action(h, id, "reschedule", map[string]any{}), http.StatusUnprocessableEntity, "validation_failed", "body.expected_at")
		requireProblem(t, action(h, id, "reschedule", nil), http.StatusUnprocessableEntity, "validation_failed", "body.expected_at")
		requireProblem(t, action(h, id, "reschedule", map[string]any{"expected_at": "2026-11-25T14:00:00Z",
			"booking_id": "booking_01jd0000000000000000000000"}), http.StatusUnprocessableEntity, "validation_failed", "body.booking_id")
		requireProblem(t, action(h, id, "reschedule", map[string]any{"booking_id": "booking_01jd0000000000000000000000",
			"host_id": h.seed.Test.People[0]}), http.StatusUnprocessableEntity, "validation_failed", "body.host_id", "body.booking_id")
		require.Equal(t, "expected", h.get("/v1/visits/" + id).Body["status"])
	})
}

func TestReschedule_NeedsProInLiveModeEveryPlanInTest(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withPlan(cloud.PlanGrowth))
		id := createVisit(t, h, nil)["id"].(string)
		r := action(h, id, "reschedule", map[string]any{"expected_at": "2026-11-25T14:00:00Z"})
		require.Equal(t, http.StatusOK, r.Status, "test mode works on every plan: %s", r.Raw)
		r = h.do(req{method: http.MethodPost, path: "/v1/visits/" + id + "/reschedule", key: h.seed.Keys.SecretLive,
			body: map[string]any{"expected_at": "2026-11-25T14:00:00Z"}})
		requireProblem(t, r, http.StatusForbidden, "plan_required")
		r = h.do(req{method: http.MethodPost, path: "/v1/visits/" + id + "/hand-over", key: h.seed.Keys.SecretLive,
			body: map[string]any{"to": "reception"}})
		requireProblem(t, r, http.StatusForbidden, "plan_required")
	})
}

func TestHandOver_ToEachReceiver(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		people, teams := h.seed.Test.People, h.seed.Test.Teams
		h.at(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) // the visit's time: check-in admits
		v := deskVisit(t, h)
		id := v["id"].(string)
		require.Nil(t, v["host_id"])
		told := func() map[string]any {
			t.Helper()
			for _, m := range messagesOf(t, h, id) {
				if m["subject"] == "A visitor has been passed to you" {
					return m // newest first
				}
			}
			t.Fatal("the receiver was not told")
			return nil
		}

		waitingWith := func(who string) []string {
			t.Helper()
			return idsOf(data(t, h.get("/v1/visits?waiting_with="+who)))
		}
		require.Contains(t, waitingWith("reception"), id, "a desk visit waits with reception")

		r := action(h, id, "hand-over", map[string]any{"to": "team", "team_id": teams[1]})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "expected", r.Body["status"], "status unchanged")
		require.Equal(t, []string{id}, waitingWith(teams[1]), "it joins the team's waiting list")
		require.NotContains(t, waitingWith("reception"), id, "and leaves reception's")
		require.Equal(t, teams[1], r.Body["team"].(map[string]any)["id"], "the team now receiving it")
		require.Nil(t, r.Body["host_id"])
		m := told()
		require.Equal(t, "console", m["channel"])
		require.Equal(t, teams[1], m["to"])

		r = action(h, id, "hand-over", map[string]any{"to": "person", "person_id": people[2]})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, []string{id}, waitingWith(people[2]))
		require.Empty(t, waitingWith(teams[1]))
		require.Nil(t, r.Body["team"], "a desk visit is no longer with the team")
		require.Empty(t, r.Body["hosts"], "the receiver has not taken it")
		m = told()
		require.Equal(t, "email", m["channel"])
		require.Equal(t, "person03@example.com", m["to"])

		require.Equal(t, http.StatusOK, action(h, id, "check-in", nil).Status)
		r = action(h, id, "hand-over", map[string]any{"to": "reception"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "checked_in", r.Body["status"], "status unchanged")
		require.Equal(t, true, r.Body["needs_someone"], "still waiting")
		require.Contains(t, waitingWith("reception"), id)
		requireProblem(t, h.get("/v1/visits?waiting_with=nobody"), http.StatusUnprocessableEntity, "validation_failed", "query.waiting_with")
		m = told()
		require.Equal(t, "console", m["channel"])
		require.Equal(t, "reception", m["to"])
	})
}

func TestHandOver_OnlyAVisitNobodyHasTaken(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, nil) // hosted
		before := len(messagesOf(t, h, v["id"].(string)))
		r := action(h, v["id"].(string), "hand-over", map[string]any{"to": "reception"})
		requireProblem(t, r, http.StatusConflict, "invalid_state")
		require.Contains(t, r.Body["detail"], "host")
		require.Len(t, messagesOf(t, h, v["id"].(string)), before, "nobody is told of a refused hand-over")

		team := createVisit(t, h, func(b map[string]any) { delete(b, "host_id"); b["team_id"] = h.seed.Test.Teams[1] })
		r = action(h, team["id"].(string), "hand-over", map[string]any{"to": "reception"})
		require.Equal(t, http.StatusOK, r.Status, "a team visit nobody has taken can be handed over: %s", r.Raw)
		require.Equal(t, h.seed.Test.Teams[1], r.Body["team"].(map[string]any)["id"], "the team the visitor came to see stays")
	})
}

func TestHandOver_RequiresTheMatchingID(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		people, teams := h.seed.Test.People, h.seed.Test.Teams
		id := deskVisit(t, h)["id"].(string)
		for _, tc := range []struct {
			body map[string]any
			locs []string
		}{
			{map[string]any{}, []string{"body.to"}},
			{map[string]any{"to": "nobody"}, []string{"body.to"}},
			{map[string]any{"to": "person"}, []string{"body.person_id"}},
			{map[string]any{"to": "team"}, []string{"body.team_id"}},
			{map[string]any{"to": "team", "team_id": teams[1], "person_id": people[0]}, []string{"body.person_id"}},
			{map[string]any{"to": "reception", "team_id": teams[1]}, []string{"body.team_id"}},
			{map[string]any{"to": "person", "person_id": people[6]}, []string{"body.person_id"}},
			{map[string]any{"to": "person", "person_id": "person_123"}, []string{"body.person_id"}},
			{map[string]any{"to": "team", "team_id": teams[3]}, []string{"body.team_id"}},  // another site
			{map[string]any{"to": "team", "team_id": teams[10]}, []string{"body.team_id"}}, // archived
		} {
			requireProblem(t, action(h, id, "hand-over", tc.body), http.StatusUnprocessableEntity, "validation_failed", tc.locs...)
		}
		require.Empty(t, func() []map[string]any {
			var out []map[string]any
			for _, m := range messagesOf(t, h, id) {
				if m["subject"] == "A visitor has been passed to you" {
					out = append(out, m)
				}
			}
			return out
		}())
	})
}

func TestReEnter_NewCheckedInVisitOnTheSamePass(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		gate := h.seed.Test.Sites[0].Gates[0]
		h.at(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
		v := createVisit(t, h, func(b map[string]any) { b["expected_until"] = "2026-11-24T17:00:00Z" })
		id := v["id"].(string)
		requireProblem(t, action(h, id, "re-enter", nil), http.StatusConflict, "invalid_state") // still expected
		require.Equal(t, http.StatusOK, action(h, id, "check-in", map[string]any{"gate_id": gate}).Status)
		require.Equal(t, http.StatusOK, action(h, id, "check-out", nil).Status)

		h.clock.Advance(24 * time.Hour)
		r := action(h, id, "re-enter", map[string]any{"gate_id": gate})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		second := r.Body
		require.NotEqual(t, id, second["id"])
		require.Equal(t, "/v1/visits/"+second["id"].(string), r.Header.Get("Location"))
		require.Equal(t, "checked_in", second["status"])
		require.Equal(t, gate, second["gate_id"])
		require.Equal(t, "2026-11-23T10:00:00.000Z", second["checked_in_at"])
		require.Equal(t, id, second["pass"].(map[string]any)["for_visit_id"], "the pass is the first visit's")
		require.Equal(t, v["visitor"].(map[string]any)["id"], second["visitor"].(map[string]any)["id"])
		require.Equal(t, v["expected_until"], second["expected_until"])
		require.Equal(t, "checked_out", h.get("/v1/visits/" + id).Body["status"], "the source visit is unchanged")

		r = action(h, id, "re-enter", nil)
		requireProblem(t, r, http.StatusConflict, "invalid_state")
		require.Contains(t, r.Body["detail"], second["id"], "each visit is re-entered from once")
		requireProblem(t, action(h, second["id"].(string), "re-enter", nil), http.StatusConflict, "invalid_state") // inside

		require.Equal(t, http.StatusOK, action(h, second["id"].(string), "check-out", nil).Status)
		r = action(h, second["id"].(string), "re-enter", nil)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Equal(t, id, r.Body["pass"].(map[string]any)["for_visit_id"], "still the visit holding the pass")
	})
}

func TestReEnter_PassRulesDecide(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		h.at(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
		inAndOut := func(change func(map[string]any)) string {
			t.Helper()
			id := createVisit(t, h, change)["id"].(string)
			require.Equal(t, http.StatusOK, action(h, id, "check-in", nil).Status)
			require.Equal(t, http.StatusOK, action(h, id, "check-out", nil).Status)
			return id
		}
		single := inAndOut(func(b map[string]any) { b["pass_rules"] = map[string]any{"single_use": true} })
		requireProblem(t, action(h, single, "re-enter", nil), http.StatusConflict, "invalid_state", "pass_rule.used")

		ends := inAndOut(nil) // until the end of the day
		h.at(time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC))
		requireProblem(t, action(h, ends, "re-enter", nil), http.StatusConflict, "invalid_state", "pass_rule.expired")
		r := action(h, ends, "re-enter", map[string]any{"override_pass_rules": true})
		require.Equal(t, http.StatusCreated, r.Status, "override admits: %s", r.Raw)
	})
}

func TestVisitors_EraseRemovesPersonalData(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, func(b map[string]any) { b["purpose"] = "Interview"; b["vehicle_plate"] = "AB12 CDE" })
		vid := v["visitor"].(map[string]any)["id"].(string)
		got := h.get("/v1/visitors/" + vid)
		require.Equal(t, http.StatusOK, got.Status)
		require.Equal(t, "Vera Visitor", got.Body["name"])

		require.NotEmpty(t, messagesOf(t, h, v["id"].(string)))
		r := h.do(req{method: http.MethodDelete, path: "/v1/visitors/" + vid, key: h.seed.Keys.SecretTest})
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Raw)
		require.Empty(t, messagesOf(t, h, v["id"].(string)), "the outbox keeps nothing about the visitor")
		require.Empty(t, r.Raw)
		requireProblem(t, h.get("/v1/visitors/"+vid), http.StatusNotFound, "not_found")
		requireProblem(t, h.do(req{method: http.MethodDelete, path: "/v1/visitors/" + vid, key: h.seed.Keys.SecretTest}),
			http.StatusNotFound, "not_found")

		after := h.get("/v1/visits/" + v["id"].(string)).Body
		vis := after["visitor"].(map[string]any)
		require.Equal(t, vid, vis["id"])
		for _, k := range []string{"name", "email", "phone", "company"} {
			require.Nil(t, vis[k], k)
		}
		require.Nil(t, after["purpose"])
		require.NotContains(t, after, "vehicle_plate")

		again := createVisit(t, h, nil)
		require.NotEqual(t, vid, again["visitor"].(map[string]any)["id"], "an erased visitor is not matched again")

		r = h.do(req{method: http.MethodDelete, path: "/v1/visitors/" + again["visitor"].(map[string]any)["id"].(string), key: h.seed.Keys.SecretLive})
		requireProblem(t, r, http.StatusNotFound, "not_found")
	})
}

func TestCheckIn_OverrideIsWrittenToTheAuditTrail(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		gate := h.seed.Test.Sites[0].Gates[0]
		audit := func(visitID string) []map[string]any {
			t.Helper()
			return data(t, h.get("/v1/audit-events?action=visit.pass_rules_overridden&object_id="+visitID))
		}

		admitted := createVisit(t, h, func(b map[string]any) { b["expected_at"] = "2026-11-21T09:00:00Z" })["id"].(string)
		require.Equal(t, http.StatusOK, action(h, admitted, "check-in", map[string]any{"override_pass_rules": true}).Status)
		require.Empty(t, audit(admitted), "nothing was overridden when the rules admit")

		early := createVisit(t, h, nil)["id"].(string) // tomorrow
		r := action(h, early, "check-in", map[string]any{"gate_id": gate, "override_pass_rules": true})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		events := audit(early)
		require.Len(t, events, 1)
		e := events[0]
		require.Equal(t, "visit.pass_rules_overridden", e["action"])
		require.Equal(t, "key", e["actor_kind"])
		require.Regexp(t, `^key_`, e["actor_id"])
		require.Equal(t, "visit", e["object_type"])
		require.Equal(t, early, e["object_id"])
		require.Equal(t, r.Header.Get("Svc-Request-Id"), e["request_id"], "the request that overrode")
		require.Equal(t, map[string]any{"reason": "not_yet", "gate_id": gate, "pass_visit_id": early}, e["detail"])

		refused := createVisit(t, h, nil)["id"].(string)
		requireProblem(t, action(h, refused, "check-in", nil), http.StatusConflict, "invalid_state", "pass_rule.not_yet")
		require.Empty(t, audit(refused), "a refusal is not an override")

		// Re-entry on a single-use pass, overridden.
		require.Equal(t, http.StatusOK, action(h, admitted, "check-out", nil).Status)
		single := createVisit(t, h, func(b map[string]any) {
			b["expected_at"] = "2026-11-21T09:00:00Z"
			b["pass_rules"] = map[string]any{"single_use": true}
		})["id"].(string)
		require.Equal(t, http.StatusOK, action(h, single, "check-in", nil).Status)
		require.Equal(t, http.StatusOK, action(h, single, "check-out", nil).Status)
		r = action(h, single, "re-enter", map[string]any{"override_pass_rules": true})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		events = audit(r.Body["id"].(string))
		require.Len(t, events, 1)
		require.Equal(t, map[string]any{"reason": "used", "pass_visit_id": single}, events[0]["detail"])

		requireProblem(t, h.get("/v1/audit-events?action=DROP"), http.StatusUnprocessableEntity, "validation_failed", "query.action")
	})
}
