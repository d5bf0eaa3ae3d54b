package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
)

// Visit moves: reschedule, hand-over, re-enter; erasing a visitor.

func (s *Server) rescheduleVisit(c echo.Context) error {
	var in cloud.RescheduleInput
	return s.visitAction(func(b *body) {
		in.ExpectedAt = b.timestamp("expected_at", false)
		in.ExpectedUntil = b.timestamp("expected_until", false)
		in.HostID = b.str("host_id")
		in.HostIDs = b.strings("host_ids")
		in.TeamID = b.str("team_id")
		in.Purpose = b.nullableStr("purpose")
		in.SendPass = b.boolean("send_pass")
		in.PassChannels = b.strings("pass_channels")
		in.BookingID = b.str("booking_id")
		in.Note = b.nullableStr("note")
	}, func(ctx context.Context, a cloud.Actor, id string) (cloud.Visit, error) {
		return s.svc.Reschedule(ctx, a, id, in)
	})(c)
}

func (s *Server) handOverVisit(c echo.Context) error {
	var in cloud.HandOverInput
	return s.visitAction(func(b *body) {
		in.To = b.str("to")
		in.PersonID = b.str("person_id")
		in.TeamID = b.str("team_id")
	}, func(ctx context.Context, a cloud.Actor, id string) (cloud.Visit, error) {
		return s.svc.HandOver(ctx, a, id, in)
	})(c)
}

// reEnterVisit answers 201 with the new visit, which has its own URL.
func (s *Server) reEnterVisit(c echo.Context) error {
	id, err := pathID(c, "visit_id", ids.Visit)
	if err != nil {
		return err
	}
	b, err := readBody(c, true)
	if err != nil {
		return err
	}
	var in cloud.CheckInInput
	parseEntry(b, &in)
	if err := b.done(); err != nil {
		return err
	}
	send := answer(c, answerCreated(visitLocation, renderVisit))
	v, err := s.svc.ReEnter(c.Request().Context(), cloud.ActorOf(principal(c)), id, in)
	if err != nil {
		return notFoundAs(err, "visit", id)
	}
	return send(v)
}

type visitorJSON struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Phone     *string `json:"phone"`
	Email     *string `json:"email"`
	Company   *string `json:"company"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

func (s *Server) getVisitor(c echo.Context) error {
	id, err := pathID(c, "visitor_id", ids.Visitor)
	if err != nil {
		return err
	}
	v, err := s.svc.Visitor(c.Request().Context(), cloud.ActorOf(principal(c)), id)
	if err != nil {
		return notFoundAs(err, "visitor", id)
	}
	return c.JSON(http.StatusOK, visitorJSON{ID: v.ID, Name: v.Name, Phone: nullable(v.Phone), Email: nullable(v.Email),
		Company: nullable(v.Company), CreatedAt: ts(v.CreatedAt), UpdatedAt: ts(v.UpdatedAt)})
}

func (s *Server) deleteVisitor(c echo.Context) error {
	id, err := pathID(c, "visitor_id", ids.Visitor)
	if err != nil {
		return err
	}
	if err := s.svc.EraseVisitor(c.Request().Context(), cloud.ActorOf(principal(c)), id); err != nil {
		return notFoundAs(err, "visitor", id)
	}
	return c.NoContent(http.StatusNoContent)
}

// Booking types.

type openingHoursJSON struct {
	Days  []string `json:"days"`
	From  string   `json:"from"`
	Until string   `json:"until"`
}

type bookingTypeJSON struct {
	ID                      string             `json:"id"`
	Name                    string             `json:"name"`
	SiteID                  string             `json:"site_id"`
	VisitType               string             `json:"visit_type"`
	Public                  bool               `json:"public"`
	PublicForm              *publicFormJSON    `json:"public_form"`
	RequiresConfirmation    bool               `json:"requires_confirmation"`
	ConfirmationWindowHours int                `json:"confirmation_window_hours"`
	SlotMinutes             int                `json:"slot_minutes"`
	Capacity                int                `json:"capacity"`
	OpeningHours            []openingHoursJSON `json:"opening_hours"`
	HostID                  *string            `json:"host_id"`
	TeamID                  *string            `json:"team_id"`
	Archived                bool               `json:"archived"`
	CreatedAt               string             `json:"created_at"`
	UpdatedAt               string             `json:"updated_at"`
}

// weekdays are the day names opening hours use, Sunday first as
// time.Weekday counts.
var weekdays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

func renderBookingType(v cloud.BookingTypeView) bookingTypeJSON {
	out := bookingTypeJSON{ID: v.ID, Name: v.Name, SiteID: v.SiteID, VisitType: v.VisitType, Public: v.Public,
		RequiresConfirmation: v.RequiresConfirmation, ConfirmationWindowHours: v.ConfirmationWindowHours,
		SlotMinutes: v.SlotMinutes, Capacity: v.Capacity, OpeningHours: make([]openingHoursJSON, len(v.Hours)),
		HostID: nullable(v.HostID), TeamID: nullable(v.TeamID), Archived: v.Archived,
		CreatedAt: ts(v.CreatedAt), UpdatedAt: ts(v.UpdatedAt)}
	if v.PublicForm != nil {
		out.PublicForm = &publicFormJSON{Version: v.FormVersion, Schema: v.PublicForm}
	}
	for i, h := range v.Hours {
		days := make([]string, len(h.Days))
		for j, d := range h.Days {
			days[j] = weekdays[d]
		}
		out.OpeningHours[i] = openingHoursJSON{Days: days, From: h.From.String(), Until: h.Until.String()}
	}
	return out
}

func parseBookingType(create bool) func(*body) cloud.BookingTypeInput {
	return func(b *body) cloud.BookingTypeInput {
		var in cloud.BookingTypeInput
		in.Name = b.str("name")
		if create {
			in.SiteID = b.str("site_id")
		} else if _, ok, _ := b.take("site_id"); ok {
			in.SiteID = cloud.Some("")
		}
		in.VisitType = b.str("visit_type")
		in.Public = b.boolean("public")
		in.RequiresConfirmation = b.boolean("requires_confirmation")
		in.ConfirmationWindowHours = b.integer("confirmation_window_hours", 1, cloud.MaxConfirmationWindowHours)
		in.SlotMinutes = b.integer("slot_minutes", cloud.MinSlotMinutes, cloud.MaxSlotMinutes)
		in.Capacity = b.integer("capacity", 1, cloud.MaxSlotCapacity)
		in.HostID = b.nullableStr("host_id")
		in.TeamID = b.nullableStr("team_id")
		if !create {
			in.Archived = b.boolean("archived")
		}
		var hours []cloud.OpeningHours
		// Spans are passed on even when a part was wrong, so the domain's
		// checks of the other parts are reported with the body's (merge
		// drops its findings where the body already found one).
		if n, present := b.objects("opening_hours", func(i int, hb *body) {
			var h cloud.OpeningHours
			if days := hb.strings("days"); days.Set {
				for j, d := range days.Value {
					wd := slices.Index(weekdays, d)
					switch {
					case wd < 0:
						hb.errs.add(hb.loc("days")+"["+strconv.Itoa(j)+"]", "must be one of %s", strings.Join(weekdays, ", "))
					case slices.Contains(h.Days, time.Weekday(wd)):
						hb.errs.add(hb.loc("days")+"["+strconv.Itoa(j)+"]", "repeats %s", d)
					default:
						h.Days = append(h.Days, time.Weekday(wd))
					}
				}
			} else if !hasLocation(*hb.errs, hb.loc("days")) {
				hb.errs.add(hb.loc("days"), "is required: an array of day names such as [\"mon\", \"tue\"]")
			}
			for _, part := range []struct {
				name string
				dst  *passrule.Clock
			}{{"from", &h.From}, {"until", &h.Until}} {
				v := hb.str(part.name)
				if !v.Set {
					if !hasLocation(*hb.errs, hb.loc(part.name)) {
						hb.errs.add(hb.loc(part.name), "is required: a time of day HH:MM")
					}
					continue
				}
				c, err := passrule.ParseClock(v.Value)
				if err != nil {
					hb.errs.add(hb.loc(part.name), "must be a time of day HH:MM from 00:00 to 23:59")
					continue
				}
				*part.dst = c
			}
			hours = append(hours, h)
		}); present && n == len(hours) {
			if hours == nil {
				hours = []cloud.OpeningHours{}
			}
			in.Hours = cloud.Some(hours)
		}
		return in
	}
}

func (s *Server) createBookingType(c echo.Context) error {
	a := cloud.ActorOf(principal(c))
	in, err := decode(c, false, parseBookingType(true), func(ctx context.Context, in cloud.BookingTypeInput) error {
		return s.svc.ValidateBookingType(ctx, a, in)
	})
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/booking-types/", func(v cloud.BookingTypeView) string { return v.ID }), renderBookingType))
	v, err := s.svc.CreateBookingType(c.Request().Context(), a, in)
	if err != nil {
		return err
	}
	return send(v)
}

func (s *Server) updateBookingType(c echo.Context) error {
	id, err := pathID(c, "booking_type_id", ids.BookingType)
	if err != nil {
		return err
	}
	b, err := readBody(c, false)
	if err != nil {
		return err
	}
	in := parseBookingType(false)(b)
	if err := b.done(); err != nil {
		return err
	}
	v, err := s.svc.UpdateBookingType(c.Request().Context(), cloud.ActorOf(principal(c)), id, in)
	if err != nil {
		return notFoundAs(err, "booking type", id)
	}
	return c.JSON(http.StatusOK, renderBookingType(v))
}

func (s *Server) getBookingType(c echo.Context) error {
	id, err := pathID(c, "booking_type_id", ids.BookingType)
	if err != nil {
		return err
	}
	v, err := s.svc.BookingType(c.Request().Context(), cloud.ActorOf(principal(c)), id)
	if err != nil {
		return notFoundAs(err, "booking type", id)
	}
	return c.JSON(http.StatusOK, renderBookingType(v))
}

func (s *Server) listBookingTypes(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "site_id", "include_archived")
	if err != nil {
		return err
	}
	t := tenant(c)
	a := cloud.ActorOf(principal(c))
	f := cloud.BookingTypeFilter{SiteID: q.id("site_id", ids.Site)}
	if v := q.boolean("include_archived"); v != nil {
		f.IncludeArchived = *v
	}
	scope := strings.Join([]string{"booking-types", t.OrgID, string(t.Mode), f.SiteID, boolScope(&f.IncludeArchived), boolScope(&a.Publishable)}, "\x00")
	p := s.page(q, scope)
	ctx := c.Request().Context()
	if err := s.checkFilters(ctx, q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.ListBookingTypes(ctx, a, f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(v cloud.BookingTypeView) cloud.Position {
		return cloud.Position{CreatedAt: v.CreatedAt, ID: v.ID}
	}, renderBookingType))
}

type slotJSON struct {
	StartsAt  string `json:"starts_at"`
	EndsAt    string `json:"ends_at"`
	Capacity  int    `json:"capacity"`
	Remaining int    `json:"remaining"`
}

type slotsJSON struct {
	Data []slotJSON `json:"data"`
}

// date reads a YYYY-MM-DD date.
func (q *query) date(name string) *time.Time {
	v, ok := q.get(name)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil || t.Year() < 2000 || t.Year() > 9999 {
		q.errs.add("query."+name, "must be a date YYYY-MM-DD")
		return nil
	}
	return &t
}

// listSlots returns a booking type's slots from the day from to the day
// to (dates at the site), at most 31 days, with the places left in each.
func (s *Server) listSlots(c echo.Context) error {
	id, err := pathID(c, "booking_type_id", ids.BookingType)
	if err != nil {
		return err
	}
	q, err := parseQuery(c, "from", "to")
	if err != nil {
		return err
	}
	from, to := q.date("from"), q.date("to")
	for _, name := range []string{"from", "to"} {
		if _, ok := q.get(name); !ok && !hasLocation(q.errs, "query."+name) {
			q.errs.add("query."+name, "is required: a date YYYY-MM-DD")
		}
	}
	if from != nil && to != nil {
		switch {
		case to.Before(*from):
			q.errs.add("query.to", "must be on or after from")
		case to.Sub(*from) >= cloud.MaxSlotRangeDays*24*time.Hour:
			q.errs.add("query.to", "may be at most %d days after from, from included", cloud.MaxSlotRangeDays-1)
		}
	}
	if err := q.errs.err(); err != nil {
		return err
	}
	slots, err := s.svc.Slots(c.Request().Context(), cloud.ActorOf(principal(c)), id, *from, *to)
	if err != nil {
		return notFoundAs(err, "booking type", id)
	}
	out := slotsJSON{Data: make([]slotJSON, len(slots))}
	for i, sl := range slots {
		out.Data[i] = slotJSON{StartsAt: ts(sl.StartsAt), EndsAt: ts(sl.EndsAt), Capacity: sl.Capacity, Remaining: sl.Remaining}
	}
	return c.JSON(http.StatusOK, out)
}

// Bookings.

type bookingJSON struct {
	ID            string                     `json:"id"`
	BookingTypeID string                     `json:"booking_type_id"`
	SiteID        string                     `json:"site_id"`
	Status        string                     `json:"status"`
	StartsAt      string                     `json:"starts_at"`
	EndsAt        string                     `json:"ends_at"`
	Visitor       visitorSummaryJSON         `json:"visitor"`
	Purpose       *string                    `json:"purpose"`
	CustomFields  map[string]json.RawMessage `json:"custom_fields"`
	VisitID       *string                    `json:"visit_id"`
	ConfirmBy     *string                    `json:"confirm_by"`
	ConfirmedAt   *string                    `json:"confirmed_at"`
	DeclinedAt    *string                    `json:"declined_at"`
	DeclineReason *string                    `json:"decline_reason"`
	CancelledAt   *string                    `json:"cancelled_at"`
	CreatedAt     string                     `json:"created_at"`
	UpdatedAt     string                     `json:"updated_at"`
}

func renderBooking(b cloud.Booking) bookingJSON {
	out := bookingJSON{ID: b.ID, BookingTypeID: b.TypeID, SiteID: b.SiteID, Status: string(b.Status),
		StartsAt: ts(b.StartsAt), EndsAt: ts(b.EndsAt),
		Visitor: visitorSummaryJSON{ID: b.VisitorID, Name: nullable(b.Visitor.Name), Phone: nullable(b.Visitor.Phone),
			Email: nullable(b.Visitor.Email), Company: nullable(b.Visitor.Company)},
		Purpose: nullable(b.Purpose), CustomFields: b.CustomFields, VisitID: nullable(b.VisitID),
		ConfirmBy: tsPtr(b.ConfirmBy), ConfirmedAt: tsPtr(b.ConfirmedAt), DeclinedAt: tsPtr(b.DeclinedAt),
		DeclineReason: nullable(b.DeclineReason), CancelledAt: tsPtr(b.CancelledAt),
		CreatedAt: ts(b.CreatedAt), UpdatedAt: ts(b.UpdatedAt)}
	if out.CustomFields == nil {
		out.CustomFields = map[string]json.RawMessage{}
	}
	return out
}

func parseBooking(b *body) cloud.BookingInput {
	var in cloud.BookingInput
	in.TypeID = b.str("booking_type_id")
	in.StartsAt = b.timestamp("starts_at", false)
	var vin cloud.VisitorInput
	if present, isNull := b.object("visitor", false, func(vb *body) {
		vin.Name, vin.Phone, vin.Email, vin.Company = vb.str("name"), vb.nullableStr("phone"), vb.nullableStr("email"), vb.nullableStr("company")
	}); present && !isNull {
		in.Visitor = cloud.Some(&vin)
	}
	in.Purpose = b.nullableStr("purpose")
	in.CustomFields = b.rawObject("custom_fields")
	return in
}

func (s *Server) createBooking(c echo.Context) error {
	a := cloud.ActorOf(principal(c))
	in, err := decode(c, false, parseBooking, func(ctx context.Context, in cloud.BookingInput) error { return s.svc.ValidateBooking(ctx, a, in) })
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/bookings/", func(b cloud.Booking) string { return b.ID }), renderBooking))
	v, err := s.svc.CreateBooking(c.Request().Context(), a, in)
	if err != nil {
		return err
	}
	return send(v)
}

func (s *Server) getBooking(c echo.Context) error {
	id, err := pathID(c, "booking_id", ids.Booking)
	if err != nil {
		return err
	}
	v, err := s.svc.Booking(c.Request().Context(), cloud.ActorOf(principal(c)), id)
	if err != nil {
		return notFoundAs(err, "booking", id)
	}
	return c.JSON(http.StatusOK, renderBooking(v))
}

var bookingStatuses = func() []string {
	out := make([]string, len(cloud.BookingStatuses))
	for i, s := range cloud.BookingStatuses {
		out[i] = string(s)
	}
	return out
}()

func (s *Server) listBookings(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "status", "booking_type_id", "site_id", "visitor_id", "starts_from", "starts_before")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.BookingFilter{TypeID: q.id("booking_type_id", ids.BookingType), SiteID: q.id("site_id", ids.Site),
		VisitorID: q.id("visitor_id", ids.Visitor), StartsFrom: q.timestamp("starts_from"), StartsBefore: q.timestamp("starts_before")}
	if v, ok := q.get("status"); ok {
		for _, st := range strings.Split(v, ",") {
			if !slices.Contains(bookingStatuses, st) {
				q.errs.add("query.status", "must be one or more of %s, separated by commas", strings.Join(bookingStatuses, ", "))
				break
			}
			f.Status = append(f.Status, cloud.BookingStatus(st))
		}
	}
	if f.StartsFrom != nil && f.StartsBefore != nil && !f.StartsBefore.After(*f.StartsFrom) {
		q.errs.add("query.starts_before", "must be after starts_from")
	}
	statuses := make([]string, len(f.Status))
	for i, st := range f.Status {
		statuses[i] = string(st)
	}
	scope := strings.Join([]string{"bookings", t.OrgID, string(t.Mode), strings.Join(statuses, ","), f.TypeID, f.SiteID,
		f.VisitorID, timeScope(f.StartsFrom), timeScope(f.StartsBefore)}, "\x00")
	p := s.page(q, scope)
	ctx := c.Request().Context()
	if err := s.checkFilters(ctx, q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.ListBookings(ctx, cloud.ActorOf(principal(c)), f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(b cloud.Booking) cloud.Position {
		return cloud.Position{CreatedAt: b.CreatedAt, ID: b.ID}
	}, renderBooking))
}

// bookingAction is a POST on one booking whose optional body parse reads.
func (s *Server) bookingAction(parse func(*body), act func(ctx context.Context, a cloud.Actor, id string) (cloud.Booking, error)) echo.HandlerFunc {
	return objectAction("booking_id", ids.Booking, "booking", parse, act, renderBooking)
}

func (s *Server) confirmBooking(c echo.Context) error {
	return s.bookingAction(nil, s.svc.ConfirmBooking)(c)
}

func (s *Server) declineBooking(c echo.Context) error {
	var reason string
	return s.bookingAction(func(b *body) { reason = b.nullableStr("reason").Value },
		func(ctx context.Context, a cloud.Actor, id string) (cloud.Booking, error) {
			return s.svc.DeclineBooking(ctx, a, id, reason)
		})(c)
}

func (s *Server) cancelBooking(c echo.Context) error {
	return s.bookingAction(nil, s.svc.CancelBooking)(c)
}

func (s *Server) rescheduleBooking(c echo.Context) error {
	var in cloud.RescheduleBookingInput
	return s.bookingAction(func(b *body) { in.StartsAt = b.timestamp("starts_at", false) },
		func(ctx context.Context, a cloud.Actor, id string) (cloud.Booking, error) {
			return s.svc.RescheduleBooking(ctx, a, id, in)
		})(c)
}
