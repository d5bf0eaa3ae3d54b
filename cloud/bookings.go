package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/ids"
)

// Limits on booking types and bookings (docs/decisions.md, "Bookings").
const (
	MinSlotMinutes             = 5
	MaxSlotMinutes             = 24 * 60
	MaxSlotCapacity            = 1000
	MaxConfirmationWindowHours = 24 * 14
	MaxOpeningHours            = 28
	MaxSlotRangeDays           = 31
	MaxBookingAheadDays        = 366
)

// BookingTypeInput creates or changes a booking type; PATCH takes every
// field but SiteID.
type BookingTypeInput struct {
	Name                    Optional[string]
	SiteID                  Optional[string]
	VisitType               Optional[string]
	Public                  Optional[bool]
	RequiresConfirmation    Optional[bool]
	ConfirmationWindowHours Optional[int]
	SlotMinutes             Optional[int]
	Capacity                Optional[int]
	Hours                   Optional[[]OpeningHours]
	HostID                  Optional[string] // "" clears
	TeamID                  Optional[string] // "" clears
	Archived                Optional[bool]
}

// BookingTypeView is a booking type as the API shows it.
type BookingTypeView struct {
	BookingType
	PublicForm  json.RawMessage // the visit type's public form; nil for private types
	FormVersion int
}

// checkBookingType validates a booking type as it will be stored.
func (s *Service) checkBookingType(ctx context.Context, v *ValidationError, a Actor, bt *BookingType, in BookingTypeInput) error {
	if in.Name.Set {
		checkText(v, "name", in.Name.Value, true, MaxNameLen)
	}
	if in.VisitType.Set {
		if _, _, err := s.usableType(ctx, v, a.Tenant, "visit_type", in.VisitType.Value, false); err != nil {
			return err
		}
	}
	if in.ConfirmationWindowHours.Set && (bt.ConfirmationWindowHours < 1 || bt.ConfirmationWindowHours > MaxConfirmationWindowHours) {
		v.Add("confirmation_window_hours", "must be from 1 to %d", MaxConfirmationWindowHours)
	}
	if in.SlotMinutes.Set && (bt.SlotMinutes < MinSlotMinutes || bt.SlotMinutes > MaxSlotMinutes) {
		v.Add("slot_minutes", "must be from %d to %d", MinSlotMinutes, MaxSlotMinutes)
	}
	if in.Capacity.Set && (bt.Capacity < 1 || bt.Capacity > MaxSlotCapacity) {
		v.Add("capacity", "must be from 1 to %d", MaxSlotCapacity)
	}
	if in.Hours.Set {
		if len(bt.Hours) > MaxOpeningHours {
			v.Add("opening_hours", "may hold at most %d spans", MaxOpeningHours)
		}
		for i, h := range bt.Hours {
			f := fmt.Sprintf("opening_hours[%d]", i)
			if len(h.Days) == 0 {
				v.Add(f+".days", "must hold at least 1 day")
			}
			switch {
			case h.Until <= h.From:
				v.Add(f+".until", "must be after from: a span ends on the day it starts")
			case bt.SlotMinutes > 0 && int(h.Until-h.From) < bt.SlotMinutes:
				v.Add(f+".until", "the span is shorter than one slot of %d minutes", bt.SlotMinutes)
			default:
				for j, o := range bt.Hours[:i] {
					if o.From < h.Until && h.From < o.Until && slices.ContainsFunc(h.Days, func(d time.Weekday) bool { return slices.Contains(o.Days, d) }) {
						v.Add(f, "overlaps opening_hours[%d] on a day both name", j)
						break
					}
				}
			}
		}
	}
	if in.HostID.Set && in.TeamID.Set && in.HostID.Value != "" && in.TeamID.Value != "" {
		v.Add("team_id", "give host_id or team_id, not both")
	}
	if in.HostID.Set && in.HostID.Value != "" && checkID(v, "host_id", ids.Person, in.HostID.Value) {
		p, err := s.store.Person(ctx, a.Tenant, in.HostID.Value)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("host_id", "no person with this ID")
		case err != nil:
			return err
		case !p.Active:
			v.Add("host_id", "%s is deactivated and cannot host visits", p.Name)
		}
	}
	if in.TeamID.Set && in.TeamID.Value != "" && checkID(v, "team_id", ids.Team, in.TeamID.Value) {
		tm, err := s.store.Team(ctx, a.Tenant, in.TeamID.Value)
		switch {
		case errors.Is(err, ErrNotFound):
			v.Add("team_id", "no team with this ID")
		case err != nil:
			return err
		case tm.Archived:
			v.Add("team_id", "the team is archived")
		case tm.SiteID != "" && tm.SiteID != bt.SiteID:
			v.Add("team_id", "the team is at another site")
		}
	}
	return nil
}

func applyBookingType(bt *BookingType, in BookingTypeInput) {
	set := func(dst *string, o Optional[string]) {
		if o.Set {
			*dst = o.Value
		}
	}
	set(&bt.Name, in.Name)
	set(&bt.VisitType, in.VisitType)
	set(&bt.HostID, in.HostID)
	set(&bt.TeamID, in.TeamID)
	if in.HostID.Set && in.HostID.Value != "" && !in.TeamID.Set {
		bt.TeamID = ""
	}
	if in.TeamID.Set && in.TeamID.Value != "" && !in.HostID.Set {
		bt.HostID = ""
	}
	if in.Public.Set {
		bt.Public = in.Public.Value
	}
	if in.RequiresConfirmation.Set {
		bt.RequiresConfirmation = in.RequiresConfirmation.Value
	}
	if in.ConfirmationWindowHours.Set {
		bt.ConfirmationWindowHours = in.ConfirmationWindowHours.Value
	}
	if in.SlotMinutes.Set {
		bt.SlotMinutes = in.SlotMinutes.Value
	}
	if in.Capacity.Set {
		bt.Capacity = in.Capacity.Value
	}
	if in.Hours.Set {
		bt.Hours = in.Hours.Value
	}
	if in.Archived.Set {
		bt.Archived = in.Archived.Value
	}
}

// ValidateBookingType checks a new booking type's input without storing
// it.
func (s *Service) ValidateBookingType(ctx context.Context, a Actor, in BookingTypeInput) error {
	_, err := s.planBookingType(ctx, a, in)
	return err
}

// CreateBookingType validates and stores a new booking type.
func (s *Service) CreateBookingType(ctx context.Context, a Actor, in BookingTypeInput) (BookingTypeView, error) {
	bt, err := s.planBookingType(ctx, a, in)
	if err != nil {
		return BookingTypeView{}, err
	}
	view, err := s.bookingTypeView(ctx, a, bt)
	if err != nil {
		return BookingTypeView{}, err
	}
	if err := respond(ctx, view); err != nil {
		return BookingTypeView{}, err
	}
	if err := s.store.CreateBookingType(ctx, bt); err != nil {
		return BookingTypeView{}, fmt.Errorf("create booking type: %w", err)
	}
	return view, nil
}

func (s *Service) planBookingType(ctx context.Context, a Actor, in BookingTypeInput) (BookingType, error) {
	var v ValidationError
	now := s.Now()
	bt := BookingType{ID: ids.New(ids.BookingType), Tenant: a.Tenant, ConfirmationWindowHours: DefaultConfirmationWindowHours,
		Capacity: 1, Hours: []OpeningHours{}, CreatedAt: now, UpdatedAt: now}
	for _, r := range []struct {
		name string
		set  bool
	}{{"name", in.Name.Set}, {"site_id", in.SiteID.Set}, {"visit_type", in.VisitType.Set},
		{"slot_minutes", in.SlotMinutes.Set}, {"opening_hours", in.Hours.Set}} {
		if !r.set {
			v.Add(r.name, "is required")
		}
	}
	if in.SiteID.Set {
		if _, _, err := s.siteZone(ctx, &v, a.Tenant, "site_id", in.SiteID.Value); err != nil {
			return BookingType{}, err
		}
		bt.SiteID = in.SiteID.Value
	}
	applyBookingType(&bt, in)
	if err := s.checkBookingType(ctx, &v, a, &bt, in); err != nil {
		return BookingType{}, err
	}
	return bt, v.Err()
}

// UpdateBookingType changes a booking type. Bookings already made keep
// their slots.
func (s *Service) UpdateBookingType(ctx context.Context, a Actor, id string, in BookingTypeInput) (BookingTypeView, error) {
	cur, err := s.store.BookingType(ctx, a.Tenant, id)
	if err != nil {
		return BookingTypeView{}, err
	}
	var v ValidationError
	if in.SiteID.Set {
		v.Add("site_id", "cannot be changed; make a booking type at the other site")
	}
	next := cur
	applyBookingType(&next, in)
	if in.SlotMinutes.Set {
		in.Hours = Some(next.Hours) // the spans must still hold a slot
	}
	if err := s.checkBookingType(ctx, &v, a, &next, in); err != nil {
		return BookingTypeView{}, err
	}
	if err := v.Err(); err != nil {
		return BookingTypeView{}, err
	}
	bt, err := s.store.UpdateBookingType(ctx, a.Tenant, id, func(bt *BookingType) error {
		applyBookingType(bt, in)
		bt.UpdatedAt = s.Now()
		return nil
	})
	if err != nil {
		return BookingTypeView{}, err
	}
	return s.bookingTypeView(ctx, a, bt)
}

// bookingTypeView is bt as actor a is shown it, with the public form of its
// visit type when it is public. A publishable key (a public booking page)
// is not shown who hosts the type: host_id and team_id name people and
// teams of the organisation, which a publishable key never lists
// (docs/decisions.md, "What a publishable key sees of a booking type").
func (s *Service) bookingTypeView(ctx context.Context, a Actor, bt BookingType) (BookingTypeView, error) {
	out := BookingTypeView{BookingType: bt}
	if a.Publishable {
		out.HostID, out.TeamID = "", ""
	}
	if !bt.Public {
		return out, nil
	}
	vt, err := s.store.VisitType(ctx, bt.Tenant, bt.VisitType)
	if errors.Is(err, ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	f, err := parseForm(vt.Form)
	if err != nil {
		return out, fmt.Errorf("visit type %s: stored form: %w", vt.Key, err)
	}
	out.PublicForm, out.FormVersion = f.Public(), vt.FormVersion
	return out, nil
}

// BookingType returns a booking type. With a publishable key only public
// types that are not archived are found.
func (s *Service) BookingType(ctx context.Context, a Actor, id string) (BookingTypeView, error) {
	bt, err := s.store.BookingType(ctx, a.Tenant, id)
	if err != nil {
		return BookingTypeView{}, err
	}
	if a.Publishable && (!bt.Public || bt.Archived) {
		return BookingTypeView{}, ErrNotFound
	}
	return s.bookingTypeView(ctx, a, bt)
}

// ListBookingTypes returns a page of booking types; a publishable key sees
// only public types that are not archived.
func (s *Service) ListBookingTypes(ctx context.Context, a Actor, f BookingTypeFilter, p Page) ([]BookingTypeView, bool, error) {
	if a.Publishable {
		f.Public, f.IncludeArchived = true, false
	}
	bts, more, err := s.store.ListBookingTypes(ctx, a.Tenant, f, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]BookingTypeView, len(bts))
	for i, bt := range bts {
		if out[i], err = s.bookingTypeView(ctx, a, bt); err != nil {
			return nil, false, err
		}
	}
	return out, more, nil
}

// Slot is one bookable period of a booking type.
type Slot struct {
	StartsAt  time.Time
	EndsAt    time.Time
	Capacity  int
	Remaining int
}

// slotStarts lists the starts of the type's slots on day (a date at the
// site) in the site's zone, in order. A wall-clock time that a DST change
// skips is moved forward by the change, as time.Date does.
func slotStarts(bt BookingType, loc *time.Location, y int, m time.Month, d int) []time.Time {
	wd := time.Date(y, m, d, 12, 0, 0, 0, loc).Weekday()
	var out []time.Time
	for _, h := range bt.Hours {
		if !slices.Contains(h.Days, wd) {
			continue
		}
		for c := int(h.From); c+bt.SlotMinutes <= int(h.Until); c += bt.SlotMinutes {
			out = append(out, time.Date(y, m, d, c/60, c%60, 0, 0, loc))
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(out, func(a, b time.Time) bool { return a.Equal(b) })
}

// isSlotStart reports whether t starts one of the type's slots.
func isSlotStart(bt BookingType, loc *time.Location, t time.Time) bool {
	l := t.In(loc)
	for _, s := range slotStarts(bt, loc, l.Year(), l.Month(), l.Day()) {
		if s.Equal(t) {
			return true
		}
	}
	return false
}

// Slots lists the type's slots that start from the day from to the day to
// (dates at the site, both included) and have not started, with the places
// left in each. A publishable key may read a public type's slots.
func (s *Service) Slots(ctx context.Context, a Actor, typeID string, from, to time.Time) ([]Slot, error) {
	bt, err := s.BookingType(ctx, a, typeID)
	if err != nil {
		return nil, err
	}
	var v ValidationError
	_, loc, err := s.siteZone(ctx, &v, a.Tenant, "site_id", bt.SiteID)
	if err != nil {
		return nil, err
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	now := s.Now()
	start := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, loc)
	end := time.Date(to.Year(), to.Month(), to.Day()+1, 0, 0, 0, 0, loc)
	used, err := s.store.SlotUse(ctx, a.Tenant, bt.ID, start.UTC(), end.UTC(), now)
	if err != nil {
		return nil, err
	}
	out := []Slot{}
	for day := start; day.Before(end); day = time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, loc) {
		for _, st := range slotStarts(bt.BookingType, loc, day.Year(), day.Month(), day.Day()) {
			if !st.After(now) {
				continue
			}
			st = st.UTC()
			left := max(bt.Capacity-used[st], 0)
			out = append(out, Slot{StartsAt: st, EndsAt: st.Add(time.Duration(bt.SlotMinutes) * time.Minute), Capacity: bt.Capacity, Remaining: left})
		}
	}
	return out, nil
}

// BookingInput is a new booking.
type BookingInput struct {
	TypeID       Optional[string]
	StartsAt     Optional[*time.Time]
	Visitor      Optional[*VisitorInput]
	Purpose      Optional[string]
	CustomFields Optional[map[string]json.RawMessage]
}

// expire shows a pending booking whose confirmation window has closed as
// expired, whether or not the sweeper has stored it so yet.
func (s *Service) expire(b *Booking) {
	if b.Status == BookingPending && b.ConfirmBy != nil && !s.Now().Before(*b.ConfirmBy) {
		b.Status = BookingExpired
	}
}

type bookingPlan struct {
	bt     BookingType
	site   Site
	loc    *time.Location
	vt     *VisitType
	fields map[string]json.RawMessage
}

func (s *Service) planBooking(ctx context.Context, a Actor, in BookingInput) (*bookingPlan, error) {
	var v ValidationError
	p := &bookingPlan{}
	var err error
	var f *form.Form
	ok := false
	switch {
	case !in.TypeID.Set:
		v.Add("booking_type_id", "is required")
	case checkID(&v, "booking_type_id", ids.BookingType, in.TypeID.Value):
		p.bt, err = s.store.BookingType(ctx, a.Tenant, in.TypeID.Value)
		switch {
		case errors.Is(err, ErrNotFound) || err == nil && a.Publishable && (!p.bt.Public || p.bt.Archived):
			// A publishable key reads neither private nor archived types.
			v.Add("booking_type_id", "no booking type with this ID")
		case err != nil:
			return nil, err
		case p.bt.Archived:
			v.Add("booking_type_id", "the booking type is archived and takes no new bookings")
		default:
			ok = true
		}
	}
	if ok {
		if p.site, p.loc, err = s.siteZone(ctx, &v, a.Tenant, "booking_type_id", p.bt.SiteID); err != nil {
			return nil, err
		}
		if p.vt, f, err = s.usableType(ctx, &v, a.Tenant, "booking_type_id", p.bt.VisitType, false); err != nil {
			return nil, err
		}
	}
	if !in.Visitor.Set || in.Visitor.Value == nil {
		v.Add("visitor", "is required")
	} else {
		checkVisitor(&v, in.Visitor.Value)
	}
	now := s.Now()
	switch at := in.StartsAt.Value; {
	case !in.StartsAt.Set || at == nil:
		v.Add("starts_at", "is required")
	case !at.After(now):
		v.Add("starts_at", "must be in the future")
	case at.Sub(now) > MaxBookingAheadDays*24*time.Hour:
		v.Add("starts_at", "may be at most %d days ahead", MaxBookingAheadDays)
	case ok && p.loc != nil && !isSlotStart(p.bt, p.loc, *at):
		v.Add("starts_at", "is not the start of a slot of this booking type; GET its slots")
	}
	checkText(&v, "purpose", in.Purpose.Value, false, MaxPurposeLen)
	if f != nil {
		if p.fields, err = s.checkFields(ctx, &v, a, f, in.CustomFields.Value, p.site.ID); err != nil {
			return nil, err
		}
	}
	return p, v.Err()
}

// ValidateBooking checks a new booking's input without making it.
func (s *Service) ValidateBooking(ctx context.Context, a Actor, in BookingInput) error {
	_, err := s.planBooking(ctx, a, in)
	return err
}

// CreateBooking books a slot. On a type that needs confirmation the
// booking is pending: it holds its slot until confirm_by and has no visit.
// Otherwise it is confirmed at once with its visit, whose pass is sent.
// A slot with no place left is a *ConflictError at starts_at.
//
// The reads that plan it and its writes are one transaction.
func (s *Service) CreateBooking(ctx context.Context, a Actor, in BookingInput) (b Booking, err error) {
	err = s.atomic(ctx, func(ctx context.Context) error {
		b, err = s.createBooking(ctx, a, in)
		return err
	})
	return b, err
}

func (s *Service) createBooking(ctx context.Context, a Actor, in BookingInput) (Booking, error) {
	p, err := s.planBooking(ctx, a, in)
	if err != nil {
		return Booking{}, err
	}
	now := s.Now()
	var w BookingWrites
	vis, err := s.visitorFor(ctx, a, in.Visitor.Value, now, &w.Visitor)
	if err != nil {
		return Booking{}, fmt.Errorf("create booking: %w", err)
	}
	start := in.StartsAt.Value.UTC().Truncate(time.Microsecond)
	b := Booking{ID: ids.New(ids.Booking), Tenant: a.Tenant, TypeID: p.bt.ID, SiteID: p.bt.SiteID, VisitorID: vis.ID, Visitor: vis,
		Status: BookingConfirmed, StartsAt: start, EndsAt: start.Add(time.Duration(p.bt.SlotMinutes) * time.Minute),
		Purpose: in.Purpose.Value, CustomFields: p.fields, CreatedAt: now, UpdatedAt: now}
	if b.CustomFields == nil {
		b.CustomFields = map[string]json.RawMessage{}
	}
	if p.bt.RequiresConfirmation {
		by := now.Add(time.Duration(p.bt.ConfirmationWindowHours) * time.Hour)
		if by.After(start) {
			by = start
		}
		b.Status, b.ConfirmBy = BookingPending, &by
		notices, err := s.notices(ctx, Visit{Tenant: a.Tenant}, bookingReceivers(p.bt),
			"A booking waits for confirmation",
			fmt.Sprintf("%s booked %s at %s for %s. Confirm or decline it by %s.", visitorName(vis), p.bt.Name, p.site.Name,
				start.In(p.loc).Format("Mon 2 Jan 2006 15:04 MST"), by.In(p.loc).Format("Mon 2 Jan 2006 15:04 MST")), now)
		if err != nil {
			return Booking{}, err
		}
		w.Messages = append(w.Messages, notices...)
	} else {
		b.ConfirmedAt = &now
		vt, err := s.bookingVisit(ctx, a, p.bt, p.vt, &b, p.site, now, &w)
		if err != nil {
			return Booking{}, err
		}
		b.VisitID = vt.ID
	}
	w.Capacity = p.bt.Capacity
	shown, err := s.shownBooking(ctx, a, b)
	if err != nil {
		return Booking{}, err
	}
	if err := respond(ctx, shown); err != nil {
		return Booking{}, err
	}
	if err := s.store.CreateBooking(ctx, b, w, now); err != nil {
		return Booking{}, fmt.Errorf("create booking: %w", err)
	}
	return shown, nil
}

// bookingReceivers are who is told of a booking: its host, its team, or
// reception.
func bookingReceivers(bt BookingType) []Receiver {
	switch {
	case bt.HostID != "":
		return []Receiver{{Kind: ReceiverPerson, PersonID: bt.HostID}}
	case bt.TeamID != "":
		return []Receiver{{Kind: ReceiverTeam, TeamID: bt.TeamID}}
	}
	return []Receiver{{Kind: ReceiverReception}}
}

// bookingVisit makes the visit of a confirmed booking, for the booking
// type's host or team (or reception), and sends its pass; both are added
// to w.
func (s *Service) bookingVisit(ctx context.Context, a Actor, bt BookingType, vt *VisitType, b *Booking, site Site, now time.Time, w *BookingWrites) (Visit, error) {
	v := Visit{ID: ids.New(ids.Visit), Tenant: b.Tenant, Status: VisitExpected, Type: bt.VisitType, Source: SourceBooking,
		SiteID: b.SiteID, Audience: AudienceDesk, Hosts: []Host{}, VisitorID: b.VisitorID, Visitor: b.Visitor,
		Purpose: b.Purpose, ExpectedAt: utcPtr(&b.StartsAt), ExpectedUntil: utcPtr(&b.EndsAt), BookingID: b.ID,
		CustomFields: b.CustomFields, Receiver: Receiver{Kind: ReceiverReception}, CreatedAt: now, UpdatedAt: now}
	switch {
	case bt.HostID != "":
		p, err := s.store.Person(ctx, b.Tenant, bt.HostID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Visit{}, err
		}
		if err == nil && p.Active {
			v.Audience, v.HostID, v.Receiver = AudiencePerson, p.ID, Receiver{}
			v.Hosts = []Host{{ID: p.ID, Name: p.Name, Role: HostRoleLead, State: HostStateInvited}}
		}
	case bt.TeamID != "":
		tm, err := s.store.Team(ctx, b.Tenant, bt.TeamID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Visit{}, err
		}
		if err == nil {
			v.Audience, v.Team, v.Receiver = AudienceTeam, &Ref{ID: tm.ID, Name: tm.Name}, Receiver{Kind: ReceiverTeam, TeamID: tm.ID}
		}
	}
	if vt == nil {
		t, err := s.store.VisitType(ctx, b.Tenant, bt.VisitType)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Visit{}, err
		}
		if err == nil {
			vt = &t
		}
	}
	v.Pass = Pass{Rules: typeRules(Actor{Tenant: a.Tenant, Plan: a.Plan}, vt), ForVisitID: v.ID, Channels: []string{}}
	var vw VisitWrites
	s.sendPass(&v, &vw, b.Visitor, defaultChannels(b.Visitor), site, now)
	w.Messages = append(w.Messages, vw.Messages...)
	w.NewVisits = append(w.NewVisits, v)
	return v, nil
}

// Booking returns a booking as the API shows it.
func (s *Service) Booking(ctx context.Context, a Actor, id string) (Booking, error) {
	b, err := s.store.Booking(ctx, a.Tenant, id)
	if err != nil {
		return Booking{}, err
	}
	return s.shownBooking(ctx, a, b)
}

func (s *Service) shownBooking(ctx context.Context, a Actor, b Booking) (Booking, error) {
	if err := s.checkHistory(a, b.CreatedAt); err != nil {
		return Booking{}, err
	}
	s.expire(&b)
	bt, err := s.store.BookingType(ctx, a.Tenant, b.TypeID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Booking{}, err
	}
	key := bt.VisitType
	probe := Visit{Type: key, CustomFields: b.CustomFields}
	if err := s.redact(ctx, a.Tenant, map[string]*form.Form{}, &probe); err != nil {
		return Booking{}, err
	}
	b.CustomFields = probe.CustomFields
	return b, nil
}

// ListBookings returns a page of bookings, leaving out records older than
// the plan's history.
func (s *Service) ListBookings(ctx context.Context, a Actor, f BookingFilter, p Page) ([]Booking, bool, error) {
	f.CreatedAfter = s.historyStart(a)
	f.Now = s.Now()
	bs, more, err := s.store.ListBookings(ctx, a.Tenant, f, p)
	if err != nil {
		return nil, false, err
	}
	for i := range bs {
		if bs[i], err = s.shownBooking(ctx, a, bs[i]); err != nil {
			return nil, false, err
		}
	}
	return bs, more, nil
}

// updateBooking applies fn to a booking the actor may see, shown as
// expired when its window has closed, and returns it as shown.
func (s *Service) updateBooking(ctx context.Context, a Actor, id string, fn func(*Booking, *BookingWrites, time.Time) error) (Booking, error) {
	if _, err := s.Booking(ctx, a, id); err != nil {
		return Booking{}, err
	}
	b, err := s.store.UpdateBooking(ctx, a.Tenant, id, s.Now(), func(b *Booking, w *BookingWrites) error {
		now := s.Now()
		if b.Status == BookingPending && b.ConfirmBy != nil && !now.Before(*b.ConfirmBy) {
			b.Status = BookingExpired
		}
		if err := fn(b, w, now); err != nil {
			return err
		}
		b.UpdatedAt = now
		if replyOf(ctx) == nil {
			return nil
		}
		shown, err := s.shownBooking(ctx, a, *b)
		if err != nil {
			return err
		}
		return respond(ctx, shown)
	})
	if err != nil {
		return Booking{}, err
	}
	return s.shownBooking(ctx, a, b)
}

func (s *Service) bookingSite(ctx context.Context, a Actor, b Booking) (BookingType, Site, *time.Location, error) {
	bt, err := s.store.BookingType(ctx, a.Tenant, b.TypeID)
	if err != nil {
		return BookingType{}, Site{}, nil, err
	}
	site, err := s.store.Site(ctx, a.Tenant, b.SiteID)
	if err != nil {
		return BookingType{}, Site{}, nil, err
	}
	loc, err := loadLocation(site.Timezone)
	if err != nil {
		return BookingType{}, Site{}, nil, fmt.Errorf("site %s: %w", site.ID, err)
	}
	return bt, site, loc, nil
}

// ConfirmBooking confirms a pending booking within its window: its visit
// is made and the pass sent.
func (s *Service) ConfirmBooking(ctx context.Context, a Actor, id string) (Booking, error) {
	cur, err := s.Booking(ctx, a, id)
	if err != nil {
		return Booking{}, err
	}
	bt, site, _, err := s.bookingSite(ctx, a, cur)
	if err != nil {
		return Booking{}, err
	}
	return s.updateBooking(ctx, a, id, func(b *Booking, w *BookingWrites, now time.Time) error {
		if b.Status != BookingPending {
			return &StateError{Object: "booking", State: string(b.Status), Action: "confirm"}
		}
		v, err := s.bookingVisit(ctx, a, bt, nil, b, site, now, w)
		if err != nil {
			return err
		}
		b.Status, b.ConfirmedAt, b.VisitID = BookingConfirmed, &now, v.ID
		return nil
	})
}

// DeclineBooking declines a pending booking, freeing its slot; the visitor
// is told.
func (s *Service) DeclineBooking(ctx context.Context, a Actor, id, reason string) (Booking, error) {
	cur, err := s.Booking(ctx, a, id)
	if err != nil {
		return Booking{}, err
	}
	var v ValidationError
	checkText(&v, "reason", reason, false, MaxReasonLen)
	if err := v.Err(); err != nil {
		return Booking{}, err
	}
	bt, site, loc, err := s.bookingSite(ctx, a, cur)
	if err != nil {
		return Booking{}, err
	}
	return s.updateBooking(ctx, a, id, func(b *Booking, w *BookingWrites, now time.Time) error {
		if b.Status != BookingPending {
			return &StateError{Object: "booking", State: string(b.Status), Action: "decline"}
		}
		b.Status, b.DeclinedAt, b.DeclineReason = BookingDeclined, &now, reason
		body := fmt.Sprintf("Hello %s, your booking of %s at %s for %s could not be accepted.", b.Visitor.Name, bt.Name, site.Name,
			b.StartsAt.In(loc).Format("Mon 2 Jan 2006 15:04 MST"))
		if reason != "" {
			body += " Reason: " + reason
		}
		w.Messages = append(w.Messages, s.visitorMessages(b.Tenant, "", b.Visitor, "Your booking was declined", body, now)...)
		return nil
	})
}

// visitorMessages tells a visitor something through every channel they
// can be reached on.
func (s *Service) visitorMessages(t Tenant, visitID string, vis Visitor, subject, body string, now time.Time) []Message {
	status := MessageQueued
	if t.Mode == ModeTest {
		status = MessageHeld
	}
	var out []Message
	for _, c := range defaultChannels(vis) {
		m := Message{ID: ids.New(ids.Message), Tenant: t, VisitID: visitID, Channel: c, Subject: subject, Body: body, Status: status, CreatedAt: now}
		m.To = vis.Email
		if c == ChannelSMS {
			m.To = vis.Phone
		}
		out = append(out, m)
	}
	return out
}

// bookedVisit reads the visit of a confirmed booking, which cancel and
// reschedule change with it.
func (s *Service) bookedVisit(ctx context.Context, a Actor, b Booking) (*Visit, error) {
	if b.VisitID == "" {
		return nil, nil
	}
	v, err := s.store.Visit(ctx, a.Tenant, b.VisitID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// CancelBooking cancels a confirmed booking and, with it, its visit if
// the visitor has not come yet; the pass stops working.
func (s *Service) CancelBooking(ctx context.Context, a Actor, id string) (Booking, error) {
	cur, err := s.Booking(ctx, a, id)
	if err != nil {
		return Booking{}, err
	}
	visit, err := s.bookedVisit(ctx, a, cur)
	if err != nil {
		return Booking{}, err
	}
	return s.updateBooking(ctx, a, id, func(b *Booking, w *BookingWrites, now time.Time) error {
		if b.Status != BookingConfirmed {
			return &StateError{Object: "booking", State: string(b.Status), Action: "cancel"}
		}
		if visit != nil && visit.Status != VisitExpected && visit.Status != VisitCancelled {
			return &StateError{Object: "booking", State: "booked for a visit that is " + string(visit.Status), Action: "cancel"}
		}
		b.Status, b.CancelledAt = BookingCancelled, &now
		if visit != nil && visit.Status == VisitExpected {
			visit.Status, visit.CancelledAt, visit.Pass.Revoked, visit.UpdatedAt = VisitCancelled, &now, true, now
			w.Visits = append(w.Visits, *visit)
		}
		return nil
	})
}

// RescheduleBookingInput moves a confirmed booking to another slot.
type RescheduleBookingInput struct {
	StartsAt Optional[*time.Time]
}

// RescheduleBooking moves a confirmed booking to another slot of its type
// that has room; its visit moves with it and the pass is sent again.
func (s *Service) RescheduleBooking(ctx context.Context, a Actor, id string, in RescheduleBookingInput) (Booking, error) {
	cur, err := s.Booking(ctx, a, id)
	if err != nil {
		return Booking{}, err
	}
	bt, site, loc, err := s.bookingSite(ctx, a, cur)
	if err != nil {
		return Booking{}, err
	}
	var v ValidationError
	now := s.Now()
	switch at := in.StartsAt.Value; {
	case !in.StartsAt.Set || at == nil:
		v.Add("starts_at", "is required")
	case !at.After(now):
		v.Add("starts_at", "must be in the future")
	case at.Sub(now) > MaxBookingAheadDays*24*time.Hour:
		v.Add("starts_at", "may be at most %d days ahead", MaxBookingAheadDays)
	case !isSlotStart(bt, loc, *at):
		v.Add("starts_at", "is not the start of a slot of this booking type; GET its slots")
	}
	if err := v.Err(); err != nil {
		return Booking{}, err
	}
	visit, err := s.bookedVisit(ctx, a, cur)
	if err != nil {
		return Booking{}, err
	}
	start := in.StartsAt.Value.UTC().Truncate(time.Microsecond)
	return s.updateBooking(ctx, a, id, func(b *Booking, w *BookingWrites, now time.Time) error {
		if b.Status != BookingConfirmed {
			return &StateError{Object: "booking", State: string(b.Status), Action: "reschedule"}
		}
		if visit != nil && visit.Status != VisitExpected {
			return &StateError{Object: "booking", State: "booked for a visit that is " + string(visit.Status), Action: "reschedule"}
		}
		b.StartsAt, b.EndsAt = start, start.Add(time.Duration(bt.SlotMinutes)*time.Minute)
		w.Capacity = bt.Capacity
		if visit != nil {
			visit.ExpectedAt, visit.ExpectedUntil, visit.UpdatedAt = utcPtr(&b.StartsAt), utcPtr(&b.EndsAt), now
			var vw VisitWrites
			s.sendPass(visit, &vw, b.Visitor, defaultChannels(b.Visitor), site, now)
			w.Messages = append(w.Messages, vw.Messages...)
			w.Visits = append(w.Visits, *visit)
		}
		return nil
	})
}

// releaseBooking cancels the confirmed booking a visit came from when the
// visit is cancelled or rescheduled, so the booking does not keep a place
// for a visit that will not happen. It runs after the visit's own change:
// a crash between the two leaves the booking confirmed, which cancelling
// it again repairs.
func (s *Service) releaseBooking(ctx context.Context, v Visit) error {
	if v.BookingID == "" || v.Status != VisitCancelled {
		return nil
	}
	_, err := s.store.UpdateBooking(ctx, v.Tenant, v.BookingID, s.Now(), func(b *Booking, _ *BookingWrites) error {
		if b.Status != BookingConfirmed || b.VisitID != v.ID {
			return errUnchanged
		}
		now := s.Now()
		b.Status, b.CancelledAt, b.UpdatedAt = BookingCancelled, &now, now
		return nil
	})
	if errors.Is(err, errUnchanged) || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// errUnchanged aborts an update that has nothing to do.
var errUnchanged = errors.New("unchanged")
