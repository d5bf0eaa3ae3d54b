package httpapi_test

import (
	"context"
	"github.com/svc-vms/svc/gate/qrdecode"
	"github.com/svc-vms/svc/shared/zbartest"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
)

// tourForm is a form with one question of each kind the tests need.
const tourForm = `{"type":"object","properties":{
	"company":{"type":"string","maxLength":50,"x-svc-visitor":true},
	"badge_number":{"type":"integer","minimum":1,"maximum":999},
	"id_number":{"type":"string","x-svc-visitor":true,"x-svc-sensitive":true},
	"nda":{"type":"boolean","x-svc-visitor":true},
	"escort":{"type":"string","x-svc-type":"person"}
},"required":["nda"],"x-svc-order":["company","badge_number","id_number","nda","escort"]}`

// putTour gives the harness's test mode (and live mode) a "site_tour" type
// open for pre-registration, needing approval, with tourForm.
func putTour(t *testing.T, h *harness, change func(*cloud.VisitType)) {
	t.Helper()
	for _, m := range []cloud.Mode{cloud.ModeTest, cloud.ModeLive} {
		vt := cloud.VisitType{Tenant: cloud.Tenant{OrgID: h.seed.Organisation.ID, Mode: m}, Key: "site_tour", Name: "Site tour",
			Enabled: true, PreRegistration: true, NeedsApproval: true, Form: []byte(tourForm),
			PassRules: passrule.Rules{Window: passrule.Window{Before: 15, After: 15}}}
		if change != nil {
			change(&vt)
		}
		require.NoError(t, h.svc.PutVisitType(context.Background(), vt))
	}
}

// visitBody is a valid POST /visits body for the seeded test mode at the
// first site, tomorrow at 10:00 UTC, with changes applied.
func visitBody(h *harness, change func(map[string]any)) map[string]any {
	b := map[string]any{
		"site_id":     h.seed.Test.Sites[0].ID,
		"host_id":     h.seed.Test.People[0],
		"visitor":     map[string]any{"name": "Vera Visitor", "email": "vera@example.org", "phone": "+447700900123", "company": "Acme"},
		"type":        "meeting",
		"expected_at": "2026-11-22T10:00:00Z",
	}
	if change != nil {
		change(b)
	}
	return b
}

func createVisit(t *testing.T, h *harness, change func(map[string]any)) map[string]any {
	t.Helper()
	r := h.post("/v1/visits", visitBody(h, change))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.Body
}

func TestVisits_CreateReturnsEveryField(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		people := h.seed.Test.People
		v := createVisit(t, h, func(b map[string]any) {
			delete(b, "host_id")
			b["host_ids"] = []string{people[1], people[2]}
			b["team_id"] = h.seed.Test.Teams[0]
			b["type"] = "site_tour"
			b["purpose"] = "Quarterly review"
			b["vehicle_plate"] = "AB12 CDE"
			b["expected_until"] = "2026-11-23T17:00:00Z"
			b["custom_fields"] = map[string]any{"company": "Acme", "badge_number": 42, "id_number": "X123", "nda": true, "escort": people[3]}
			b["pass_rules"] = map[string]any{"daily": map[string]any{"from": "08:00", "until": "18:00"},
				"window": map[string]any{"before": 30, "after": 10}, "single_use": false, "gate_ids": []string{h.seed.Test.Sites[0].Gates[0]}}
		})
		for _, key := range []string{"id", "status", "type", "source", "site_id", "gate_id", "host_id", "audience", "hosts", "team",
			"asked_for", "needs_someone", "visitor", "purpose", "vehicle_plate", "expected_at", "expected_until", "checked_in_at",
			"checked_out_at", "cancelled_at", "decision", "booking_id", "rescheduled_to", "pass", "custom_fields", "created_at", "updated_at"} {
			require.Contains(t, v, key)
		}
		require.Equal(t, "expected", v["status"], "an invitation by secret key does not wait for approval")
		require.Equal(t, "invitation", v["source"])
		require.Equal(t, "people", v["audience"])
		require.Equal(t, people[1], v["host_id"])
		hosts := v["hosts"].([]any)
		require.Len(t, hosts, 2)
		require.Equal(t, people[1], hosts[0].(map[string]any)["id"], "lead first")
		require.Equal(t, "lead", hosts[0].(map[string]any)["role"])
		require.Equal(t, h.seed.Test.Teams[0], v["team"].(map[string]any)["id"])
		require.Equal(t, "Vera Visitor", v["visitor"].(map[string]any)["name"])
		require.Equal(t, "2026-11-23T17:00:00.000Z", v["expected_until"])
		require.Equal(t, "AB12 CDE", v["vehicle_plate"])
		fields := v["custom_fields"].(map[string]any)
		require.NotContains(t, fields, "id_number", "sensitive answers are left out of responses")
		require.Equal(t, float64(42), fields["badge_number"])
		pass := v["pass"].(map[string]any)
		require.Equal(t, v["id"], pass["for_visit_id"])
		require.Equal(t, []any{"email", "sms"}, pass["channels"])
		require.Equal(t, "08:00", pass["rules"].(map[string]any)["daily"].(map[string]any)["from"])

		got := h.get("/v1/visits/" + v["id"].(string))
		require.Equal(t, http.StatusOK, got.Status)
		require.Equal(t, v, got.Body, "GET returns what POST did")

		stored, err := h.store.Visit(context.Background(), h.testTenant(), v["id"].(string))
		require.NoError(t, err)
		require.JSONEq(t, `"X123"`, string(stored.CustomFields["id_number"]), "the sensitive answer is kept, only not shown")
	})
}

func TestVisits_VehiclePlateAbsentWhenNone(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, nil)
		require.NotContains(t, v, "vehicle_plate")
		require.Nil(t, v["purpose"])
		require.Equal(t, "person", v["audience"])
	})
}

func TestVisits_AudienceFromHostsAndTeam(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		desk := createVisit(t, h, func(b map[string]any) { delete(b, "host_id") })
		require.Equal(t, "desk", desk["audience"])
		require.Nil(t, desk["host_id"])
		require.Empty(t, desk["hosts"])
		team := createVisit(t, h, func(b map[string]any) { delete(b, "host_id"); b["team_id"] = h.seed.Test.Teams[0] })
		require.Equal(t, "team", team["audience"])
		require.Nil(t, team["host_id"])
		r := h.post("/v1/visits", visitBody(h, func(b map[string]any) { b["audience"] = "team" }))
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.audience")
	})
}

func TestVisits_ExpectedUntilDefaultsToEndOfDayAtSite(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		for _, tc := range []struct {
			site     int
			at, want string
		}{
			{0, "2026-11-22T10:00:00Z", "2026-11-22T23:59:59.999Z"}, // London, GMT in November
			{1, "2026-11-22T10:00:00Z", "2026-11-23T04:59:59.999Z"}, // New York, UTC-5
			{2, "2026-11-22T16:00:00Z", "2026-11-23T14:59:59.999Z"}, // Tokyo: already the 23rd there
			{0, "2026-07-01T10:00:00Z", "2026-07-01T22:59:59.999Z"}, // London in summer time
		} {
			v := createVisit(t, h, func(b map[string]any) {
				b["site_id"] = h.seed.Test.Sites[tc.site].ID
				b["expected_at"] = tc.at
				delete(b, "host_id")
			})
			require.Equal(t, tc.want, v["expected_until"], "site %d at %s", tc.site, tc.at)
		}
	})
}

func TestVisits_CreateListsEveryProblem(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		r := h.post("/v1/visits", map[string]any{
			"site_id":        "site_nope",
			"visitor":        map[string]any{"name": "", "phone": "07700 900123", "email": "not-an-email"},
			"type":           "site_tour",
			"expected_at":    "2026-11-22T10:00:00Z",
			"expected_until": "2026-11-22T09:00:00Z",
			"purpose":        strings.Repeat("p", 301),
			"vehicle_plate":  strings.Repeat("V", 17),
			"custom_fields":  map[string]any{"shoe_size": 9, "badge_number": "forty", "nda": "yes"},
			"extra":          true,
		})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed",
			"body.site_id", "body.visitor.name", "body.visitor.phone", "body.visitor.email", "body.expected_until",
			"body.purpose", "body.vehicle_plate", "body.custom_fields.shoe_size", "body.custom_fields.badge_number",
			"body.custom_fields.nda", "body.extra")

		r = h.post("/v1/visits", visitBody(h, func(b map[string]any) {
			b["expected_until"] = "2027-02-23T10:00:01Z" // 93 days
			b["type"] = "no_such_type"
		}))
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.expected_until", "body.type")

		r = h.post("/v1/visits", map[string]any{})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.site_id", "body.visitor", "body.type", "body.expected_at")
	})
}

func TestVisits_RequiredQuestionsAreNotEnforced(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		v := createVisit(t, h, func(b map[string]any) { b["type"] = "site_tour" }) // nda is required by the form
		require.Empty(t, v["custom_fields"])
	})
}

func TestVisits_TypeTurnedOffIsRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, func(vt *cloud.VisitType) { vt.Enabled = false })
		r := h.post("/v1/visits", visitBody(h, func(b map[string]any) { b["type"] = "site_tour" }))
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.type")
	})
}

func TestVisits_PersonQuestionNamesAPersonOfTheTenant(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		r := h.post("/v1/visits", visitBody(h, func(b map[string]any) {
			b["type"] = "site_tour"
			b["custom_fields"] = map[string]any{"escort": h.seed.Live.People[0]} // the live mode's person
		}))
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.custom_fields.escort")
	})
}

func TestVisits_PublishableKeyPreRegisters(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		pk := h.seed.Keys.PublishableTest
		post := func(change func(map[string]any)) response {
			return h.do(req{method: http.MethodPost, path: "/v1/visits", key: pk, body: visitBody(h, change)})
		}
		r := post(func(b map[string]any) {
			b["type"] = "site_tour"
			b["custom_fields"] = map[string]any{"company": "Acme", "nda": true}
		})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Equal(t, "awaiting_approval", r.Body["status"], "the type needs host approval")
		require.Equal(t, "pre_registration", r.Body["source"])
		require.Empty(t, r.Body["pass"].(map[string]any)["channels"], "no pass before approval")

		requireProblem(t, post(func(b map[string]any) { b["type"] = "delivery" }), http.StatusUnprocessableEntity, "validation_failed", "body.type")
		requireProblem(t, post(func(b map[string]any) {
			b["type"] = "site_tour"
			b["custom_fields"] = map[string]any{"badge_number": 7}
		}), http.StatusUnprocessableEntity, "validation_failed", "body.custom_fields.badge_number")
		requireProblem(t, post(func(b map[string]any) {
			b["type"] = "site_tour"
			b["pass_rules"] = map[string]any{"single_use": true}
		}), http.StatusUnprocessableEntity, "validation_failed", "body.pass_rules")

		// Reading visit types: only open ones; the rest are not found.
		rows := data(t, h.do(req{method: http.MethodGet, path: "/v1/visit-types?limit=100", key: pk}))
		var keys []string
		for _, row := range rows {
			keys = append(keys, row["key"].(string))
			require.True(t, row["pre_registration"].(bool))
			require.NotNil(t, row["public_form"])
		}
		require.Contains(t, keys, "site_tour")
		require.NotContains(t, keys, "delivery")
		r = h.do(req{method: http.MethodGet, path: "/v1/visit-types/delivery", key: pk})
		requireProblem(t, r, http.StatusNotFound, "not_found")
		r = h.do(req{method: http.MethodGet, path: "/v1/visit-types/site_tour", key: pk})
		require.Equal(t, http.StatusOK, r.Status)
		schema := r.Body["public_form"].(map[string]any)["schema"].(map[string]any)
		props := schema["properties"].(map[string]any)
		require.Contains(t, props, "company")
		require.NotContains(t, props, "badge_number", "the public form holds only questions asked of the visitor")
		r = h.do(req{method: http.MethodGet, path: "/v1/forms", key: pk})
		requireProblem(t, r, http.StatusForbidden, "forbidden")
	})
}

func TestVisitTypes_SecretKeySeesEveryType(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		rows := data(t, h.get("/v1/visit-types?limit=100"))
		var keys []string
		for _, row := range rows {
			keys = append(keys, row["key"].(string))
			if !row["pre_registration"].(bool) {
				require.Nil(t, row["public_form"], "public_form is null unless pre-registration is open")
			}
		}
		require.ElementsMatch(t, []string{"meeting", "interview", "delivery", "contractor", "event", "other"}, keys)
		forms := data(t, h.get("/v1/forms?limit=100"))
		require.Len(t, forms, 6)
		r := h.get("/v1/visit-types/Bad-Key")
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "path.visit_type")
		r = h.get("/v1/visit-types/nope")
		requireProblem(t, r, http.StatusNotFound, "not_found")
	})
}

// at sets the harness clock.
func (h *harness) at(t time.Time) {
	h.clock.Set(t)
}

func action(h *harness, id, name string, body any) response {
	h.t.Helper()
	return h.post("/v1/visits/"+id+"/"+name, body)
}

// The spec's transition table, one case per row (reschedule's rows are
// in the reschedule tests).
func TestVisits_TransitionTable(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		h.at(time.Date(2026, 11, 22, 9, 50, 0, 0, time.UTC)) // inside a 10:00 visit's window
		pk := h.seed.Keys.PublishableTest
		preRegister := func() string {
			r := h.do(req{method: http.MethodPost, path: "/v1/visits", key: pk, body: visitBody(h, func(b map[string]any) { b["type"] = "site_tour" })})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			return r.Body["id"].(string)
		}
		gate := h.seed.Test.Sites[0].Gates[0]

		t.Run("new pre-registration of a type needing approval is awaiting_approval", func(t *testing.T) {
			r := h.get("/v1/visits/" + preRegister())
			require.Equal(t, "awaiting_approval", r.Body["status"])
		})
		t.Run("awaiting_approval, host approves: expected, decision approved", func(t *testing.T) {
			r := action(h, preRegister(), "approve", map[string]any{"reason": "Welcome"})
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			require.Equal(t, "expected", r.Body["status"])
			d := r.Body["decision"].(map[string]any)
			require.Equal(t, "approved", d["outcome"])
			require.Equal(t, "Welcome", d["reason"])
			require.NotEmpty(t, r.Body["pass"].(map[string]any)["channels"], "the pass goes out on approval")
		})
		t.Run("expected, check-in allowed by pass rules: checked_in", func(t *testing.T) {
			v := createVisit(t, h, nil)
			r := action(h, v["id"].(string), "check-in", map[string]any{"gate_id": gate})
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			require.Equal(t, "checked_in", r.Body["status"])
			require.Equal(t, gate, r.Body["gate_id"])
			require.NotNil(t, r.Body["checked_in_at"])
		})
		t.Run("expected, check-in refused by pass rules: unchanged, invalid_state at pass_rule", func(t *testing.T) {
			v := createVisit(t, h, func(b map[string]any) { b["expected_at"] = "2026-11-22T12:00:00Z" })
			r := action(h, v["id"].(string), "check-in", nil)
			requireProblem(t, r, http.StatusConflict, "invalid_state", "pass_rule.not_yet")
			require.Equal(t, "expected", h.get("/v1/visits/" + v["id"].(string)).Body["status"])
		})
		t.Run("expected, check-in with override_pass_rules: checked_in", func(t *testing.T) {
			v := createVisit(t, h, func(b map[string]any) { b["expected_at"] = "2026-11-22T12:00:00Z" })
			r := action(h, v["id"].(string), "check-in", map[string]any{"override_pass_rules": true})
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			require.Equal(t, "checked_in", r.Body["status"])
		})
		t.Run("override never overrides ended", func(t *testing.T) {
			v := createVisit(t, h, nil)
			id := v["id"].(string)
			require.Equal(t, http.StatusOK, action(h, id, "cancel", nil).Status)
			r := action(h, id, "check-in", map[string]any{"override_pass_rules": true})
			requireProblem(t, r, http.StatusConflict, "invalid_state", "pass_rule.ended")
		})
		t.Run("checked_in, check-out: checked_out", func(t *testing.T) {
			v := createVisit(t, h, nil)
			id := v["id"].(string)
			require.Equal(t, http.StatusOK, action(h, id, "check-in", nil).Status)
			r := action(h, id, "check-out", nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			require.Equal(t, "checked_out", r.Body["status"])
			require.NotNil(t, r.Body["checked_out_at"])
		})
		t.Run("checked_out, check-in: unchanged, invalid_state", func(t *testing.T) {
			v := createVisit(t, h, nil)
			id := v["id"].(string)
			require.Equal(t, http.StatusOK, action(h, id, "check-in", nil).Status)
			require.Equal(t, http.StatusOK, action(h, id, "check-out", nil).Status)
			r := action(h, id, "check-in", map[string]any{"override_pass_rules": true})
			requireProblem(t, r, http.StatusConflict, "invalid_state")
			require.Contains(t, r.Body["detail"], "checked_out")
			require.Equal(t, "checked_out", h.get("/v1/visits/" + id).Body["status"])
		})
		t.Run("any status other than awaiting_approval, approve: unchanged, invalid_state", func(t *testing.T) {
			v := createVisit(t, h, nil)
			r := action(h, v["id"].(string), "approve", nil)
			requireProblem(t, r, http.StatusConflict, "invalid_state")
			require.Contains(t, r.Body["detail"], "expected")
		})
	})
}

func TestVisits_PassRuleRefusals(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site := h.seed.Test.Sites[0]
		rules := func(r map[string]any) func(map[string]any) {
			return func(b map[string]any) { b["pass_rules"] = r }
		}
		for _, tc := range []struct {
			name   string
			now    time.Time
			change func(map[string]any)
			gate   string
			reason string
		}{
			{"not yet: before the window", time.Date(2026, 11, 22, 9, 29, 0, 0, time.UTC),
				rules(map[string]any{"window": map[string]any{"before": 30, "after": 0}}), "", "not_yet"},
			{"window edge admits", time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC),
				rules(map[string]any{"window": map[string]any{"before": 30, "after": 0}}), "", ""},
			{"expired", time.Date(2026, 11, 23, 0, 1, 0, 0, time.UTC), rules(map[string]any{}), "", "expired"},
			{"outside hours", time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC),
				rules(map[string]any{"window": map[string]any{"before": 600, "after": 0}, "daily": map[string]any{"from": "08:00", "until": "18:00"}}), "", "outside_hours"},
			{"wrong gate", time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
				rules(map[string]any{"gate_ids": []string{site.Gates[0]}}), site.Gates[1], ""}, // exit gate: refused as input below
		} {
			t.Run(tc.name, func(t *testing.T) {
				h.at(tc.now)
				v := createVisit(t, h, tc.change)
				var body any
				if tc.gate != "" {
					body = map[string]any{"gate_id": tc.gate}
				}
				r := action(h, v["id"].(string), "check-in", body)
				switch {
				case tc.gate == site.Gates[1]:
					requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.gate_id")
				case tc.reason == "":
					require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
				default:
					requireProblem(t, r, http.StatusConflict, "invalid_state", "pass_rule."+tc.reason)
				}
			})
		}
		t.Run("gate at another site", func(t *testing.T) {
			h.at(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
			v := createVisit(t, h, nil)
			r := action(h, v["id"].(string), "check-in", map[string]any{"gate_id": h.seed.Test.Sites[1].Gates[0]})
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.gate_id")
		})
		t.Run("gate not among the pass's gates", func(t *testing.T) {
			h.at(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
			g, err := h.svc.CreateGate(context.Background(), h.testTenant(), cloud.GateInput{SiteID: cloud.Some(site.ID),
				Name: cloud.Some("Side door"), Direction: cloud.Some(cloud.DirectionEntry)})
			require.NoError(t, err)
			v := createVisit(t, h, rules(map[string]any{"gate_ids": []string{site.Gates[0]}}))
			r := action(h, v["id"].(string), "check-in", map[string]any{"gate_id": g.ID})
			requireProblem(t, r, http.StatusConflict, "invalid_state", "pass_rule.wrong_gate")
		})
		t.Run("pass rules naming a gate at another site are refused", func(t *testing.T) {
			r := h.post("/v1/visits", visitBody(h, rules(map[string]any{"gate_ids": []string{h.seed.Test.Sites[1].Gates[0]}})))
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.pass_rules.gate_ids[0]")
		})
		t.Run("malformed pass rules", func(t *testing.T) {
			r := h.post("/v1/visits", visitBody(h, rules(map[string]any{
				"daily": map[string]any{"from": "8:00"}, "window": map[string]any{"before": -1, "after": 1.5}, "colour": "red"})))
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed",
				"body.pass_rules.daily.from", "body.pass_rules.daily.until", "body.pass_rules.window.before",
				"body.pass_rules.window.after", "body.pass_rules.colour")
		})
	})
}

func TestVisits_DenyAndCancel(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		r := h.do(req{method: http.MethodPost, path: "/v1/visits", key: h.seed.Keys.PublishableTest,
			body: visitBody(h, func(b map[string]any) { b["type"] = "site_tour" })})
		id := r.Body["id"].(string)
		r = action(h, id, "deny", map[string]any{"reason": "No tours this week"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "denied", r.Body["status"])
		require.Equal(t, "denied", r.Body["decision"].(map[string]any)["outcome"])
		requireProblem(t, action(h, id, "cancel", nil), http.StatusConflict, "invalid_state")

		v := createVisit(t, h, nil)
		r = action(h, v["id"].(string), "cancel", nil)
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, "cancelled", r.Body["status"])
		require.NotNil(t, r.Body["cancelled_at"])
		requireProblem(t, action(h, v["id"].(string), "cancel", nil), http.StatusConflict, "invalid_state")
	})
}

func TestVisits_PatchChangesWhatItMay(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, nil)
		id := v["id"].(string)
		r := h.patch("/v1/visits/"+id, map[string]any{"purpose": "Lunch", "pass_rules": map[string]any{"single_use": true},
			"expected_at": "2026-11-22T11:00:00Z"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "Lunch", r.Body["purpose"])
		require.Equal(t, true, r.Body["pass"].(map[string]any)["rules"].(map[string]any)["single_use"])
		require.Equal(t, "2026-11-22T23:59:59.999Z", r.Body["expected_until"], "the end follows the new day")

		r = h.patch("/v1/visits/"+id, map[string]any{"type": "nope", "site_id": h.seed.Test.Sites[1].ID})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.site_id")
		r = h.patch("/v1/visits/"+id, map[string]any{"type": "nope"})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.type")
		r = h.patch("/v1/visits/"+id, map[string]any{"expected_until": "2026-11-22T10:00:00Z"})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.expected_until")

		require.Equal(t, http.StatusOK, action(h, id, "cancel", nil).Status)
		r = h.patch("/v1/visits/"+id, map[string]any{"purpose": "Too late"})
		requireProblem(t, r, http.StatusConflict, "invalid_state")
	})
}

func TestVisits_ListFilters(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		people := h.seed.Test.People
		a := createVisit(t, h, nil)
		b := createVisit(t, h, func(b map[string]any) {
			b["type"] = "delivery"
			b["site_id"] = h.seed.Test.Sites[1].ID
			delete(b, "host_id")
			b["host_ids"] = []string{people[1], people[0]}
			b["expected_at"] = "2026-11-25T10:00:00Z"
		})
		c := createVisit(t, h, func(b map[string]any) { b["host_id"] = people[2] })
		require.Equal(t, http.StatusOK, action(h, c["id"].(string), "cancel", nil).Status)
		ids := func(q string) []string { return idsOf(data(t, h.get("/v1/visits?"+q))) }
		id := func(v map[string]any) string { return v["id"].(string) }
		require.Equal(t, []string{id(c), id(b), id(a)}, ids(""), "newest first")
		require.Equal(t, []string{id(c)}, ids("status=cancelled"))
		require.Equal(t, []string{id(b), id(a)}, ids("status=expected,checked_in"))
		require.Equal(t, []string{id(b)}, ids("type=delivery"))
		require.Equal(t, []string{id(b)}, ids("site_id="+h.seed.Test.Sites[1].ID))
		require.Equal(t, []string{id(b), id(a)}, ids("host_id="+people[0]), "any host, lead or not")
		require.Equal(t, []string{id(b)}, ids("expected_from=2026-11-24T00:00:00Z"))
		require.Equal(t, []string{id(c), id(a)}, ids("expected_before=2026-11-24T00:00:00Z"))
		for _, q := range []string{"status=nope", "type=Bad", "host_id=person_x", "expected_from=tomorrow", "colour=red"} {
			requireProblem(t, h.get("/v1/visits?"+q), http.StatusUnprocessableEntity, "validation_failed", "query."+strings.SplitN(q, "=", 2)[0])
		}
	})
}

func TestVisits_TestModeMessagesStayInTheOutbox(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, nil)
		id := v["id"].(string)
		rows := data(t, h.get("/v1/messages?visit_id="+id))
		require.Len(t, rows, 2, "one message per channel")
		for _, m := range rows {
			require.Equal(t, "held", m["status"], "test-mode messages never leave the system")
		}
		r := action(h, id, "resend-pass", map[string]any{"channels": []string{"sms"}})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Len(t, data(t, h.get("/v1/messages?visit_id="+id)), 3)
		requireProblem(t, action(h, id, "resend-pass", map[string]any{"channels": []string{"pigeon"}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.channels[0]")

		quiet := createVisit(t, h, func(b map[string]any) { b["send_pass"] = false })
		require.Empty(t, data(t, h.get("/v1/messages?visit_id="+quiet["id"].(string))))
		require.Nil(t, quiet["pass"].(map[string]any)["last_sent_at"])
	})
}

func TestVisits_PlanLimits(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open) // Pro
		live := func(method, path string, body any) response {
			return h.do(req{method: method, path: path, key: h.seed.Keys.SecretLive, body: body})
		}
		body := func(change func(map[string]any)) map[string]any {
			return visitBody(h, func(b map[string]any) {
				b["site_id"] = h.seed.Live.Sites[0].ID
				b["host_id"] = h.seed.Live.People[0]
				change(b)
			})
		}
		hosts := h.seed.Live.People[:12]
		active := func(n int) []string {
			var out []string
			for _, id := range hosts {
				p, err := h.store.Person(context.Background(), cloud.Tenant{OrgID: h.seed.Organisation.ID, Mode: cloud.ModeLive}, id)
				require.NoError(t, err)
				if p.Active && len(out) < n {
					out = append(out, id)
				}
			}
			require.Len(t, out, n)
			return out
		}
		r := live(http.MethodPost, "/v1/visits", body(func(b map[string]any) { delete(b, "host_id"); b["host_ids"] = active(6) }))
		requireProblem(t, r, http.StatusForbidden, "plan_required")
		r = live(http.MethodPost, "/v1/visits", body(func(b map[string]any) { delete(b, "host_id"); b["host_ids"] = active(5) }))
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		old := r.Body["id"].(string)
		require.NotEmpty(t, data(t, live(http.MethodGet, "/v1/messages?visit_id="+old, nil)))

		// Pro keeps 365 days of history: older visits are plan_required
		// and left out of lists, in live mode only.
		testOld := createVisit(t, h, nil)["id"].(string)
		h.clock.Advance(366 * 24 * time.Hour)
		requireProblem(t, live(http.MethodGet, "/v1/visits/"+old, nil), http.StatusForbidden, "plan_required")
		rows := data(t, live(http.MethodGet, "/v1/visits", nil))
		require.NotContains(t, idsOf(rows), old)
		require.Empty(t, data(t, live(http.MethodGet, "/v1/messages?visit_id="+old, nil)), "its messages are hidden too")
		require.Equal(t, http.StatusOK, h.get("/v1/visits/"+testOld).Status, "test mode has no history limit")
	})
}

func TestVisits_OtherTenantIsNotFound(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, nil)
		r := h.do(req{method: http.MethodGet, path: "/v1/visits/" + v["id"].(string), key: h.seed.Keys.SecretLive})
		requireProblem(t, r, http.StatusNotFound, "not_found")
		r = h.do(req{method: http.MethodPost, path: "/v1/visits/" + v["id"].(string) + "/check-in", key: h.seed.Keys.SecretLive})
		requireProblem(t, r, http.StatusNotFound, "not_found")
		requireProblem(t, h.get("/v1/visits/visit_123"), http.StatusUnprocessableEntity, "validation_failed", "path.visit_id")
	})
}

// decodeQR reads a PNG with the appliance's own decoder (gate/qrdecode:
// gozxing with the binarizers and hints a gate tries), on every machine.
// Plain gozxing without hints misreads a few symbols' finder patterns
// (a grid point estimated outside the image) that a gate reads.
func decodeQR(t *testing.T, raw []byte) string {
	t.Helper()
	text, err := qrdecode.DecodeBytes(raw)
	require.NoError(t, err, "the appliance's decoder could not read the pass")
	return text
}

// zbarimg returns the text an independent decoder (Debian's zbar-tools)
// reads from a PNG (shared/zbartest).
func zbarimg(t *testing.T, png []byte) string {
	t.Helper()
	return zbartest.Read(t, png)
}

func TestVisits_PassPNGDecodesToItsToken(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site := h.seed.Test.Sites[0]
		v := createVisit(t, h, func(b map[string]any) {
			b["pass_rules"] = map[string]any{"daily": map[string]any{"from": "22:00", "until": "06:00"}, "single_use": true,
				"window": map[string]any{"before": 30, "after": 30}, "gate_ids": []string{site.Gates[0]}}
		})
		id := v["id"].(string)
		r := h.do(req{method: http.MethodGet, path: "/v1/visits/" + id + "/pass.png", key: h.seed.Keys.SecretTest})
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, "image/png", r.Header.Get("Content-Type"))
		text := decodeQR(t, r.Raw)

		keys, err := h.svc.PassKeySet(context.Background(), h.testTenant())
		require.NoError(t, err)
		c, err := passtoken.Verify(text, keys)
		require.NoError(t, err, "the decoded text is a token signed by the organisation's key")
		require.Equal(t, id, c.VisitID)
		require.Equal(t, site.ID, c.SiteID)
		require.Equal(t, []string{site.Gates[0]}, c.GateIDs)
		require.True(t, c.SingleUse)
		require.Equal(t, &passtoken.Daily{From: 22 * 60, Until: 6 * 60}, c.Daily)
		require.Equal(t, time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC), c.NotBefore)

		want, err := h.svc.PassToken(context.Background(), cloud.Actor{Tenant: h.testTenant(), Plan: cloud.PlanPro}, id)
		require.NoError(t, err)
		require.Equal(t, want, text, "the QR code holds exactly the token")
		t.Run("zbarimg reads the same token", func(t *testing.T) {
			require.Equal(t, want, zbarimg(t, r.Raw))
		})

		require.Equal(t, http.StatusOK, action(h, id, "cancel", nil).Status)
		r = h.do(req{method: http.MethodGet, path: "/v1/visits/" + id + "/pass.png", key: h.seed.Keys.SecretTest})
		requireProblem(t, r, http.StatusConflict, "invalid_state")
	})
}

func TestVisits_PassRulesHoldAtMostTheGatesATokenCan(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site := h.seed.Test.Sites[0].ID
		gates := []string{}
		for i := 0; i <= passtoken.MaxGates; i++ {
			g, err := h.svc.CreateGate(context.Background(), h.testTenant(), cloud.GateInput{SiteID: cloud.Some(site),
				Name: cloud.Some("Gate"), Direction: cloud.Some(cloud.DirectionEntry)})
			require.NoError(t, err)
			gates = append(gates, g.ID)
		}
		r := h.post("/v1/visits", visitBody(h, func(b map[string]any) { b["pass_rules"] = map[string]any{"gate_ids": gates} }))
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.pass_rules.gate_ids")
		r = h.post("/v1/visits", visitBody(h, func(b map[string]any) { b["pass_rules"] = map[string]any{"gate_ids": gates[:passtoken.MaxGates]} }))
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	})
}

func TestVisits_PatchKeepsHiddenAnswers(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		v := createVisit(t, h, func(b map[string]any) {
			b["type"] = "site_tour"
			b["custom_fields"] = map[string]any{"company": "Acme", "id_number": "X123", "nda": true}
		})
		id := v["id"].(string)
		r := h.patch("/v1/visits/"+id, map[string]any{"custom_fields": map[string]any{"company": "Beta", "nda": true}})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, map[string]any{"company": "Beta", "nda": true}, r.Body["custom_fields"])
		stored, err := h.store.Visit(context.Background(), h.testTenant(), id)
		require.NoError(t, err)
		require.JSONEq(t, `"X123"`, string(stored.CustomFields["id_number"]), "a sensitive answer the caller cannot see is not lost")

		r = h.patch("/v1/visits/"+id, map[string]any{"custom_fields": map[string]any{"id_number": "Y9"}})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		stored, err = h.store.Visit(context.Background(), h.testTenant(), id)
		require.NoError(t, err)
		require.JSONEq(t, `"Y9"`, string(stored.CustomFields["id_number"]), "given again, it is replaced")
		require.NotContains(t, stored.CustomFields, "company", "visible answers left out are removed")
	})
}

func TestVisits_PassLinkShowsThePassWithoutAKey(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, nil)
		id := v["id"].(string)
		var link string
		for _, m := range data(t, h.get("/v1/messages?visit_id="+id)) {
			found := regexp.MustCompile(`/v1/passes/[A-Za-z0-9_.-]+`).FindString(m["body"].(string))
			require.NotEmpty(t, found, "the pass message carries the visitor's link: %s", m["body"])
			require.True(t, link == "" || link == found, "every channel carries the same link")
			link = found
		}
		r := h.do(req{method: http.MethodGet, path: link})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "image/png", r.Header.Get("Content-Type"))
		keyed := h.do(req{method: http.MethodGet, path: "/v1/visits/" + id + "/pass.png", key: h.seed.Keys.SecretTest})
		require.Equal(t, decodeQR(t, keyed.Raw), decodeQR(t, r.Raw), "the same pass as the keyed image")

		tampered := link[:len(link)-2] + "AA"
		if tampered == link {
			tampered = link[:len(link)-2] + "BB"
		}
		requireProblem(t, h.do(req{method: http.MethodGet, path: tampered}), http.StatusNotFound, "not_found")
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/passes/" + id}), http.StatusNotFound, "not_found")

		require.Equal(t, http.StatusOK, action(h, id, "cancel", nil).Status)
		requireProblem(t, h.do(req{method: http.MethodGet, path: link}), http.StatusConflict, "invalid_state")
	})
}

func TestVisits_WalkInIsCheckedInWithoutExpectedTimes(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, func(b map[string]any) { delete(b, "expected_at"); delete(b, "host_id"); b["walk_in"] = true })
		require.Equal(t, "walk_in", v["source"])
		require.Equal(t, "checked_in", v["status"])
		require.Equal(t, "2026-11-21T09:00:00.000Z", v["checked_in_at"])
		require.Nil(t, v["expected_at"])
		require.Nil(t, v["expected_until"])
		require.Equal(t, true, v["needs_someone"], "nobody hosts it yet")
		id := v["id"].(string)

		require.Equal(t, http.StatusOK, action(h, id, "check-out", nil).Status)
		r := action(h, id, "re-enter", nil)
		require.Equal(t, http.StatusCreated, r.Status, "the pass works for the rest of the day: %s", r.Raw)
		require.Equal(t, http.StatusOK, action(h, r.Body["id"].(string), "check-out", nil).Status)
		h.at(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
		requireProblem(t, action(h, r.Body["id"].(string), "re-enter", nil), http.StatusConflict, "invalid_state", "pass_rule.expired")

		requireProblem(t, h.post("/v1/visits", visitBody(h, func(b map[string]any) { b["walk_in"] = true })),
			http.StatusUnprocessableEntity, "validation_failed", "body.expected_at")
		requireProblem(t, h.post("/v1/visits", visitBody(h, func(b map[string]any) { delete(b, "expected_at") })),
			http.StatusUnprocessableEntity, "validation_failed", "body.expected_at")
		r = h.do(req{method: http.MethodPost, path: "/v1/visits", key: h.seed.Keys.PublishableTest,
			body: visitBody(h, func(b map[string]any) { delete(b, "expected_at"); b["walk_in"] = true })})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.walk_in")
	})
}
