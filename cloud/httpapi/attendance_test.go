package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// punchAt posts a terminal punch and returns the response.
func punchAt(h *harness, person, site, kind string, at time.Time, change func(map[string]any)) response {
	h.t.Helper()
	b := map[string]any{"person_id": person, "site_id": site, "kind": kind, "source": "terminal", "occurred_at": at.UTC().Format(time.RFC3339Nano)}
	if change != nil {
		change(b)
	}
	return h.post("/v1/attendance-events", b)
}

func mustPunch(t *testing.T, h *harness, person, site, kind string, at time.Time) map[string]any {
	t.Helper()
	r := punchAt(h, person, site, kind, at, nil)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.Body
}

// london is the seeded site at Europe/London with an entry and an exit
// gate.
func london(h *harness) cloud.SeedSite { return h.seed.Test.Sites[0] }

// A punch keeps the device's time and the cloud's, lands on the site's
// local day, fires attendance.punched, and a second of the same kind at
// the same place within a minute is the first one again.
func TestAttendance_PunchesAreRecordedOnceAndListed(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site, person := london(h), h.seed.Test.People[0]
		other := h.seed.Test.People[1]
		in := time.Date(2026, 11, 20, 23, 30, 0, 0, time.UTC) // 23:30 in London: still the 20th
		p := mustPunch(t, h, person, site.ID, "in", in)
		require.Regexp(t, `^att_[0-7][0-9a-hjkmnp-tv-z]{25}$`, p["id"])
		require.Equal(t, "2026-11-20", p["date"])
		require.Equal(t, "2026-11-20T23:30:00.000Z", p["occurred_at"])
		require.Equal(t, "2026-11-21T09:00:00.000Z", p["received_at"])
		require.Equal(t, "terminal", p["source"])
		require.Equal(t, false, p["clock_skewed"])
		require.Nil(t, p["clock_skew_seconds"])

		again := punchAt(h, person, site.ID, "in", in.Add(40*time.Second), nil)
		require.Equal(t, http.StatusOK, again.Status, "a repeat within a minute: %s", again.Raw)
		require.Equal(t, p["id"], again.Body["id"])
		later := mustPunch(t, h, person, site.ID, "in", in.Add(61*time.Second))
		require.NotEqual(t, p["id"], later["id"], "61 s later is another punch")
		viaGate := punchAt(h, person, site.ID, "in", in.Add(10*time.Second), func(b map[string]any) { b["gate_id"] = site.Gates[0] })
		require.Equal(t, http.StatusCreated, viaGate.Status, "another gate (here: a named gate against none) is another punch: %s", viaGate.Raw)
		out := mustPunch(t, h, person, site.ID, "out", in.Add(8*time.Hour))
		otherIn := mustPunch(t, h, other, site.ID, "in", in.Add(time.Hour))

		rows := data(t, h.get("/v1/attendance-events?person_id="+person))
		require.Equal(t, []string{out["id"].(string), later["id"].(string), viaGate.Body["id"].(string), p["id"].(string)}, idsOf(rows),
			"newest (occurred_at) first")
		page := h.get("/v1/attendance-events?person_id=" + person + "&limit=3")
		require.Len(t, data(t, page), 3)
		next := data(t, h.get("/v1/attendance-events?person_id="+person+"&limit=3&cursor="+page.Body["next_cursor"].(string)))
		require.Equal(t, []string{p["id"].(string)}, idsOf(next))
		window := data(t, h.get("/v1/attendance-events?from=2026-11-21T00:00:00Z&to=2026-11-21T07:30:00Z"))
		require.Equal(t, []string{otherIn["id"].(string)}, idsOf(window), "from inclusive, to exclusive")
		window = data(t, h.get("/v1/attendance-events?from=2026-11-21T00:00:00Z&to=2026-11-21T07:30:00.001Z"))
		require.Equal(t, []string{out["id"].(string), otherIn["id"].(string)}, idsOf(window))
		got := h.get("/v1/attendance-events/" + p["id"].(string))
		require.Equal(t, http.StatusOK, got.Status)
		require.Equal(t, p, got.Body)

		types := typesOf(events(t, h, "type=attendance.punched"), p["id"].(string))
		require.Equal(t, []string{"attendance.punched"}, types, "one event for the punch, none for its repeat")
	})
}

// GET /attendance-summaries: per person and day, first in, last out and
// minutes on site; a stay that ends after midnight counts on its first day.
func TestAttendance_Summaries(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site, person := london(h), h.seed.Test.People[0]
		day := time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC)
		mustPunch(t, h, person, site.ID, "in", day.Add(8*time.Hour))
		mustPunch(t, h, person, site.ID, "out", day.Add(12*time.Hour))
		mustPunch(t, h, person, site.ID, "in", day.Add(13*time.Hour))
		mustPunch(t, h, person, site.ID, "out", day.Add(17*time.Hour+30*time.Minute))
		// A night shift: in on the 19th at 22:00, out on the 20th at 06:00.
		mustPunch(t, h, person, site.ID, "in", day.Add(24*time.Hour+22*time.Hour))
		mustPunch(t, h, person, site.ID, "out", day.Add(48*time.Hour+6*time.Hour))
		// An out with no in.
		mustPunch(t, h, person, site.ID, "out", day.Add(72*time.Hour+9*time.Hour))

		rows := data(t, h.get("/v1/attendance-summaries?person_id="+person+"&from=2026-11-18&to=2026-11-21"))
		byDay := map[string]map[string]any{}
		for _, r := range rows {
			byDay[r["date"].(string)] = r
		}
		require.Equal(t, float64(4*60+4*60+30), byDay["2026-11-18"]["minutes"])
		require.Equal(t, "2026-11-18T08:00:00.000Z", byDay["2026-11-18"]["first_in"])
		require.Equal(t, "2026-11-18T17:30:00.000Z", byDay["2026-11-18"]["last_out"])
		require.Equal(t, float64(4), byDay["2026-11-18"]["punches"])
		require.Equal(t, float64(8*60), byDay["2026-11-19"]["minutes"], "the night counts on the day it began")
		require.Equal(t, "2026-11-20T06:00:00.000Z", byDay["2026-11-19"]["last_out"])
		require.Equal(t, float64(0), byDay["2026-11-20"]["minutes"])
		require.Nil(t, byDay["2026-11-20"]["first_in"])
		require.Equal(t, float64(1), byDay["2026-11-21"]["unpaired"])
		require.Equal(t, []string{"2026-11-21", "2026-11-20", "2026-11-19", "2026-11-18"}, []string{
			rows[0]["date"].(string), rows[1]["date"].(string), rows[2]["date"].(string), rows[3]["date"].(string)}, "newest day first")

		requireProblem(t, h.get("/v1/attendance-summaries?from=2026-11-18"), http.StatusUnprocessableEntity, "validation_failed", "query.to")
		requireProblem(t, h.get("/v1/attendance-summaries?from=2026-11-18&to=2026-11-17"), http.StatusUnprocessableEntity, "validation_failed", "query.to")
		requireProblem(t, h.get("/v1/attendance-summaries?from=2026-01-01&to=2026-12-31"), http.StatusUnprocessableEntity, "validation_failed", "query.to")
		requireProblem(t, h.get("/v1/attendance-summaries?from=2026-11-31&to=2026-12-01"), http.StatusUnprocessableEntity, "validation_failed", "query.from")
	})
}

// A phone punch must come from inside the site's geofence or one of its
// Wi-Fi networks; a terminal punch is never checked.
func TestAttendance_PhoneLocationCheck(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site, person := london(h), h.seed.Test.People[0]
		at := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
		phone := func(loc, wifi map[string]any) response {
			return punchAt(h, person, site.ID, "in", at, func(b map[string]any) {
				b["source"] = "phone"
				if loc != nil {
					b["location"] = loc
				}
				if wifi != nil {
					b["wifi"] = wifi
				}
				at = at.Add(2 * time.Minute) // not a repeat
			})
		}
		// No zone yet: a phone punch cannot be checked.
		r := phone(map[string]any{"latitude": 51.5054, "longitude": -0.0235}, nil)
		requireProblem(t, r, http.StatusUnprocessableEntity, "location_check_failed")

		s := h.patch("/v1/sites/"+site.ID, map[string]any{
			"geofence":      map[string]any{"latitude": 51.5054, "longitude": -0.0235, "radius_m": 150},
			"wifi_networks": []any{map[string]any{"ssid": "HQ-Staff", "bssid": "3C:22:FB:12:34:56"}, map[string]any{"ssid": "HQ-Guest"}},
		})
		require.Equal(t, http.StatusOK, s.Status, "%s", s.Raw)
		require.Equal(t, "3c:22:fb:12:34:56", s.Body["wifi_networks"].([]any)[0].(map[string]any)["bssid"])

		require.Equal(t, http.StatusCreated, phone(map[string]any{"latitude": 51.5058, "longitude": -0.0240, "accuracy_m": 12}, nil).Status,
			"about 50 m from the centre")
		requireProblem(t, phone(map[string]any{"latitude": 51.5100, "longitude": -0.0235}, nil), http.StatusUnprocessableEntity, "location_check_failed")
		require.Equal(t, http.StatusCreated, phone(nil, map[string]any{"ssid": "anything", "bssid": "3c:22:fb:12:34:56"}).Status, "the staff access point")
		requireProblem(t, phone(nil, map[string]any{"ssid": "HQ-Staff", "bssid": "00:11:22:33:44:55"}), http.StatusUnprocessableEntity,
			"location_check_failed", []string{}...)
		require.Equal(t, http.StatusCreated, phone(nil, map[string]any{"ssid": "HQ-Guest"}).Status, "a network named without an access point")
		requireProblem(t, phone(nil, nil), http.StatusUnprocessableEntity, "validation_failed", "body.location")

		far := punchAt(h, person, site.ID, "in", at.Add(time.Hour), func(b map[string]any) {
			b["location"] = map[string]any{"latitude": 40.7, "longitude": -74.0}
		})
		require.Equal(t, http.StatusCreated, far.Status, "terminal punches never get location_check_failed: %s", far.Raw)
		out := punchAt(h, person, site.ID, "out", at.Add(2*time.Hour), func(b map[string]any) {
			b["source"] = "phone"
			b["location"] = map[string]any{"latitude": 40.7, "longitude": -74.0}
		})
		require.Equal(t, http.StatusCreated, out.Status, "a phone clock-out is kept wherever it was made: %s", out.Raw)
		require.Equal(t, 40.7, out.Body["location"].(map[string]any)["latitude"])
	})
}

// A device clock further than two minutes from the cloud's is flagged.
func TestAttendance_ClockSkewFlagged(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site, person := london(h), h.seed.Test.People[0]
		now := h.clock.Now()
		ok := punchAt(h, person, site.ID, "in", now.Add(-time.Hour), func(b map[string]any) {
			b["sent_at"] = now.Add(90 * time.Second).Format(time.RFC3339)
		})
		require.Equal(t, http.StatusCreated, ok.Status, "%s", ok.Raw)
		require.Equal(t, float64(90), ok.Body["clock_skew_seconds"])
		require.Equal(t, false, ok.Body["clock_skewed"])
		ahead := punchAt(h, person, site.ID, "out", now.Add(-time.Minute), func(b map[string]any) {
			b["sent_at"] = now.Add(10 * time.Minute).Format(time.RFC3339)
		})
		require.Equal(t, float64(600), ahead.Body["clock_skew_seconds"])
		require.Equal(t, true, ahead.Body["clock_skewed"])
		future := punchAt(h, person, site.ID, "in", now.Add(30*time.Minute), nil)
		require.Equal(t, http.StatusCreated, future.Status, "%s", future.Raw)
		require.Equal(t, true, future.Body["clock_skewed"], "a punch from half an hour ahead: the device's clock is fast")
	})
}

// Every problem with a punch is reported, each at its field.
func TestAttendance_PunchErrors(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site, person := london(h), h.seed.Test.People[0]
		other := h.seed.Test.Sites[1]
		requireProblem(t, h.post("/v1/attendance-events", map[string]any{}), http.StatusUnprocessableEntity, "validation_failed",
			"body.person_id", "body.site_id", "body.kind", "body.source", "body.occurred_at")
		r := punchAt(h, person, site.ID, "sideways", h.clock.Now(), func(b map[string]any) {
			b["source"] = "gate"
			b["gate_id"] = other.Gates[0]
			b["wifi"] = map[string]any{"bssid": "not-a-mac"}
			b["extra"] = true
		})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.kind", "body.source", "body.gate_id", "body.wifi.bssid", "body.extra")
		requireProblem(t, punchAt(h, person, site.ID, "in", h.clock.Now().Add(-500*24*time.Hour), nil), http.StatusUnprocessableEntity,
			"validation_failed", "body.occurred_at")
		requireProblem(t, punchAt(h, person, site.ID, "in", h.clock.Now().Add(48*time.Hour), nil), http.StatusUnprocessableEntity,
			"validation_failed", "body.occurred_at")
		requireProblem(t, punchAt(h, "person_01h2xcejqtf2nbrexx3vqjhp41", site.ID, "in", h.clock.Now(), nil), http.StatusUnprocessableEntity,
			"validation_failed", "body.person_id")
		d := h.post("/v1/people/"+person+"/deactivate", nil)
		require.Equal(t, http.StatusOK, d.Status, "%s", d.Raw)
		requireProblem(t, punchAt(h, person, site.ID, "in", h.clock.Now(), nil), http.StatusUnprocessableEntity, "validation_failed", "body.person_id")
		requireProblem(t, h.do(req{method: http.MethodPost, path: "/v1/attendance-events", key: h.seed.Keys.SecretTest, noIdem: true,
			body: map[string]any{}}), http.StatusUnprocessableEntity, "validation_failed", "header.Idempotency-Key")
		requireProblem(t, h.get("/v1/attendance-events/att_01h2xcejqtf2nbrexx3vqjhp41"), http.StatusNotFound, "not_found")
		requireProblem(t, h.get("/v1/attendance-events/visit_01h2xcejqtf2nbrexx3vqjhp41"), http.StatusUnprocessableEntity, "validation_failed", "path.attendance_event_id")
		requireProblem(t, h.get("/v1/attendance-events?from=yesterday"), http.StatusUnprocessableEntity, "validation_failed", "query.from")
	})
}

// GET /timesheet-periods as the spec says: newest first, from and to,
// limit and cursor, counts; periods follow on from each other.
func TestTimesheetPeriods_List(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		s := h.patch("/v1/attendance-settings", map[string]any{"timezone": "Europe/London",
			"periods": map[string]any{"kind": "weekly", "weekday": "monday", "payroll_days": 5}})
		require.Equal(t, http.StatusOK, s.Status, "%s", s.Raw)

		rows := data(t, h.get("/v1/timesheet-periods?limit=100"))
		require.GreaterOrEqual(t, len(rows), 5, "the current week and at least 31 days ahead")
		for i, p := range rows {
			require.Regexp(t, `^tsp_[0-7][0-9a-hjkmnp-tv-z]{25}$`, p["id"])
			require.Equal(t, "weekly", p["kind"])
			start, _ := time.Parse(time.DateOnly, p["starts_on"].(string))
			end, _ := time.Parse(time.DateOnly, p["ends_on"].(string))
			payroll, _ := time.Parse(time.DateOnly, p["payroll_on"].(string))
			require.Equal(t, time.Monday, start.Weekday())
			require.Equal(t, 6*24*time.Hour, end.Sub(start))
			require.Equal(t, end.AddDate(0, 0, 5), payroll)
			if i > 0 {
				newer, _ := time.Parse(time.DateOnly, rows[i-1]["starts_on"].(string))
				require.Equal(t, end.AddDate(0, 0, 1), newer, "newest first, no gap, no overlap")
			}
			require.Equal(t, map[string]any{"open": float64(0), "to_confirm": float64(0), "to_approve": float64(0), "approved": float64(0)}, p["counts"])
			require.Nil(t, p["closed_at"])
			require.Nil(t, p["approved_at"])
		}
		last := rows[len(rows)-1]
		require.Equal(t, "2026-11-16", last["starts_on"], "the first period holds today")
		require.Equal(t, "open", last["status"])
		require.Equal(t, "upcoming", rows[0]["status"])
		require.Equal(t, "16–22 Nov 2026", last["label"])

		mustPunch(t, h, h.seed.Test.People[0], london(h).ID, "in", time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC))
		mustPunch(t, h, h.seed.Test.People[1], london(h).ID, "in", time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC))
		cur := data(t, h.get("/v1/timesheet-periods?from=2026-11-22&to=2026-11-22"))
		require.Len(t, cur, 1, "from: ending on or after; to: starting on or before")
		require.Equal(t, float64(2), cur[0]["counts"].(map[string]any)["open"])
		two := data(t, h.get("/v1/timesheet-periods?from=2026-11-22&to=2026-11-23"))
		require.Len(t, two, 2)
		require.Equal(t, "2026-11-23", two[0]["starts_on"])

		page := h.get("/v1/timesheet-periods?limit=2")
		require.Equal(t, true, page.Body["has_more"])
		next := data(t, h.get("/v1/timesheet-periods?limit=2&cursor="+page.Body["next_cursor"].(string)))
		require.Equal(t, idsOf(rows[2:4]), idsOf(next))
		requireProblem(t, h.get("/v1/timesheet-periods?limit=2&from=2026-11-22&cursor="+page.Body["next_cursor"].(string)),
			http.StatusUnprocessableEntity, "validation_failed", "query.cursor")
		requireProblem(t, h.get("/v1/timesheet-periods?from=22-11-2026&to=x&limit=0&sort=asc"), http.StatusUnprocessableEntity, "validation_failed",
			"query.from", "query.to", "query.limit", "query.sort")
		one := h.get("/v1/timesheet-periods/" + last["id"].(string))
		require.Equal(t, http.StatusOK, one.Status)
		requireProblem(t, h.get("/v1/timesheet-periods/tsp_01h2xcejqtf2nbrexx3vqjhp41"), http.StatusNotFound, "not_found")
	})
}

// The scope and plan rules of GET /timesheet-periods: attendance:read;
// Pro or Enterprise in live mode, every plan in test mode.
func TestTimesheetPeriods_ScopeAndPlan(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withPlan(cloud.PlanGrowth))
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/timesheet-periods", key: h.seed.Keys.SecretLive}), http.StatusForbidden, "plan_required")
		require.Equal(t, http.StatusOK, h.get("/v1/timesheet-periods").Status, "test mode works on every plan")
		_, secret, err := h.svc.CreateKey(t.Context(), h.testTenant(), cloud.KindSecret, []cloud.Scope{cloud.ScopePeopleRead})
		require.NoError(t, err)
		r := h.do(req{method: http.MethodGet, path: "/v1/timesheet-periods", key: secret})
		requireProblem(t, r, http.StatusForbidden, "scope_missing")
		require.Contains(t, r.Body["detail"], "attendance:read")
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/timesheet-periods", key: h.seed.Keys.PublishableTest}), http.StatusForbidden, "forbidden")
	})
}

// A timesheet moves open → to_confirm (the period ended) → to_approve
// (confirmed) → approved, firing timesheet.to_confirm and
// timesheet.approved; the period is approved with its last timesheet.
func TestTimesheets_Lifecycle(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site, person := london(h), h.seed.Test.People[0]
		mustPunch(t, h, person, site.ID, "in", time.Date(2026, 11, 19, 8, 0, 0, 0, time.UTC))
		mustPunch(t, h, person, site.ID, "out", time.Date(2026, 11, 19, 16, 15, 0, 0, time.UTC))
		sheets := data(t, h.get("/v1/timesheets?person_id="+person))
		require.Len(t, sheets, 1)
		ts := sheets[0]
		require.Equal(t, "open", ts["status"])
		require.Equal(t, float64(8*60+15), ts["minutes"])
		id := ts["id"].(string)
		requireProblem(t, h.post("/v1/timesheets/"+id+"/confirm", nil), http.StatusConflict, "invalid_state")

		h.clock.Advance(2 * 24 * time.Hour) // Monday 23rd: the week of the 16th has ended (UTC by default)
		require.NoError(t, h.api.Purge(t.Context()), "the maintenance loop closes the period")
		stored, err := h.store.Timesheet(t.Context(), h.testTenant(), id)
		require.NoError(t, err)
		require.Equal(t, cloud.TimesheetToConfirm, stored.Status, "closed by the loop, before any read")
		period := data(t, h.get("/v1/timesheet-periods?from=2026-11-22&to=2026-11-22"))[0]
		require.Equal(t, "closed", period["status"])
		require.NotNil(t, period["closed_at"])
		require.Equal(t, map[string]any{"open": float64(0), "to_confirm": float64(1), "to_approve": float64(0), "approved": float64(0)}, period["counts"])

		requireProblem(t, h.post("/v1/timesheets/"+id+"/approve", nil), http.StatusConflict, "invalid_state")
		c := h.post("/v1/timesheets/"+id+"/confirm", nil)
		require.Equal(t, http.StatusOK, c.Status, "%s", c.Raw)
		require.Equal(t, "to_approve", c.Body["status"])
		require.NotNil(t, c.Body["confirmed_at"])
		require.Len(t, c.Body["days"], 1)
		requireProblem(t, h.post("/v1/timesheets/"+id+"/confirm", nil), http.StatusConflict, "invalid_state")
		a := h.post("/v1/timesheets/"+id+"/approve", nil)
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Raw)
		require.Equal(t, "approved", a.Body["status"])

		period = data(t, h.get("/v1/timesheet-periods?from=2026-11-22&to=2026-11-22"))[0]
		require.Equal(t, "approved", period["status"])
		require.NotNil(t, period["approved_at"])
		require.Equal(t, float64(1), period["counts"].(map[string]any)["approved"])
		require.Equal(t, []string{"timesheet.to_confirm", "timesheet.approved"}, typesOf(events(t, h, ""), id))
		requireProblem(t, h.post("/v1/timesheets/ts_01h2xcejqtf2nbrexx3vqjhp41/approve", nil), http.StatusNotFound, "not_found")
		requireProblem(t, h.post("/v1/timesheets/"+id+"/approve", map[string]any{"note": "x"}), http.StatusUnprocessableEntity, "validation_failed", "body.note")
	})
}

// A punch that arrives after its period closed lands in that period, and
// changes an approved timesheet back to to_confirm, audited.
func TestTimesheets_LatePunchReopens(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site, person, late := london(h), h.seed.Test.People[0], h.seed.Test.People[2]
		mustPunch(t, h, person, site.ID, "in", time.Date(2026, 11, 17, 8, 0, 0, 0, time.UTC))
		h.clock.Advance(3 * 24 * time.Hour)
		id := data(t, h.get("/v1/timesheets?person_id="+person))[0]["id"].(string)
		require.Equal(t, http.StatusOK, h.post("/v1/timesheets/"+id+"/confirm", nil).Status)
		require.Equal(t, http.StatusOK, h.post("/v1/timesheets/"+id+"/approve", nil).Status)
		require.Equal(t, "approved", data(t, h.get("/v1/timesheet-periods?from=2026-11-22&to=2026-11-22"))[0]["status"])

		// The out, from a device that was offline: the period is closed.
		mustPunch(t, h, person, site.ID, "out", time.Date(2026, 11, 17, 17, 0, 0, 0, time.UTC))
		got := h.get("/v1/timesheets/" + id)
		require.Equal(t, "to_confirm", got.Body["status"], "%s", got.Raw)
		require.Equal(t, float64(9*60), got.Body["minutes"])
		require.Nil(t, got.Body["approved_at"])
		period := data(t, h.get("/v1/timesheet-periods?from=2026-11-22&to=2026-11-22"))[0]
		require.Equal(t, "closed", period["status"])
		require.Nil(t, period["approved_at"])
		audit := data(t, h.get("/v1/audit-events?action=timesheet.reopened"))
		require.Len(t, audit, 1)
		require.Equal(t, id, audit[0]["object_id"])

		// Someone's first punch of a closed period: a timesheet to confirm.
		mustPunch(t, h, late, site.ID, "in", time.Date(2026, 11, 18, 8, 0, 0, 0, time.UTC))
		sheets := data(t, h.get("/v1/timesheets?person_id="+late))
		require.Len(t, sheets, 1)
		require.Equal(t, "to_confirm", sheets[0]["status"])
		require.Equal(t, period["id"], sheets[0]["period_id"])

		// Approve both again: the period is approved; then a third
		// person's first punch in it un-approves it.
		for _, ts := range []string{id, sheets[0]["id"].(string)} {
			require.Equal(t, http.StatusOK, h.post("/v1/timesheets/"+ts+"/confirm", nil).Status)
			require.Equal(t, http.StatusOK, h.post("/v1/timesheets/"+ts+"/approve", nil).Status)
		}
		require.Equal(t, "approved", data(t, h.get("/v1/timesheet-periods?from=2026-11-22&to=2026-11-22"))[0]["status"])
		mustPunch(t, h, h.seed.Test.People[3], site.ID, "in", time.Date(2026, 11, 19, 8, 0, 0, 0, time.UTC))
		period = data(t, h.get("/v1/timesheet-periods?from=2026-11-22&to=2026-11-22"))[0]
		require.Equal(t, "closed", period["status"], "a new timesheet to confirm: not all approved")
		require.Nil(t, period["approved_at"])
		require.Equal(t, float64(1), period["counts"].(map[string]any)["to_confirm"])
	})
}

// New period rules apply from the first period that has not started: the
// periods ahead are made again, the first bridging to the new rules, and
// they still follow on with no gap or overlap.
func TestAttendanceSettings_NewRulesBridge(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		g := h.get("/v1/attendance-settings")
		require.Equal(t, http.StatusOK, g.Status, "%s", g.Raw)
		require.Nil(t, g.Body["updated_at"], "the defaults until they are changed")
		require.Equal(t, "weekly", g.Body["periods"].(map[string]any)["kind"])
		require.Equal(t, http.StatusOK, h.get("/v1/timesheet-periods").Status) // periods exist under the defaults
		r := h.patch("/v1/attendance-settings", map[string]any{"periods": map[string]any{"kind": "monthly", "month_day": 1, "payroll_days": -3}})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		rows := data(t, h.get("/v1/timesheet-periods?limit=100"))
		oldest := rows[len(rows)-1]
		require.Equal(t, "2026-11-16", oldest["starts_on"], "the current week stays")
		require.Equal(t, "weekly", oldest["kind"])
		require.Equal(t, "2026-11-23", rows[len(rows)-2]["starts_on"], "a bridge to the month end")
		require.Equal(t, "2026-11-30", rows[len(rows)-2]["ends_on"])
		require.Equal(t, "2026-12-01", rows[len(rows)-3]["starts_on"])
		require.Equal(t, "December 2026", rows[len(rows)-3]["label"])
		require.Equal(t, "2026-12-28", rows[len(rows)-3]["payroll_on"])

		requireProblem(t, h.patch("/v1/attendance-settings", map[string]any{"timezone": "Mars/Olympus",
			"periods":  map[string]any{"kind": "daily"},
			"evidence": map[string]any{"face": "maybe", "retina": "off"}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.timezone", "body.periods.kind", "body.evidence.face", "body.evidence.retina")
		requireProblem(t, h.patch("/v1/attendance-settings", map[string]any{"periods": map[string]any{"kind": "weekly"}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.periods.weekday")
	})
}

var tinyJPEG = base64.StdEncoding.EncodeToString([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 'J', 'F', 'I', 'F', 0, 1, 0xFF, 0xD9})

// Evidence the organisation records only with consent needs the person's
// consent (403 consent_required without it, or after it is withdrawn);
// evidence it requires never returns it; evidence it does not record is
// refused.
func TestAttendanceEvidence_Consent(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		person := h.seed.Test.People[0]
		require.Equal(t, http.StatusOK, h.patch("/v1/attendance-settings", map[string]any{
			"evidence": map[string]any{"face": "consent", "selfie": "required", "location": "off"}}).Status)
		face := map[string]any{"kind": "face", "image": tinyJPEG}
		path := "/v1/people/" + person + "/attendance-evidence"

		r := h.post(path, face)
		requireProblem(t, r, http.StatusForbidden, "consent_required")
		require.Contains(t, r.Body["detail"], "face")

		c := h.patch("/v1/people/"+person+"/attendance-consent", map[string]any{"face": true})
		require.Equal(t, http.StatusOK, c.Status, "%s", c.Raw)
		require.Equal(t, true, c.Body["face"].(map[string]any)["given"])
		require.Equal(t, false, c.Body["selfie"].(map[string]any)["given"])
		ok := h.post(path, face)
		require.Equal(t, http.StatusCreated, ok.Status, "%s", ok.Raw)
		require.Equal(t, "consent", ok.Body["basis"])
		require.Equal(t, "image/jpeg", ok.Body["image"].(map[string]any)["content_type"])

		require.Equal(t, http.StatusOK, h.patch("/v1/people/"+person+"/attendance-consent", map[string]any{"face": false}).Status)
		requireProblem(t, h.post(path, face), http.StatusForbidden, "consent_required")
		audit := data(t, h.get("/v1/audit-events?action=attendance.consent_changed"))
		require.Len(t, audit, 2)
		require.Equal(t, map[string]any{"face": map[string]any{"given": false, "evidence_deleted": float64(1)}}, audit[0]["detail"],
			"withdrawing deletes the evidence kept on consent")

		selfie := h.post(path, map[string]any{"kind": "selfie", "image": tinyJPEG, "captured_at": "2026-11-21T08:59:00Z"})
		require.Equal(t, http.StatusCreated, selfie.Status, "required evidence never needs consent: %s", selfie.Raw)
		require.Equal(t, "required", selfie.Body["basis"])

		requireProblem(t, h.post(path, map[string]any{"kind": "location", "location": map[string]any{"latitude": 1, "longitude": 2}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.kind")
		requireProblem(t, h.post(path, map[string]any{"kind": "selfie", "image": "bm90IGFuIGltYWdl"}), http.StatusUnprocessableEntity,
			"validation_failed", "body.image")
		requireProblem(t, h.post(path, map[string]any{"kind": "selfie", "image": "%%%"}), http.StatusUnprocessableEntity, "validation_failed", "body.image")
		requireProblem(t, h.post(path, map[string]any{"kind": "iris"}), http.StatusUnprocessableEntity, "validation_failed", "body.kind")
		requireProblem(t, h.post("/v1/people/person_01h2xcejqtf2nbrexx3vqjhp41/attendance-evidence", face), http.StatusNotFound, "not_found")
		requireProblem(t, h.patch("/v1/people/"+person+"/attendance-consent", map[string]any{"face": "yes"}), http.StatusUnprocessableEntity,
			"validation_failed", "body.face")
		requireProblem(t, h.get("/v1/people/person_01h2xcejqtf2nbrexx3vqjhp41/attendance-consent"), http.StatusNotFound, "not_found")
	})
}

// Punches arriving at once, each needing periods that do not exist yet
// (the day moved on since the last were made), are each recorded once:
// the periods are made once, the same punch sent eight times at once is
// one punch, and every person gets one timesheet.
func TestAttendance_ConcurrentPunches(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site := london(h)
		people := idsOf(data(t, h.get("/v1/people?active=true&limit=8")))
		require.Len(t, people, 8)
		require.Equal(t, http.StatusOK, h.patch("/v1/attendance-settings", map[string]any{"timezone": "Europe/London"}).Status)
		h.clock.Advance(9 * 24 * time.Hour) // the periods ahead no longer reach 31 days
		at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
		status := make([]int, 16)
		idsSeen := make([]string, 16)
		raw := make([]string, 16)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				person := people[i%8]
				if i >= 8 {
					person = people[0] // eight copies of one punch
				}
				r := punchAt(h, person, site.ID, "in", at, nil)
				status[i], raw[i] = r.Status, string(r.Raw)
				idsSeen[i], _ = r.Body["id"].(string)
			})
		}
		wg.Wait()
		created := 0
		for i, st := range status {
			require.Contains(t, []int{http.StatusCreated, http.StatusOK}, st, "%s", raw[i])
			if st == http.StatusCreated {
				created++
			}
			if i >= 8 || i == 0 {
				require.Equal(t, idsSeen[0], idsSeen[i], "one punch for person 0")
			}
		}
		require.Equal(t, 8, created)
		periods := data(t, h.get("/v1/timesheet-periods?limit=100"))
		starts := map[string]bool{}
		for _, p := range periods {
			require.False(t, starts[p["starts_on"].(string)], "a period made twice")
			starts[p["starts_on"].(string)] = true
		}
		cur := data(t, h.get("/v1/timesheet-periods?from=2026-11-30&to=2026-11-30"))
		require.Equal(t, float64(8), cur[0]["counts"].(map[string]any)["open"])
	})
}
