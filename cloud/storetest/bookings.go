package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
)

// --- builders ---------------------------------------------------------------

func (e *env) newBookingType(t testing.TB, tn cloud.Tenant, opts ...func(*cloud.BookingType)) cloud.BookingType {
	t.Helper()
	at := e.tick()
	bt := cloud.BookingType{ID: ids.New(ids.BookingType), Tenant: tn, Name: "Consultation", SiteID: ids.New(ids.Site),
		VisitType: "meeting", Public: true, ConfirmationWindowHours: cloud.DefaultConfirmationWindowHours, SlotMinutes: 30,
		Capacity: 2, Hours: []cloud.OpeningHours{{Days: []time.Weekday{time.Monday, time.Tuesday}, From: 9 * 60, Until: 17 * 60}},
		CreatedAt: at, UpdatedAt: at}
	for _, o := range opts {
		o(&bt)
	}
	require.NoError(t, e.s.CreateBookingType(t.Context(), bt))
	return bt
}

// slot is the start of the k-th half-hour slot from two days after the
// test began, in UTC.
func (e *env) slot(k int) time.Time {
	return e.now.Truncate(time.Hour).Add(48*time.Hour + time.Duration(k)*30*time.Minute)
}

// bookingDraft is a confirmed booking of the type in its slot k with a
// visitor of its own, and the writes that create that visitor.
func (e *env) bookingDraft(tn cloud.Tenant, bt cloud.BookingType, k int) (cloud.Booking, cloud.BookingWrites) {
	at := e.tick()
	vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: tn, Name: "Booker", CreatedAt: at, UpdatedAt: at}
	starts := e.slot(k)
	b := cloud.Booking{ID: ids.New(ids.Booking), Tenant: tn, TypeID: bt.ID, SiteID: bt.SiteID, VisitorID: vr.ID,
		Status: cloud.BookingConfirmed, StartsAt: starts, EndsAt: starts.Add(30 * time.Minute), ConfirmedAt: ptr(at),
		CreatedAt: at, UpdatedAt: at}
	return b, cloud.BookingWrites{Visitor: &vr}
}

// tryBooking is newBooking that returns CreateBooking's error, as of now,
// and the booking as a read should show it.
func (e *env) tryBooking(t testing.TB, tn cloud.Tenant, bt cloud.BookingType, k int, now time.Time,
	opts ...func(*cloud.Booking, *cloud.BookingWrites)) (cloud.Booking, error) {
	t.Helper()
	b, w := e.bookingDraft(tn, bt, k)
	for _, o := range opts {
		o(&b, &w)
	}
	err := e.s.CreateBooking(t.Context(), b, w, now)
	if w.Visitor != nil && w.Visitor.ID == b.VisitorID {
		b.Visitor = *w.Visitor
	}
	return b, err
}

// newBooking stores a booking of the type in its slot k with a visitor of
// its own, created in the same call, checking no capacity; opts change
// the booking and the writes before they are stored. It returns the
// booking as a read should show it, Visitor filled.
func (e *env) newBooking(t testing.TB, tn cloud.Tenant, bt cloud.BookingType, k int,
	opts ...func(*cloud.Booking, *cloud.BookingWrites)) cloud.Booking {
	t.Helper()
	b, err := e.tryBooking(t, tn, bt, k, e.now, opts...)
	require.NoError(t, err)
	return b
}

// bookingOf makes a booking one more of an existing visitor.
func bookingOf(vr cloud.Visitor) func(*cloud.Booking, *cloud.BookingWrites) {
	return func(b *cloud.Booking, w *cloud.BookingWrites) {
		b.VisitorID, b.Visitor, w.Visitor = vr.ID, vr, nil
	}
}

// capacity makes the write check the slot for n places.
func capacity(n int) func(*cloud.Booking, *cloud.BookingWrites) {
	return func(_ *cloud.Booking, w *cloud.BookingWrites) { w.Capacity = n }
}

// status sets a booking's status and, for pending, its confirm_by.
func status(st cloud.BookingStatus, confirmBy *time.Time) func(*cloud.Booking, *cloud.BookingWrites) {
	return func(b *cloud.Booking, _ *cloud.BookingWrites) {
		b.Status, b.ConfirmBy = st, confirmBy
		if st != cloud.BookingConfirmed {
			b.ConfirmedAt = nil
		}
	}
}

// --- comparisons ------------------------------------------------------------

func normBookingType(bt cloud.BookingType) cloud.BookingType {
	bt.CreatedAt, bt.UpdatedAt = bt.CreatedAt.UTC(), bt.UpdatedAt.UTC()
	var hours []cloud.OpeningHours
	for _, h := range bt.Hours {
		if len(h.Days) == 0 {
			h.Days = nil
		}
		hours = append(hours, h)
	}
	bt.Hours = hours
	return bt
}

func normBooking(b cloud.Booking) cloud.Booking {
	b.StartsAt, b.EndsAt, b.CreatedAt, b.UpdatedAt = b.StartsAt.UTC(), b.EndsAt.UTC(), b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	b.ConfirmBy, b.ConfirmedAt, b.DeclinedAt, b.CancelledAt = utcPtr(b.ConfirmBy), utcPtr(b.ConfirmedAt), utcPtr(b.DeclinedAt), utcPtr(b.CancelledAt)
	b.Visitor = normVisitor(b.Visitor)
	if len(b.CustomFields) == 0 {
		b.CustomFields = nil
	}
	return b
}

func requireBookingType(t testing.TB, want, got cloud.BookingType, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, normBookingType(want), normBookingType(got), msgAndArgs...)
}

// requireBooking compares bookings field by field; custom fields must
// match byte for byte.
func requireBooking(t testing.TB, want, got cloud.Booking, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, normBooking(want), normBooking(got), msgAndArgs...)
}

func (e *env) requireStoredBooking(t testing.TB, want cloud.Booking, msgAndArgs ...any) {
	t.Helper()
	got, err := e.s.Booking(t.Context(), want.Tenant, want.ID)
	require.NoError(t, err, msgAndArgs...)
	requireBooking(t, want, got, msgAndArgs...)
}

func requireSlotFull(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var ce *cloud.ConflictError
	require.ErrorAs(t, err, &ce, msgAndArgs...)
	require.Equal(t, "starts_at", ce.Field, msgAndArgs...)
	require.ErrorIs(t, err, cloud.ErrConflict, msgAndArgs...)
}

func bookingTypeRow(bt cloud.BookingType) row { return row{bt.ID, bt.CreatedAt.UTC()} }
func bookingRow(b cloud.Booking) row          { return row{b.ID, b.CreatedAt.UTC()} }

func (e *env) listBookingTypes(t testing.TB, tn cloud.Tenant, f cloud.BookingTypeFilter) []cloud.BookingType {
	t.Helper()
	return walk(t, 2, bookingTypeRow, func(p cloud.Page) ([]cloud.BookingType, bool, error) {
		return e.s.ListBookingTypes(t.Context(), tn, f, p)
	})
}

func (e *env) listBookings(t testing.TB, tn cloud.Tenant, f cloud.BookingFilter) []cloud.Booking {
	t.Helper()
	return walk(t, 2, bookingRow, func(p cloud.Page) ([]cloud.Booking, bool, error) {
		return e.s.ListBookings(t.Context(), tn, f, p)
	})
}

func (e *env) slotUse(t testing.TB, tn cloud.Tenant, typeID string, from, to, now time.Time) map[time.Time]int {
	t.Helper()
	use, err := e.s.SlotUse(t.Context(), tn, typeID, from, to, now)
	require.NoError(t, err)
	return use
}

// --- booking types ----------------------------------------------------------

func testBookingTypeCreateAndGet(t *testing.T, e *env) {
	p, team := e.newPerson(t, e.a), e.newTeam(t, e.a)
	full := e.newBookingType(t, e.a, func(bt *cloud.BookingType) {
		bt.Name, bt.VisitType = "Site induction — ünïcödé", "contractor"
		bt.Public, bt.RequiresConfirmation, bt.Archived = false, true, true
		bt.ConfirmationWindowHours, bt.SlotMinutes, bt.Capacity = 48, 45, 12
		bt.Hours = []cloud.OpeningHours{
			{Days: []time.Weekday{time.Saturday, time.Sunday, time.Monday}, From: 0, Until: passrule.MaxClock},
			{Days: []time.Weekday{time.Wednesday}, From: 13*60 + 15, Until: 13*60 + 45},
			{Days: []time.Weekday{}, From: 60, Until: 120},
		}
		bt.HostID, bt.TeamID = p.ID, team.ID
		bt.UpdatedAt = bt.CreatedAt.Add(time.Minute + 7*time.Microsecond)
	})
	minimal := e.newBookingType(t, e.a, func(bt *cloud.BookingType) {
		bt.Public, bt.ConfirmationWindowHours, bt.SlotMinutes, bt.Capacity, bt.Hours = false, 0, 0, 0, nil
	})
	for _, want := range []cloud.BookingType{full, minimal} {
		got, err := e.s.BookingType(t.Context(), e.a, want.ID)
		require.NoError(t, err)
		requireBookingType(t, want, got)
	}
	got, err := e.s.BookingType(t.Context(), e.a, full.ID)
	require.NoError(t, err)
	require.Equal(t, []time.Weekday{time.Saturday, time.Sunday, time.Monday}, got.Hours[0].Days, "days keep their order")

	listed := e.listBookingTypes(t, e.a, cloud.BookingTypeFilter{IncludeArchived: true})
	require.Equal(t, newestIDs(bookingTypeRow, full, minimal), idsOf(bookingTypeRow, listed))
	for _, bt := range listed {
		requireBookingType(t, map[string]cloud.BookingType{full.ID: full, minimal.ID: minimal}[bt.ID], bt, "listed %s", bt.ID)
	}
	_, err = e.s.BookingType(t.Context(), e.a, ids.New(ids.BookingType))
	requireNotFound(t, err)
}

func testBookingTypeUpdate(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	p := e.newPerson(t, e.a)
	want := bt
	want.Name, want.SiteID, want.VisitType = "Renamed", ids.New(ids.Site), "interview"
	want.Public, want.RequiresConfirmation, want.Archived = false, true, true
	want.ConfirmationWindowHours, want.SlotMinutes, want.Capacity = 6, 15, 1
	want.Hours = []cloud.OpeningHours{{Days: []time.Weekday{time.Friday}, From: 8 * 60, Until: 8*60 + 1}}
	want.HostID, want.UpdatedAt = p.ID, e.tick()
	got, err := e.s.UpdateBookingType(t.Context(), e.a, bt.ID, func(x *cloud.BookingType) error {
		requireBookingType(t, bt, *x, "fn sees the type as stored")
		*x = want
		return nil
	})
	require.NoError(t, err)
	requireBookingType(t, want, got)
	got, err = e.s.BookingType(t.Context(), e.a, bt.ID)
	require.NoError(t, err)
	requireBookingType(t, want, got)

	// Back to no hours and no host.
	want.Hours, want.HostID, want.UpdatedAt = nil, "", e.tick()
	_, err = e.s.UpdateBookingType(t.Context(), e.a, bt.ID, func(x *cloud.BookingType) error {
		x.Hours, x.HostID, x.UpdatedAt = nil, "", want.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	got, err = e.s.BookingType(t.Context(), e.a, bt.ID)
	require.NoError(t, err)
	requireBookingType(t, want, got)
}

func testBookingTypeUpdateAborts(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	_, err := e.s.UpdateBookingType(t.Context(), e.a, bt.ID, func(x *cloud.BookingType) error {
		x.Name, x.Archived, x.Capacity, x.Hours, x.UpdatedAt = "Changed", true, 99, nil, e.tick()
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	got, err := e.s.BookingType(t.Context(), e.a, bt.ID)
	require.NoError(t, err)
	requireBookingType(t, bt, got)
}

func testBookingTypeUpdateUnknown(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	for _, c := range []struct {
		name string
		tn   cloud.Tenant
		id   string
	}{{"unknown ID", e.a, ids.New(ids.BookingType)}, {"test mode", e.b, bt.ID}, {"another organisation", e.c, bt.ID}} {
		_, err := e.s.UpdateBookingType(t.Context(), c.tn, c.id, func(x *cloud.BookingType) error {
			t.Errorf("%s: fn called", c.name)
			x.Name = "Stolen"
			return nil
		})
		requireNotFound(t, err, c.name)
	}
	got, err := e.s.BookingType(t.Context(), e.a, bt.ID)
	require.NoError(t, err)
	requireBookingType(t, bt, got)
}

func testBookingTypeListFilters(t *testing.T, e *env) {
	s1, s2 := ids.New(ids.Site), ids.New(ids.Site)
	mk := func(tn cloud.Tenant, site string, public, archived bool) cloud.BookingType {
		return e.newBookingType(t, tn, func(bt *cloud.BookingType) { bt.SiteID, bt.Public, bt.Archived = site, public, archived })
	}
	open1 := mk(e.a, s1, true, false)
	open2 := mk(e.a, s2, true, false)
	private1 := mk(e.a, s1, false, false)
	archived1 := mk(e.a, s1, true, true)
	archived2 := mk(e.a, s2, false, true)
	// Another tenant's types that every filter below would match.
	mk(e.b, s1, true, false)
	mk(e.c, s1, true, true)

	for _, c := range []struct {
		name string
		f    cloud.BookingTypeFilter
		want []cloud.BookingType
	}{
		{"none leaves out archived", cloud.BookingTypeFilter{}, []cloud.BookingType{open1, open2, private1}},
		{"include archived", cloud.BookingTypeFilter{IncludeArchived: true}, []cloud.BookingType{open1, open2, private1, archived1, archived2}},
		{"site", cloud.BookingTypeFilter{SiteID: s1}, []cloud.BookingType{open1, private1}},
		{"site, include archived", cloud.BookingTypeFilter{SiteID: s1, IncludeArchived: true}, []cloud.BookingType{open1, private1, archived1}},
		{"site of nothing", cloud.BookingTypeFilter{SiteID: ids.New(ids.Site), IncludeArchived: true}, nil},
		{"public", cloud.BookingTypeFilter{Public: true}, []cloud.BookingType{open1, open2}},
		{"public is never archived", cloud.BookingTypeFilter{Public: true, IncludeArchived: true}, []cloud.BookingType{open1, open2}},
		{"public at a site", cloud.BookingTypeFilter{Public: true, SiteID: s2, IncludeArchived: true}, []cloud.BookingType{open2}},
	} {
		got := e.listBookingTypes(t, e.a, c.f)
		require.Equal(t, newestIDs(bookingTypeRow, c.want...), idsOf(bookingTypeRow, got), c.name)
		for _, bt := range got {
			want := c.want[slices.IndexFunc(c.want, func(x cloud.BookingType) bool { return x.ID == bt.ID })]
			requireBookingType(t, want, bt, "%s: %s", c.name, bt.ID)
		}
	}

	// Archiving a type takes it out of the default list.
	_, err := e.s.UpdateBookingType(t.Context(), e.a, open1.ID, func(x *cloud.BookingType) error {
		x.Archived = true
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, newestIDs(bookingTypeRow, open2), idsOf(bookingTypeRow, e.listBookingTypes(t, e.a, cloud.BookingTypeFilter{Public: true})))
}

func testBookingTypeTenantIsolation(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	btb := e.newBookingType(t, e.b, func(x *cloud.BookingType) { x.SiteID = bt.SiteID })
	btc := e.newBookingType(t, e.c, func(x *cloud.BookingType) { x.SiteID = bt.SiteID })
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.BookingType(t.Context(), other, bt.ID)
		requireNotFound(t, err, "get in %v", other)
		_, err = e.s.UpdateBookingType(t.Context(), other, bt.ID, func(x *cloud.BookingType) error {
			t.Errorf("update in %v: fn called", other)
			return nil
		})
		requireNotFound(t, err, "update in %v", other)
	}
	got, err := e.s.BookingType(t.Context(), e.a, bt.ID)
	require.NoError(t, err)
	requireBookingType(t, bt, got)
	for tn, want := range map[cloud.Tenant]cloud.BookingType{e.a: bt, e.b: btb, e.c: btc} {
		f := cloud.BookingTypeFilter{SiteID: bt.SiteID, IncludeArchived: true}
		require.Equal(t, []string{want.ID}, idsOf(bookingTypeRow, e.listBookingTypes(t, tn, f)), "list in %v", tn)
	}
}

func bookingTypePager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	return func(at time.Time) row {
			return bookingTypeRow(e.newBookingType(t, e.a, func(bt *cloud.BookingType) { bt.CreatedAt, bt.UpdatedAt = at, at }))
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListBookingTypes(t.Context(), e.a, cloud.BookingTypeFilter{}, p)
			return rowsOf(t, bookingTypeRow, xs, more, err)
		}
}

// --- bookings ---------------------------------------------------------------

// fullBooking sets every field of a booking, pointers included.
func (e *env) fullBooking(t testing.TB, tn cloud.Tenant) cloud.Booking {
	t.Helper()
	bt := e.newBookingType(t, tn)
	t1, t2, t3, t4, t5 := e.tick(), e.tick(), e.tick(), e.tick(), e.tick()
	return e.newBooking(t, tn, bt, 3, func(b *cloud.Booking, w *cloud.BookingWrites) {
		w.Visitor.Name, w.Visitor.Email, w.Visitor.Phone, w.Visitor.Company = "Ada Lovelace", "ada@example.com", "+447700900123", "Engines Ltd"
		b.Status = cloud.BookingCancelled
		b.StartsAt = b.StartsAt.Add(7 * time.Microsecond)
		b.EndsAt = b.StartsAt.Add(45*time.Minute + 3*time.Microsecond)
		b.ConfirmBy, b.ConfirmedAt, b.DeclinedAt, b.CancelledAt = ptr(t1), ptr(t2), ptr(t3), ptr(t4)
		b.DeclineReason = "Fully booked — ünïcödé <b>&amp;</b>"
		b.VisitID = ids.New(ids.Visit)
		b.Purpose = "Quarterly review\nsecond line"
		b.CustomFields = map[string]json.RawMessage{
			"badge":  json.RawMessage("{\"b\": 1,  \"a\": [1, 2.50, \"x\"],\n \"nested\": {\"z\": null, \"y\": {}}}"),
			"note":   json.RawMessage(`"caf\u00e9 <b>&amp;</b>"`),
			"count":  json.RawMessage(`12.50`),
			"agreed": json.RawMessage(`true`),
			"none":   json.RawMessage(`null`),
		}
		b.UpdatedAt = t5
	})
}

func testBookingCreateAndGet(t *testing.T, e *env) {
	full := e.fullBooking(t, e.a)
	got, err := e.s.Booking(t.Context(), e.a, full.ID)
	require.NoError(t, err)
	requireBooking(t, full, got)
	require.NotEmpty(t, got.Visitor.ID, "the visitor is filled")
	for k, raw := range full.CustomFields {
		require.Equal(t, string(raw), string(got.CustomFields[k]), "custom field %s byte for byte", k)
	}

	at := e.tick()
	minimal := cloud.Booking{ID: ids.New(ids.Booking), Tenant: e.a, TypeID: ids.New(ids.BookingType), SiteID: ids.New(ids.Site),
		Status: cloud.BookingPending, StartsAt: e.slot(0), EndsAt: e.slot(1), CreatedAt: at, UpdatedAt: at}
	require.NoError(t, e.s.CreateBooking(t.Context(), minimal, cloud.BookingWrites{}, e.now))
	got, err = e.s.Booking(t.Context(), e.a, minimal.ID)
	require.NoError(t, err)
	requireBooking(t, minimal, got)
	require.NotNil(t, got.CustomFields, "custom fields are an empty map, not nil, as a visit's")

	listed := e.listBookings(t, e.a, cloud.BookingFilter{Now: e.now})
	require.Equal(t, newestIDs(bookingRow, full, minimal), idsOf(bookingRow, listed))
	for _, b := range listed {
		requireBooking(t, map[string]cloud.Booking{full.ID: full, minimal.ID: minimal}[b.ID], b, "listed %s", b.ID)
	}
	_, err = e.s.Booking(t.Context(), e.a, ids.New(ids.Booking))
	requireNotFound(t, err)
}

// bookingWrites are a confirmation's writes: a new visit hosted by p2 for
// the booking, an existing visit stored again with its hosts changed to
// p3, a message and a new visitor.
type bookingWrites struct {
	w        cloud.BookingWrites
	newVisit cloud.Visit // as a read should show it
	changed  cloud.Visit // as a read should show it
	visitor  cloud.Visitor
}

func (e *env) bookingWrites(t testing.TB, tn cloud.Tenant, bookingID string) (bookingWrites, cloud.Person, cloud.Person, cloud.Person) {
	t.Helper()
	s := e.newSite(t, tn)
	p1, p2, p3 := e.newPerson(t, tn), e.newPerson(t, tn), e.newPerson(t, tn)
	existing := e.newVisit(t, tn, s.ID, hostedBy(p1))
	at := e.tick()
	vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: tn, Name: "New booker", Email: "new@example.com", CreatedAt: at, UpdatedAt: at}
	nv := cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitExpected, Type: "meeting", Source: cloud.SourceBooking,
		SiteID: s.ID, VisitorID: vr.ID, Visitor: vr, BookingID: bookingID, ExpectedAt: ptr(e.slot(2)), CreatedAt: at, UpdatedAt: at}
	hostedBy(p2)(&nv, nil)
	changed := existing
	changed.Status, changed.Purpose, changed.CancelledAt, changed.UpdatedAt = cloud.VisitCancelled, "Rebooked", ptr(at), at
	changed.RescheduledTo = &cloud.Rescheduled{VisitID: nv.ID, BookingID: bookingID, At: at}
	hostedBy(p3)(&changed, nil)
	m := e.newMessage(tn, nv.ID)
	return bookingWrites{
		w:        cloud.BookingWrites{Visitor: &vr, NewVisits: []cloud.Visit{nv}, Visits: []cloud.Visit{changed}, Messages: []cloud.Message{m}},
		newVisit: nv, changed: changed, visitor: vr,
	}, p1, p2, p3
}

// requireBookingWrites checks what bookingWrites made is stored.
func (e *env) requireBookingWrites(t testing.TB, tn cloud.Tenant, bw bookingWrites, p1, p2, p3 cloud.Person) {
	t.Helper()
	gotVisitor, err := e.s.Visitor(t.Context(), tn, bw.visitor.ID)
	require.NoError(t, err, "the new visitor")
	requireVisitor(t, bw.visitor, gotVisitor)
	got, err := e.s.Visit(t.Context(), tn, bw.newVisit.ID)
	require.NoError(t, err, "the new visit")
	requireVisit(t, bw.newVisit, got)
	got, err = e.s.Visit(t.Context(), tn, bw.changed.ID)
	require.NoError(t, err, "the visit stored again")
	requireVisit(t, bw.changed, got)
	hosted := func(p cloud.Person) []string {
		return idsOf(visitRow, e.listVisits(t, tn, cloud.VisitFilter{HostID: p.ID}))
	}
	require.Equal(t, []string{bw.newVisit.ID}, hosted(p2), "the new visit's host")
	require.Empty(t, hosted(p1), "the stored-again visit's old host")
	require.Equal(t, []string{bw.changed.ID}, hosted(p3), "the stored-again visit's new host")
	msgs := e.listMessages(t, tn, cloud.MessageFilter{})
	require.Len(t, msgs, 1)
	require.Equal(t, normMessage(bw.w.Messages[0]), normMessage(msgs[0]))
}

// CreateBooking writes the booking with its visitor, new visits, visits
// stored again and messages.
func testBookingCreateWrites(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	id := ids.New(ids.Booking)
	bw, p1, p2, p3 := e.bookingWrites(t, e.a, id)
	b := e.newBooking(t, e.a, bt, 0, func(b *cloud.Booking, w *cloud.BookingWrites) {
		b.ID, b.VisitorID, b.VisitID = id, bw.visitor.ID, bw.newVisit.ID
		*w = bw.w
		w.Capacity = 1
	})
	e.requireStoredBooking(t, b)
	e.requireBookingWrites(t, e.a, bw, p1, p2, p3)
}

// A CreateBooking that fails part-way leaves nothing behind.
func testBookingCreateAllOrNothing(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	id := ids.New(ids.Booking)
	bw, p1, _, _ := e.bookingWrites(t, e.a, id)
	m := bw.w.Messages[0]
	_, err := e.tryBooking(t, e.a, bt, 0, e.now, func(b *cloud.Booking, w *cloud.BookingWrites) {
		b.ID, b.VisitorID = id, bw.visitor.ID
		*w = bw.w
		w.Messages = []cloud.Message{m, m} // the same message twice: the second insert fails
	})
	require.Error(t, err)
	_, err = e.s.Booking(t.Context(), e.a, id)
	requireNotFound(t, err, "the booking")
	_, err = e.s.Visitor(t.Context(), e.a, bw.visitor.ID)
	requireNotFound(t, err, "the visitor")
	_, err = e.s.Visit(t.Context(), e.a, bw.newVisit.ID)
	requireNotFound(t, err, "the new visit")
	got, err := e.s.Visit(t.Context(), e.a, bw.changed.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.VisitExpected, got.Status, "the visit stored again is as it was")
	require.Equal(t, []string{bw.changed.ID}, idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p1.ID})),
		"the hosts of the visit stored again")
	require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{}), "the messages")
}

// CreateBooking fills a slot up to its capacity; the next booking is
// refused with a conflict at starts_at and writes nothing.
func testBookingCapacity(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	other := e.newBookingType(t, e.a)
	b1 := e.newBooking(t, e.a, bt, 0, capacity(2))
	b2 := e.newBooking(t, e.a, bt, 0, capacity(2), status(cloud.BookingPending, ptr(e.now.Add(time.Hour))))
	require.Equal(t, map[time.Time]int{e.slot(0): 2}, e.slotUse(t, e.a, bt.ID, e.slot(0), e.slot(1), e.now))

	var vr cloud.Visitor
	var msg cloud.Message
	var nv cloud.Visit
	s := e.newSite(t, e.a)
	refused, err := e.tryBooking(t, e.a, bt, 0, e.now, capacity(2), func(b *cloud.Booking, w *cloud.BookingWrites) {
		vr = *w.Visitor
		msg = e.newMessage(e.a, "")
		nv = cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting", SiteID: s.ID,
			VisitorID: vr.ID, BookingID: b.ID, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
		w.NewVisits, w.Messages = []cloud.Visit{nv}, []cloud.Message{msg}
	})
	requireSlotFull(t, err)
	_, err = e.s.Booking(t.Context(), e.a, refused.ID)
	requireNotFound(t, err, "the refused booking")
	_, err = e.s.Visitor(t.Context(), e.a, vr.ID)
	requireNotFound(t, err, "the refused booking's new visitor")
	_, err = e.s.Visit(t.Context(), e.a, nv.ID)
	requireNotFound(t, err, "the refused booking's visit")
	require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{}), "the refused booking's messages")
	require.Equal(t, newestIDs(bookingRow, b1, b2), idsOf(bookingRow, e.listBookings(t, e.a, cloud.BookingFilter{Now: e.now})))

	// A larger capacity, another slot, another type and another tenant each
	// have room; no capacity checks nothing.
	e.newBooking(t, e.a, bt, 0, capacity(3))
	e.newBooking(t, e.a, bt, 1, capacity(1))
	e.newBooking(t, e.a, other, 0, capacity(1))
	e.newBooking(t, e.b, bt, 0, capacity(1))
	e.newBooking(t, e.c, bt, 0, capacity(1))
	e.newBooking(t, e.a, bt, 0)
	_, err = e.tryBooking(t, e.a, bt, 0, e.now, capacity(4))
	requireSlotFull(t, err, "four bookings fill a slot of four")
}

// A pending booking holds its place only until confirm_by; declined,
// cancelled and expired bookings hold none.
func testBookingCapacityReleased(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	deadline := e.now.Add(time.Hour)
	e.newBooking(t, e.a, bt, 0, status(cloud.BookingPending, ptr(deadline)))
	_, err := e.tryBooking(t, e.a, bt, 0, e.now, capacity(1))
	requireSlotFull(t, err, "a pending booking before confirm_by")
	_, err = e.tryBooking(t, e.a, bt, 0, deadline.Add(-time.Microsecond), capacity(1))
	requireSlotFull(t, err, "a microsecond before confirm_by")
	_, err = e.tryBooking(t, e.a, bt, 0, deadline, capacity(1))
	require.NoError(t, err, "at confirm_by the pending booking no longer holds its place")
	_, err = e.tryBooking(t, e.a, bt, 0, deadline, capacity(1))
	requireSlotFull(t, err, "the booking made at confirm_by fills the slot")

	for _, st := range []cloud.BookingStatus{cloud.BookingDeclined, cloud.BookingCancelled, cloud.BookingExpired} {
		e.newBooking(t, e.a, bt, 1, status(st, ptr(deadline)))
	}
	e.newBooking(t, e.a, bt, 1, status(cloud.BookingPending, nil))
	e.newBooking(t, e.a, bt, 1, status(cloud.BookingPending, ptr(e.now)))
	e.newBooking(t, e.a, bt, 1, capacity(1))
	_, err = e.tryBooking(t, e.a, bt, 1, e.now, capacity(1))
	requireSlotFull(t, err, "the one confirmed booking fills the slot")
}

// Moving a booking to a full slot is refused and changes nothing; an
// update within its own slot does not count the booking against itself.
func testBookingUpdateCapacity(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	full := e.newBooking(t, e.a, bt, 0, capacity(1))
	mine := e.newBooking(t, e.a, bt, 1, status(cloud.BookingPending, ptr(e.now.Add(time.Hour))))
	_, err := e.s.UpdateBooking(t.Context(), e.a, mine.ID, e.now, func(b *cloud.Booking, w *cloud.BookingWrites) error {
		b.StartsAt, b.EndsAt, b.UpdatedAt = full.StartsAt, full.EndsAt, e.tick()
		w.Capacity = 1
		w.Messages = append(w.Messages, e.newMessage(e.a, ""))
		return nil
	})
	requireSlotFull(t, err)
	e.requireStoredBooking(t, mine, "the refused move")
	require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{}), "the refused move's messages")

	// Confirming in its own slot of one place: the booking itself does not
	// take the place.
	want := mine
	want.Status, want.ConfirmBy, want.ConfirmedAt, want.UpdatedAt = cloud.BookingConfirmed, nil, ptr(e.tick()), e.tick()
	got, err := e.s.UpdateBooking(t.Context(), e.a, mine.ID, e.now, func(b *cloud.Booking, w *cloud.BookingWrites) error {
		b.Status, b.ConfirmBy, b.ConfirmedAt, b.UpdatedAt = want.Status, want.ConfirmBy, want.ConfirmedAt, want.UpdatedAt
		w.Capacity = 1
		return nil
	})
	require.NoError(t, err)
	requireBooking(t, want, got)

	// Moved to a slot with room, it now fills that one.
	want.StartsAt, want.EndsAt, want.UpdatedAt = e.slot(2), e.slot(3), e.tick()
	_, err = e.s.UpdateBooking(t.Context(), e.a, mine.ID, e.now, func(b *cloud.Booking, w *cloud.BookingWrites) error {
		b.StartsAt, b.EndsAt, b.UpdatedAt = want.StartsAt, want.EndsAt, want.UpdatedAt
		w.Capacity = 1
		return nil
	})
	require.NoError(t, err)
	e.requireStoredBooking(t, want)
	_, err = e.tryBooking(t, e.a, bt, 2, e.now, capacity(1))
	requireSlotFull(t, err, "the moved booking fills its new slot")
	_, err = e.tryBooking(t, e.a, bt, 1, e.now, capacity(1))
	require.NoError(t, err, "the moved booking left its old slot")
}

// Bookings racing for the last places of a slot: exactly capacity of
// them succeed.
func testBookingCreateConcurrent(t *testing.T, e *env) {
	const workers, places = 8, 3
	bt := e.newBookingType(t, e.a)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		created  []string
		conflict int
		errs     []error
		start    = make(chan struct{})
	)
	drafts := make([]cloud.Booking, workers)
	writes := make([]cloud.BookingWrites, workers)
	for i := range workers {
		drafts[i], writes[i] = e.bookingDraft(e.a, bt, 0)
		writes[i].Capacity = places
	}
	for i := range workers {
		wg.Go(func() {
			<-start
			err := e.s.CreateBooking(t.Context(), drafts[i], writes[i], e.now)
			mu.Lock()
			defer mu.Unlock()
			var ce *cloud.ConflictError
			switch {
			case err == nil:
				created = append(created, drafts[i].ID)
			case errors.As(err, &ce):
				conflict++
			default:
				errs = append(errs, fmt.Errorf("worker %d: %w", i, err))
			}
		})
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Len(t, created, places, "bookings that took a place")
	require.Equal(t, workers-places, conflict, "bookings refused")
	require.ElementsMatch(t, created, idsOf(bookingRow, e.listBookings(t, e.a, cloud.BookingFilter{Now: e.now})))
	require.Equal(t, map[time.Time]int{e.slot(0): places}, e.slotUse(t, e.a, bt.ID, e.slot(0), e.slot(1), e.now))
}

// Concurrent updates of one booking take turns: none is lost, and each
// sees the one before.
func testBookingUpdateConcurrent(t *testing.T, e *env) {
	const workers = 8
	b := e.newBooking(t, e.a, e.newBookingType(t, e.a), 0)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		seen  []int
		start = make(chan struct{})
	)
	for w := range workers {
		wg.Go(func() {
			<-start
			got, err := e.s.UpdateBooking(t.Context(), e.a, b.ID, e.now, func(x *cloud.Booking, wr *cloud.BookingWrites) error {
				x.Purpose += "x"
				wr.Messages = append(wr.Messages, e.newMessage(e.a, ""))
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("worker %d: %w", w, err))
				return
			}
			seen = append(seen, len(got.Purpose))
		})
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	got, err := e.s.Booking(t.Context(), e.a, b.ID)
	require.NoError(t, err)
	require.Len(t, got.Purpose, workers, "updates were lost")
	slices.Sort(seen)
	require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, seen, "each update saw the one before")
	require.Len(t, e.listMessages(t, e.a, cloud.MessageFilter{}), workers)
}

// Bookings racing to move into the last places of a slot: exactly
// capacity of them move; the others stay where they were.
func testBookingUpdateConcurrentMoves(t *testing.T, e *env) {
	const workers, places = 8, 2
	bt := e.newBookingType(t, e.a)
	target := e.slot(0)
	movers := make([]cloud.Booking, workers)
	for i := range workers {
		movers[i] = e.newBooking(t, e.a, bt, i+1)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		moved    []string
		conflict int
		errs     []error
		start    = make(chan struct{})
	)
	for i := range workers {
		wg.Go(func() {
			<-start
			_, err := e.s.UpdateBooking(t.Context(), e.a, movers[i].ID, e.now, func(x *cloud.Booking, w *cloud.BookingWrites) error {
				x.StartsAt, x.EndsAt = target, target.Add(30*time.Minute)
				w.Capacity = places
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			var ce *cloud.ConflictError
			switch {
			case err == nil:
				moved = append(moved, movers[i].ID)
			case errors.As(err, &ce):
				conflict++
			default:
				errs = append(errs, fmt.Errorf("worker %d: %w", i, err))
			}
		})
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Len(t, moved, places, "bookings that moved")
	require.Equal(t, workers-places, conflict, "moves refused")
	use := e.slotUse(t, e.a, bt.ID, target, e.slot(workers+1), e.now)
	require.Equal(t, places, use[target])
	for _, b := range movers {
		if !slices.Contains(moved, b.ID) {
			e.requireStoredBooking(t, b, "a refused move leaves %s where it was", b.ID)
		}
	}
}

func testBookingUpdate(t *testing.T, e *env) {
	before := e.fullBooking(t, e.a)
	vr := e.newBooking(t, e.a, e.newBookingType(t, e.a), 0).Visitor
	want := before
	want.TypeID, want.SiteID, want.VisitorID, want.Visitor = ids.New(ids.BookingType), ids.New(ids.Site), vr.ID, vr
	want.Status, want.StartsAt, want.EndsAt = cloud.BookingConfirmed, e.slot(8), e.slot(9)
	want.ConfirmBy, want.ConfirmedAt, want.DeclinedAt, want.CancelledAt = nil, ptr(e.tick()), nil, nil
	want.DeclineReason, want.VisitID, want.Purpose = "", ids.New(ids.Visit), "Moved"
	want.CustomFields = map[string]json.RawMessage{"badge": json.RawMessage(`{"a":  2}`)}
	want.UpdatedAt = e.tick()
	got, err := e.s.UpdateBooking(t.Context(), e.a, before.ID, e.now, func(b *cloud.Booking, w *cloud.BookingWrites) error {
		requireBooking(t, before, *b, "fn sees the booking as stored")
		require.Equal(t, cloud.BookingWrites{}, *w, "fn starts with nothing to write")
		*b = want
		b.Visitor = cloud.Visitor{} // the store fills it, from the visitor it points at
		return nil
	})
	require.NoError(t, err)
	requireBooking(t, want, got, "the booking returned carries the visitor it now points at")
	e.requireStoredBooking(t, want)
}

func testBookingUpdateAborts(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	b := e.newBooking(t, e.a, bt, 0, status(cloud.BookingPending, ptr(e.now.Add(time.Hour))))
	bw, p1, _, _ := e.bookingWrites(t, e.a, b.ID)
	_, err := e.s.UpdateBooking(t.Context(), e.a, b.ID, e.now, func(x *cloud.Booking, w *cloud.BookingWrites) error {
		x.Status, x.ConfirmedAt, x.VisitID, x.VisitorID, x.UpdatedAt = cloud.BookingConfirmed, ptr(e.tick()), bw.newVisit.ID, bw.visitor.ID, e.tick()
		*w = bw.w
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	e.requireStoredBooking(t, b)
	_, err = e.s.Visitor(t.Context(), e.a, bw.visitor.ID)
	requireNotFound(t, err, "the new visitor of an aborted update")
	_, err = e.s.Visit(t.Context(), e.a, bw.newVisit.ID)
	requireNotFound(t, err, "the new visit of an aborted update")
	got, err := e.s.Visit(t.Context(), e.a, bw.changed.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.VisitExpected, got.Status, "the visit an aborted update stored again")
	require.Equal(t, []string{bw.changed.ID}, idsOf(visitRow, e.listVisits(t, e.a, cloud.VisitFilter{HostID: p1.ID})),
		"the hosts of the visit an aborted update stored again")
	require.Empty(t, e.listMessages(t, e.a, cloud.MessageFilter{}), "the messages of an aborted update")
}

// A confirmation: the booking points at its new visit, written with a new
// visitor, the message and an older visit stored again, in one update.
func testBookingUpdateWrites(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	b := e.newBooking(t, e.a, bt, 0, status(cloud.BookingPending, ptr(e.now.Add(time.Hour))))
	bw, p1, p2, p3 := e.bookingWrites(t, e.a, b.ID)
	want := b
	want.Status, want.ConfirmBy, want.ConfirmedAt, want.VisitID = cloud.BookingConfirmed, nil, ptr(e.tick()), bw.newVisit.ID
	want.VisitorID, want.Visitor, want.UpdatedAt = bw.visitor.ID, bw.visitor, e.tick()
	got, err := e.s.UpdateBooking(t.Context(), e.a, b.ID, e.now, func(x *cloud.Booking, w *cloud.BookingWrites) error {
		x.Status, x.ConfirmBy, x.ConfirmedAt, x.VisitID = want.Status, want.ConfirmBy, want.ConfirmedAt, want.VisitID
		x.VisitorID, x.UpdatedAt = want.VisitorID, want.UpdatedAt
		*w = bw.w
		w.Capacity = bt.Capacity
		return nil
	})
	require.NoError(t, err)
	requireBooking(t, want, got, "the booking returned carries the visitor it now points at")
	e.requireStoredBooking(t, want)
	e.requireBookingWrites(t, e.a, bw, p1, p2, p3)
}

func testBookingUpdateUnknown(t *testing.T, e *env) {
	b := e.newBooking(t, e.a, e.newBookingType(t, e.a), 0)
	for _, c := range []struct {
		name string
		tn   cloud.Tenant
		id   string
	}{{"unknown ID", e.a, ids.New(ids.Booking)}, {"test mode", e.b, b.ID}, {"another organisation", e.c, b.ID}} {
		_, err := e.s.UpdateBooking(t.Context(), c.tn, c.id, e.now, func(x *cloud.Booking, w *cloud.BookingWrites) error {
			t.Errorf("%s: fn called", c.name)
			x.Purpose = "Stolen"
			w.Messages = append(w.Messages, e.newMessage(c.tn, ""))
			return nil
		})
		requireNotFound(t, err, c.name)
	}
	e.requireStoredBooking(t, b)
	for _, tn := range []cloud.Tenant{e.a, e.b, e.c} {
		require.Empty(t, e.listMessages(t, tn, cloud.MessageFilter{}))
	}
}

func testBookingListFilters(t *testing.T, e *env) {
	s1, s2 := ids.New(ids.Site), ids.New(ids.Site)
	bt1 := e.newBookingType(t, e.a, func(bt *cloud.BookingType) { bt.SiteID = s1 })
	bt2 := e.newBookingType(t, e.a, func(bt *cloud.BookingType) { bt.SiteID = s2 })
	open := ptr(e.now.Add(time.Hour))
	lapsed := ptr(e.now.Add(-time.Hour))
	confirmed := e.newBooking(t, e.a, bt1, 0)
	ada := confirmed.Visitor
	pendingOpen := e.newBooking(t, e.a, bt2, 2, status(cloud.BookingPending, open))
	pendingLapsed := e.newBooking(t, e.a, bt1, 4, status(cloud.BookingPending, lapsed), bookingOf(ada))
	expired := e.newBooking(t, e.a, bt2, 4, status(cloud.BookingExpired, lapsed))
	declined := e.newBooking(t, e.a, bt1, 6, status(cloud.BookingDeclined, open), bookingOf(ada))
	// Another tenant's booking that every filter below would match.
	e.newBooking(t, e.b, bt1, 2, status(cloud.BookingPending, lapsed), bookingOf(ada))

	at := func(k int) *time.Time { return ptr(e.slot(k)) }
	st := func(s ...cloud.BookingStatus) []cloud.BookingStatus { return s }
	for _, c := range []struct {
		name string
		f    cloud.BookingFilter
		want []cloud.Booking
	}{
		{"none", cloud.BookingFilter{Now: e.now}, []cloud.Booking{confirmed, pendingOpen, pendingLapsed, expired, declined}},
		{"confirmed", cloud.BookingFilter{Status: st(cloud.BookingConfirmed), Now: e.now}, []cloud.Booking{confirmed}},
		{"pending leaves out a lapsed window", cloud.BookingFilter{Status: st(cloud.BookingPending), Now: e.now},
			[]cloud.Booking{pendingOpen}},
		{"expired takes in a lapsed window", cloud.BookingFilter{Status: st(cloud.BookingExpired), Now: e.now},
			[]cloud.Booking{pendingLapsed, expired}},
		{"pending or expired", cloud.BookingFilter{Status: st(cloud.BookingExpired, cloud.BookingPending), Now: e.now},
			[]cloud.Booking{pendingOpen, pendingLapsed, expired}},
		{"pending, later", cloud.BookingFilter{Status: st(cloud.BookingPending), Now: *open}, nil},
		{"expired, at confirm_by", cloud.BookingFilter{Status: st(cloud.BookingExpired), Now: *open},
			[]cloud.Booking{pendingOpen, pendingLapsed, expired}},
		{"pending, earlier", cloud.BookingFilter{Status: st(cloud.BookingPending), Now: lapsed.Add(-time.Microsecond)},
			[]cloud.Booking{pendingOpen, pendingLapsed}},
		{"status nobody has", cloud.BookingFilter{Status: st(cloud.BookingCancelled), Now: e.now}, nil},
		{"type", cloud.BookingFilter{TypeID: bt1.ID, Now: e.now}, []cloud.Booking{confirmed, pendingLapsed, declined}},
		{"type of nothing", cloud.BookingFilter{TypeID: ids.New(ids.BookingType), Now: e.now}, nil},
		{"site", cloud.BookingFilter{SiteID: s2, Now: e.now}, []cloud.Booking{pendingOpen, expired}},
		{"visitor", cloud.BookingFilter{VisitorID: ada.ID, Now: e.now}, []cloud.Booking{confirmed, pendingLapsed, declined}},
		{"starts from, inclusive", cloud.BookingFilter{StartsFrom: at(4), Now: e.now}, []cloud.Booking{pendingLapsed, expired, declined}},
		{"starts before, exclusive", cloud.BookingFilter{StartsBefore: at(4), Now: e.now}, []cloud.Booking{confirmed, pendingOpen}},
		{"starts between", cloud.BookingFilter{StartsFrom: at(1), StartsBefore: at(5), Now: e.now},
			[]cloud.Booking{pendingOpen, pendingLapsed, expired}},
		{"created after, exclusive", cloud.BookingFilter{CreatedAfter: ptr(pendingLapsed.CreatedAt), Now: e.now},
			[]cloud.Booking{expired, declined}},
		{"status, type and visitor", cloud.BookingFilter{Status: st(cloud.BookingExpired, cloud.BookingDeclined), TypeID: bt1.ID,
			VisitorID: ada.ID, Now: e.now}, []cloud.Booking{pendingLapsed, declined}},
		{"type and site that exclude each other", cloud.BookingFilter{TypeID: bt1.ID, SiteID: s2, Now: e.now}, nil},
		{"every field", cloud.BookingFilter{Status: st(cloud.BookingExpired), TypeID: bt1.ID, SiteID: s1, VisitorID: ada.ID,
			StartsFrom: at(4), StartsBefore: at(5), CreatedAfter: ptr(confirmed.CreatedAt), Now: e.now}, []cloud.Booking{pendingLapsed}},
	} {
		got := e.listBookings(t, e.a, c.f)
		require.Equal(t, newestIDs(bookingRow, c.want...), idsOf(bookingRow, got), c.name)
		for _, b := range got {
			want := c.want[slices.IndexFunc(c.want, func(x cloud.Booking) bool { return x.ID == b.ID })]
			requireBooking(t, want, b, "%s: %s (listed as stored)", c.name, b.ID)
		}
	}
}

func testBookingTenantIsolation(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	b := e.newBooking(t, e.a, bt, 0)
	bb := e.newBooking(t, e.b, bt, 0)
	bc := e.newBooking(t, e.c, bt, 0)
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.Booking(t.Context(), other, b.ID)
		requireNotFound(t, err, "get in %v", other)
		for _, f := range []cloud.BookingFilter{{TypeID: bt.ID}, {SiteID: bt.SiteID}, {VisitorID: b.VisitorID}} {
			require.NotContains(t, idsOf(bookingRow, e.listBookings(t, other, f)), b.ID, "list in %v with %+v", other, f)
		}
	}
	require.Equal(t, []string{b.ID}, idsOf(bookingRow, e.listBookings(t, e.a, cloud.BookingFilter{})))
	require.Equal(t, []string{bb.ID}, idsOf(bookingRow, e.listBookings(t, e.b, cloud.BookingFilter{})))
	require.Equal(t, []string{bc.ID}, idsOf(bookingRow, e.listBookings(t, e.c, cloud.BookingFilter{})))
	e.requireStoredBooking(t, b)
}

// A booking never shows another tenant's visitor, even one with its ID.
func testBookingVisitorOfTenant(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	theirs := e.newBooking(t, e.b, bt, 0)
	b := e.newBooking(t, e.a, bt, 0, func(b *cloud.Booking, w *cloud.BookingWrites) {
		b.VisitorID, w.Visitor = theirs.VisitorID, nil
	})
	got, err := e.s.Booking(t.Context(), e.a, b.ID)
	require.NoError(t, err)
	requireBooking(t, b, got)
	require.Equal(t, cloud.Visitor{}, got.Visitor)
	require.Equal(t, theirs.VisitorID, got.VisitorID)
}

func testBookingSlotUse(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	other := e.newBookingType(t, e.a)
	deadline := e.now.Add(time.Hour)
	e.newBooking(t, e.a, bt, 0)
	e.newBooking(t, e.a, bt, 0, status(cloud.BookingPending, ptr(deadline)))
	e.newBooking(t, e.a, bt, 0, status(cloud.BookingCancelled, nil))
	e.newBooking(t, e.a, bt, 1, status(cloud.BookingPending, ptr(deadline)))
	e.newBooking(t, e.a, bt, 2, status(cloud.BookingDeclined, nil))
	e.newBooking(t, e.a, bt, 2, status(cloud.BookingExpired, nil))
	e.newBooking(t, e.a, bt, 3)
	e.newBooking(t, e.a, bt, 4)
	// Bookings that must not count: another type's, another tenant's.
	e.newBooking(t, e.a, other, 0)
	e.newBooking(t, e.b, bt, 1)
	e.newBooking(t, e.c, bt, 1)

	s := e.slot
	for _, c := range []struct {
		name     string
		from, to time.Time
		now      time.Time
		want     map[time.Time]int
	}{
		{"every slot", s(-1), s(10), e.now, map[time.Time]int{s(0): 2, s(1): 1, s(3): 1, s(4): 1}},
		{"from inclusive, to exclusive", s(1), s(4), e.now, map[time.Time]int{s(1): 1, s(3): 1}},
		{"after confirm_by", s(0), s(10), deadline, map[time.Time]int{s(0): 1, s(3): 1, s(4): 1}},
		{"an empty range", s(5), s(10), e.now, map[time.Time]int{}},
	} {
		got := e.slotUse(t, e.a, bt.ID, c.from, c.to, c.now)
		require.Equal(t, c.want, got, c.name)
		for k := range got {
			require.Equal(t, time.UTC, k.Location(), "%s: keys are in UTC", c.name)
		}
	}
	require.Equal(t, map[time.Time]int{s(1): 1}, e.slotUse(t, e.b, bt.ID, s(0), s(10), e.now), "another mode")
	require.Empty(t, e.slotUse(t, e.a, ids.New(ids.BookingType), s(0), s(10), e.now), "a type with no bookings")
}

func testBookingExpire(t *testing.T, e *env) {
	bt := e.newBookingType(t, e.a)
	lapsed := ptr(e.now.Add(-time.Minute))
	atNow := ptr(e.now)
	open := ptr(e.now.Add(time.Microsecond))
	expiring := []cloud.Booking{
		e.newBooking(t, e.a, bt, 0, status(cloud.BookingPending, lapsed)),
		e.newBooking(t, e.a, bt, 1, status(cloud.BookingPending, atNow)),
		e.newBooking(t, e.b, bt, 0, status(cloud.BookingPending, lapsed)),
		e.newBooking(t, e.c, bt, 0, status(cloud.BookingPending, lapsed)),
	}
	kept := []cloud.Booking{
		e.newBooking(t, e.a, bt, 2, status(cloud.BookingPending, open)),
		e.newBooking(t, e.a, bt, 2, status(cloud.BookingPending, nil)),
		e.newBooking(t, e.a, bt, 3, status(cloud.BookingConfirmed, lapsed)),
		e.newBooking(t, e.a, bt, 3, status(cloud.BookingDeclined, lapsed)),
	}
	n, err := e.s.ExpireBookings(t.Context(), e.now, nil)
	require.NoError(t, err)
	require.Equal(t, int64(len(expiring)), n)
	for _, b := range expiring {
		want := b
		want.Status, want.UpdatedAt = cloud.BookingExpired, e.now
		e.requireStoredBooking(t, want, "booking %s, pending past confirm_by", b.ID)
	}
	for _, b := range kept {
		e.requireStoredBooking(t, b, "booking %s, %s", b.ID, b.Status)
	}

	n, err = e.s.ExpireBookings(t.Context(), e.now, nil)
	require.NoError(t, err)
	require.Zero(t, n, "expiring twice")
	later := open.Add(time.Hour)
	n, err = e.s.ExpireBookings(t.Context(), later, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the open window, once it closes")
	want := kept[0]
	want.Status, want.UpdatedAt = cloud.BookingExpired, later
	e.requireStoredBooking(t, want)
}

func bookingPager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	bt := e.newBookingType(t, e.a)
	return func(at time.Time) row {
			return bookingRow(e.newBooking(t, e.a, bt, 0, func(b *cloud.Booking, _ *cloud.BookingWrites) { b.CreatedAt, b.UpdatedAt = at, at }))
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListBookings(t.Context(), e.a, cloud.BookingFilter{Now: e.now}, p)
			return rowsOf(t, bookingRow, xs, more, err)
		}
}
