package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// The harness clock starts on Saturday 2026-11-21 09:00 UTC; London is on
// UTC in November. Monday 23rd is the first weekday.
const monday9 = "2026-11-23T09:00:00Z"

// createBookingType makes a booking type at the first (London) site:
// meetings, 30-minute slots from 09:00 to 12:00 on weekdays, 2 per slot,
// public, confirmed at once; change alters the body.
func createBookingType(t *testing.T, h *harness, change func(map[string]any)) map[string]any {
	t.Helper()
	b := map[string]any{
		"name": "Open office hours", "site_id": h.seed.Test.Sites[0].ID, "visit_type": "meeting",
		"public": true, "slot_minutes": 30, "capacity": 2,
		"opening_hours": []map[string]any{{"days": []string{"mon", "tue", "wed", "thu", "fri"}, "from": "09:00", "until": "12:00"}},
		"host_id":       h.seed.Test.People[0],
	}
	if change != nil {
		change(b)
	}
	r := h.post("/v1/booking-types", b)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.Body
}

func bookingBody(typeID, startsAt string, change func(map[string]any)) map[string]any {
	b := map[string]any{
		"booking_type_id": typeID, "starts_at": startsAt,
		"visitor": map[string]any{"name": "Vera Visitor", "email": "vera@example.org", "phone": "+447700900123"},
	}
	if change != nil {
		change(b)
	}
	return b
}

func book(t *testing.T, h *harness, typeID, startsAt string, change func(map[string]any)) map[string]any {
	t.Helper()
	r := h.post("/v1/bookings", bookingBody(typeID, startsAt, change))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.Body
}

func bookingAction(h *harness, id, name string, body any) response {
	h.t.Helper()
	return h.post("/v1/bookings/"+id+"/"+name, body)
}

// remaining returns the places left in the slot starting at startsAt.
func remaining(t *testing.T, h *harness, typeID, startsAt string) float64 {
	t.Helper()
	day := startsAt[:10]
	r := h.get("/v1/booking-types/" + typeID + "/slots?from=" + day + "&to=" + day)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	want, err := time.Parse(time.RFC3339, startsAt)
	require.NoError(t, err)
	for _, s := range r.Body["data"].([]any) {
		slot := s.(map[string]any)
		at, err := time.Parse(time.RFC3339, slot["starts_at"].(string))
		require.NoError(t, err)
		if at.Equal(want) {
			return slot["remaining"].(float64)
		}
	}
	t.Fatalf("no slot at %s", startsAt)
	return 0
}

func TestBookingTypes_CreateReadAndValidate(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, nil)
		for _, key := range []string{"id", "name", "site_id", "visit_type", "public", "public_form", "requires_confirmation",
			"confirmation_window_hours", "slot_minutes", "capacity", "opening_hours", "host_id", "team_id", "archived", "created_at", "updated_at"} {
			require.Contains(t, bt, key)
		}
		require.Equal(t, float64(24), bt["confirmation_window_hours"], "the default window")
		require.Equal(t, false, bt["requires_confirmation"])
		require.NotNil(t, bt["public_form"], "a public type shows the form visitors fill in")
		require.Equal(t, []any{"mon", "tue", "wed", "thu", "fri"}, bt["opening_hours"].([]any)[0].(map[string]any)["days"])
		require.Equal(t, bt, h.get("/v1/booking-types/"+bt["id"].(string)).Body)

		private := createBookingType(t, h, func(b map[string]any) { b["public"] = false })
		require.Nil(t, private["public_form"], "null for private types")

		pk := h.seed.Keys.PublishableTest
		r := h.do(req{method: http.MethodGet, path: "/v1/booking-types", key: pk})
		require.Equal(t, []string{bt["id"].(string)}, idsOf(data(t, r)), "a publishable key sees public types only")
		require.Equal(t, h.seed.Test.People[0], bt["host_id"], "a secret key sees who hosts")
		for _, seen := range []map[string]any{data(t, r)[0], h.do(req{method: http.MethodGet, path: "/v1/booking-types/" + bt["id"].(string), key: pk}).Body} {
			require.Nil(t, seen["host_id"], "a publishable key is not shown who hosts")
			require.Nil(t, seen["team_id"])
			require.Equal(t, bt["public_form"], seen["public_form"], "it sees what a booking page needs")
		}
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/booking-types/" + private["id"].(string), key: pk}), http.StatusNotFound, "not_found")
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/booking-types/" + private["id"].(string) + "/slots?from=2026-11-23&to=2026-11-23", key: pk}),
			http.StatusNotFound, "not_found")

		r = h.post("/v1/booking-types", map[string]any{"public": "yes"})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed",
			"body.public", "body.name", "body.site_id", "body.visit_type", "body.slot_minutes", "body.opening_hours")
		r = h.post("/v1/booking-types", map[string]any{"name": "x", "site_id": h.seed.Test.Sites[0].ID, "visit_type": "nope",
			"slot_minutes": 60, "capacity": 0, "host_id": h.seed.Test.People[0], "team_id": h.seed.Test.Teams[1],
			"opening_hours": []map[string]any{{"days": []string{"mon", "funday"}, "from": "09:00", "until": "09:30"}, {"days": []string{}, "from": "12:00", "until": "11:00"}}})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.visit_type", "body.capacity", "body.team_id",
			"body.opening_hours[0].days[1]", "body.opening_hours[0].until", // shorter than a slot
			"body.opening_hours[1].days", "body.opening_hours[1].until")

		r = h.patch("/v1/booking-types/"+bt["id"].(string), map[string]any{"capacity": 5, "archived": true})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, float64(5), r.Body["capacity"])
		require.Empty(t, data(t, h.do(req{method: http.MethodGet, path: "/v1/booking-types", key: pk})), "archived types are not offered")
		requireProblem(t, h.patch("/v1/booking-types/"+bt["id"].(string), map[string]any{"site_id": h.seed.Test.Sites[1].ID}),
			http.StatusUnprocessableEntity, "validation_failed", "body.site_id")
	})
}

func TestBookings_SlotsFillAndTheNextIsAConflict(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, nil)
		typeID := bt["id"].(string)
		pk := h.seed.Keys.PublishableTest

		r := h.do(req{method: http.MethodGet, path: "/v1/booking-types/" + typeID + "/slots?from=2026-11-21&to=2026-11-23", key: pk})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		slots := r.Body["data"].([]any)
		require.Len(t, slots, 6, "none at the weekend, six on Monday")
		first := slots[0].(map[string]any)
		require.Equal(t, "2026-11-23T09:00:00.000Z", first["starts_at"])
		require.Equal(t, "2026-11-23T09:30:00.000Z", first["ends_at"])
		require.Equal(t, float64(2), first["remaining"])

		r = h.do(req{method: http.MethodPost, path: "/v1/bookings", key: pk, body: bookingBody(typeID, monday9, nil)})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		b := r.Body
		require.Equal(t, "confirmed", b["status"], "no confirmation needed: confirmed at once")
		require.Nil(t, b["confirm_by"])
		require.NotNil(t, b["confirmed_at"])
		visit := h.get("/v1/visits/" + b["visit_id"].(string)).Body
		require.Equal(t, "booking", visit["source"])
		require.Equal(t, b["id"], visit["booking_id"])
		require.Equal(t, "2026-11-23T09:00:00.000Z", visit["expected_at"])
		require.Equal(t, "2026-11-23T09:30:00.000Z", visit["expected_until"])
		require.Equal(t, h.seed.Test.People[0], visit["host_id"], "the booking type's host")
		require.Equal(t, []any{"email", "sms"}, visit["pass"].(map[string]any)["channels"], "the pass is sent")
		require.Equal(t, float64(1), remaining(t, h, typeID, monday9))

		book(t, h, typeID, monday9, nil)
		require.Equal(t, float64(0), remaining(t, h, typeID, monday9))
		r = h.post("/v1/bookings", bookingBody(typeID, monday9, nil))
		requireProblem(t, r, http.StatusConflict, "conflict")
		require.Len(t, data(t, h.get("/v1/bookings?booking_type_id="+typeID)), 2, "the refused booking left nothing")

		for _, tc := range []struct {
			at  string
			loc string
		}{
			{"2026-11-23T09:10:00Z", "body.starts_at"}, // not a slot start
			{"2026-11-28T09:00:00Z", "body.starts_at"}, // Saturday
			{"2026-11-23T11:45:00Z", "body.starts_at"}, // past closing
			{"2026-11-20T09:00:00Z", "body.starts_at"}, // the past
		} {
			requireProblem(t, h.post("/v1/bookings", bookingBody(typeID, tc.at, nil)), http.StatusUnprocessableEntity, "validation_failed", tc.loc)
		}
		requireProblem(t, h.post("/v1/bookings", map[string]any{"visitor": map[string]any{}}), http.StatusUnprocessableEntity,
			"validation_failed", "body.booking_type_id", "body.starts_at", "body.visitor.name")
	})
}

func TestBookings_PendingHoldsItsSlotUntilConfirmed(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, func(b map[string]any) { b["requires_confirmation"] = true; b["capacity"] = 1 })
		typeID := bt["id"].(string)
		b := book(t, h, typeID, monday9, nil)
		require.Equal(t, "pending", b["status"])
		require.Nil(t, b["visit_id"], "no visit until confirmed")
		require.Equal(t, "2026-11-22T09:00:00.000Z", b["confirm_by"], "24 hours after booking")
		require.Equal(t, float64(0), remaining(t, h, typeID, monday9), "a pending booking holds its slot")
		requireProblem(t, h.post("/v1/bookings", bookingBody(typeID, monday9, nil)), http.StatusConflict, "conflict")

		r := bookingAction(h, b["id"].(string), "confirm", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "confirmed", r.Body["status"])
		require.NotNil(t, r.Body["confirmed_at"])
		visit := h.get("/v1/visits/" + r.Body["visit_id"].(string)).Body
		require.Equal(t, b["id"], visit["booking_id"])
		require.Equal(t, "booking", visit["source"])
		requireProblem(t, bookingAction(h, b["id"].(string), "confirm", nil), http.StatusConflict, "invalid_state")
		requireProblem(t, bookingAction(h, b["id"].(string), "decline", nil), http.StatusConflict, "invalid_state")
	})
}

func TestBookings_ConfirmByIsNeverAfterTheSlot(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, func(b map[string]any) { b["requires_confirmation"] = true; b["confirmation_window_hours"] = 72 })
		b := book(t, h, bt["id"].(string), monday9, nil)
		require.Equal(t, "2026-11-23T09:00:00.000Z", b["confirm_by"])
	})
}

func TestBookings_DeclineFreesTheSlotAndTellsTheVisitor(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, func(b map[string]any) { b["requires_confirmation"] = true; b["capacity"] = 1 })
		typeID := bt["id"].(string)
		b := book(t, h, typeID, monday9, nil)
		before := len(data(t, h.get("/v1/messages?limit=100")))
		r := bookingAction(h, b["id"].(string), "decline", map[string]any{"reason": "Fully booked that day"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "declined", r.Body["status"])
		require.Equal(t, "Fully booked that day", r.Body["decline_reason"])
		require.NotNil(t, r.Body["declined_at"])
		require.Nil(t, r.Body["visit_id"])
		require.Equal(t, float64(1), remaining(t, h, typeID, monday9))
		msgs := data(t, h.get("/v1/messages?limit=100"))
		require.Len(t, msgs, before+2, "the visitor is told by email and SMS")
		var told []string
		for _, m := range msgs {
			if contains(m["body"].(string), "Fully booked that day") {
				require.Nil(t, m["visit_id"], "a booking's message is about no visit")
				told = append(told, m["to"].(string))
			}
		}
		require.ElementsMatch(t, []string{"vera@example.org", "+447700900123"}, told)
		requireProblem(t, bookingAction(h, b["id"].(string), "confirm", nil), http.StatusConflict, "invalid_state")
	})
}

func TestBookings_ExpireAtConfirmBy(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, func(b map[string]any) {
			b["requires_confirmation"] = true
			b["capacity"] = 1
			b["confirmation_window_hours"] = 2
		})
		typeID := bt["id"].(string)
		b := book(t, h, typeID, monday9, nil)
		id := b["id"].(string)
		require.Equal(t, "2026-11-21T11:00:00.000Z", b["confirm_by"])
		h.at(time.Date(2026, 11, 21, 10, 59, 0, 0, time.UTC))
		require.Equal(t, "pending", h.get("/v1/bookings/" + id).Body["status"])

		h.at(time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC))
		require.Equal(t, "expired", h.get("/v1/bookings/" + id).Body["status"], "expired from confirm_by, before the sweeper runs")
		require.Equal(t, []string{id}, idsOf(data(t, h.get("/v1/bookings?status=expired"))))
		require.Empty(t, data(t, h.get("/v1/bookings?status=pending")))
		requireProblem(t, bookingAction(h, id, "confirm", nil), http.StatusConflict, "invalid_state")
		require.Equal(t, float64(1), remaining(t, h, typeID, monday9), "an expired booking frees its slot")

		require.NoError(t, h.api.Purge(context.Background()))
		stored, err := h.store.Booking(context.Background(), h.testTenant(), id)
		require.NoError(t, err)
		require.Equal(t, cloud.BookingExpired, stored.Status, "the sweeper stores the expiry")
		book(t, h, typeID, monday9, nil)
	})
}

func TestBookings_CancelAndRescheduleOnlyConfirmed(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, func(b map[string]any) { b["requires_confirmation"] = true; b["capacity"] = 1 })
		typeID := bt["id"].(string)
		pending := book(t, h, typeID, monday9, nil)
		requireProblem(t, bookingAction(h, pending["id"].(string), "cancel", nil), http.StatusConflict, "invalid_state")
		r := bookingAction(h, pending["id"].(string), "reschedule", map[string]any{"starts_at": "2026-11-23T10:00:00Z"})
		requireProblem(t, r, http.StatusConflict, "invalid_state")
		require.Contains(t, r.Body["detail"], "pending")

		confirmed := bookingAction(h, pending["id"].(string), "confirm", nil).Body
		id, visitID := confirmed["id"].(string), confirmed["visit_id"].(string)
		other := book(t, h, typeID, "2026-11-23T11:00:00Z", nil)
		requireProblem(t, bookingAction(h, id, "reschedule", map[string]any{"starts_at": "2026-11-23T11:00:00Z"}),
			http.StatusConflict, "conflict")
		requireProblem(t, bookingAction(h, id, "reschedule", map[string]any{"starts_at": "2026-11-23T10:10:00Z"}),
			http.StatusUnprocessableEntity, "validation_failed", "body.starts_at")

		r = bookingAction(h, id, "reschedule", map[string]any{"starts_at": "2026-11-24T10:00:00Z"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "2026-11-24T10:00:00.000Z", r.Body["starts_at"])
		require.Equal(t, "2026-11-24T10:30:00.000Z", r.Body["ends_at"])
		visit := h.get("/v1/visits/" + visitID).Body
		require.Equal(t, "2026-11-24T10:00:00.000Z", visit["expected_at"], "the visit moves with its booking")
		require.Equal(t, float64(1), remaining(t, h, typeID, monday9), "the old slot is free")

		r = bookingAction(h, id, "cancel", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "cancelled", r.Body["status"])
		require.NotNil(t, r.Body["cancelled_at"])
		visit = h.get("/v1/visits/" + visitID).Body
		require.Equal(t, "cancelled", visit["status"], "its visit is cancelled with it")
		requireProblem(t, h.get("/v1/visits/"+visitID+"/pass.png"), http.StatusConflict, "invalid_state")
		require.Equal(t, float64(1), remaining(t, h, typeID, "2026-11-24T10:00:00Z"))
		require.Equal(t, "pending", h.get("/v1/bookings/" + other["id"].(string)).Body["status"])
	})
}

func TestReschedule_ToABookingForTheVisitor(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, nil)
		typeID := bt["id"].(string)
		mine := book(t, h, typeID, monday9, nil) // same email as visitBody's visitor
		theirs := book(t, h, typeID, monday9, func(b map[string]any) {
			b["visitor"] = map[string]any{"name": "Other Person", "email": "other@example.org"}
		})
		v := createVisit(t, h, nil)
		id := v["id"].(string)

		requireProblem(t, action(h, id, "reschedule", map[string]any{"booking_id": theirs["id"]}),
			http.StatusUnprocessableEntity, "validation_failed", "body.booking_id")
		require.Equal(t, http.StatusOK, bookingAction(h, theirs["id"].(string), "cancel", nil).Status)

		r := action(h, id, "reschedule", map[string]any{"booking_id": mine["id"], "note": "Booked a slot instead"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "cancelled", r.Body["status"])
		to := r.Body["rescheduled_to"].(map[string]any)
		require.Equal(t, mine["id"], to["booking_id"])
		require.Nil(t, to["visit_id"])
		requireProblem(t, action(h, id, "check-in", map[string]any{"override_pass_rules": true}), http.StatusConflict, "invalid_state", "pass_rule.ended")

		other := createVisit(t, h, nil)
		requireProblem(t, action(h, other["id"].(string), "reschedule", map[string]any{"booking_id": theirs["id"]}),
			http.StatusUnprocessableEntity, "validation_failed", "body.booking_id") // cancelled booking
	})
}

func TestBookings_PublicFormOnly(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		bt := createBookingType(t, h, func(b map[string]any) { b["visit_type"] = "site_tour" })
		pk := h.seed.Keys.PublishableTest
		r := h.do(req{method: http.MethodPost, path: "/v1/bookings", key: pk, body: bookingBody(bt["id"].(string), monday9, func(b map[string]any) {
			b["custom_fields"] = map[string]any{"company": "Acme", "badge_number": 7}
		})})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.custom_fields.badge_number")
		r = h.do(req{method: http.MethodPost, path: "/v1/bookings", key: pk, body: bookingBody(bt["id"].(string), monday9, func(b map[string]any) {
			b["custom_fields"] = map[string]any{"company": "Acme", "id_number": "X1", "nda": true}
		})})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.NotContains(t, r.Body["custom_fields"], "id_number", "sensitive answers are left out")
		require.Equal(t, "Acme", r.Body["custom_fields"].(map[string]any)["company"])
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/bookings/" + r.Body["id"].(string), key: pk}),
			http.StatusForbidden, "forbidden")
	})
}

func TestBookings_OtherTenantIsNotFound(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, nil)
		b := book(t, h, bt["id"].(string), monday9, nil)
		live := func(method, path string) response {
			return h.do(req{method: method, path: path, key: h.seed.Keys.SecretLive})
		}
		requireProblem(t, live(http.MethodGet, "/v1/bookings/"+b["id"].(string)), http.StatusNotFound, "not_found")
		requireProblem(t, live(http.MethodPost, "/v1/bookings/"+b["id"].(string)+"/cancel"), http.StatusNotFound, "not_found")
		requireProblem(t, live(http.MethodGet, "/v1/booking-types/"+bt["id"].(string)), http.StatusNotFound, "not_found")
		require.Empty(t, data(t, live(http.MethodGet, "/v1/bookings")))
	})
}

func TestBookings_ClosingTheVisitReleasesTheBooking(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, func(b map[string]any) { b["capacity"] = 1 })
		typeID := bt["id"].(string)

		b := book(t, h, typeID, monday9, nil)
		require.Equal(t, http.StatusOK, action(h, b["visit_id"].(string), "cancel", nil).Status)
		got := h.get("/v1/bookings/" + b["id"].(string)).Body
		require.Equal(t, "cancelled", got["status"], "a cancelled visit cancels its booking")
		require.Equal(t, float64(1), remaining(t, h, typeID, monday9))

		b = book(t, h, typeID, monday9, nil)
		r := action(h, b["visit_id"].(string), "reschedule", map[string]any{"expected_at": "2026-11-26T15:00:00Z"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "cancelled", h.get("/v1/bookings/" + b["id"].(string)).Body["status"], "a visit moved off its slot frees it")
		require.Equal(t, float64(1), remaining(t, h, typeID, monday9))
		next := h.get("/v1/visits/" + r.Body["rescheduled_to"].(map[string]any)["visit_id"].(string)).Body
		require.Nil(t, next["booking_id"], "the new time is not the booking's slot")
	})
}
