package cloud

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/passrule"
)

// BookingStatus is where a booking is in its life (the spec's "Booking
// statuses").
type BookingStatus string

// The booking statuses.
const (
	BookingPending   BookingStatus = "pending"   // waits for a host to confirm it; holds its slot until confirm_by
	BookingConfirmed BookingStatus = "confirmed" // has a visit
	BookingDeclined  BookingStatus = "declined"  // a host declined it
	BookingExpired   BookingStatus = "expired"   // nobody confirmed it by confirm_by; its slot is free
	BookingCancelled BookingStatus = "cancelled" // cancelled after confirmation
)

// BookingStatuses lists every status, for validating filters.
var BookingStatuses = []BookingStatus{BookingPending, BookingConfirmed, BookingDeclined, BookingExpired, BookingCancelled}

// DefaultConfirmationWindowHours is how long a host has to confirm a
// booking when its type does not say.
const DefaultConfirmationWindowHours = 24

// OpeningHours is one span of a booking type's week: on each of Days, from
// From until Until at the site. Until is after From: a span does not cross
// midnight.
type OpeningHours struct {
	Days  []time.Weekday
	From  passrule.Clock
	Until passrule.Clock
}

// BookingType is a kind of appointment visitors book in slots: its visit
// type, where and when, how many per slot, and whether a host must confirm.
type BookingType struct {
	ID                      string
	Tenant                  Tenant
	Name                    string
	SiteID                  string
	VisitType               string // key of the visit type its visits have
	Public                  bool   // visitors may book it with a publishable key
	RequiresConfirmation    bool
	ConfirmationWindowHours int
	SlotMinutes             int
	Capacity                int // bookings a slot holds
	Hours                   []OpeningHours
	HostID                  string // who the visits are for; empty: TeamID or reception
	TeamID                  string
	Archived                bool // no new bookings
	CreatedAt               time.Time
	UpdatedAt               time.Time
}

// BookingTypeFilter narrows ListBookingTypes. Empty fields do not filter.
type BookingTypeFilter struct {
	SiteID          string
	Public          bool // only public types that are not archived
	IncludeArchived bool
}

// Booking is a visitor's slot on a booking type.
type Booking struct {
	ID            string
	Tenant        Tenant
	TypeID        string
	SiteID        string
	VisitorID     string
	Visitor       Visitor // filled on read from the visitor record
	Status        BookingStatus
	StartsAt      time.Time // the slot
	EndsAt        time.Time
	ConfirmBy     *time.Time // set while a booking needs confirming; nil when confirmed on creation
	ConfirmedAt   *time.Time
	DeclinedAt    *time.Time
	DeclineReason string
	CancelledAt   *time.Time
	VisitID       string // the visit made when it was confirmed; empty until then
	Purpose       string
	CustomFields  map[string]json.RawMessage
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// HoldsSlot reports whether b takes a place in its slot at now: a
// confirmed booking, or a pending one whose confirmation window is open.
func (b Booking) HoldsSlot(now time.Time) bool {
	return b.Status == BookingConfirmed || b.Status == BookingPending && b.ConfirmBy != nil && now.Before(*b.ConfirmBy)
}

// BookingFilter narrows ListBookings. Empty fields do not filter.
type BookingFilter struct {
	Status       []BookingStatus // as of Now: a pending booking past confirm_by counts as expired
	TypeID       string
	SiteID       string
	VisitorID    string
	StartsFrom   *time.Time // starts_at at or after
	StartsBefore *time.Time // starts_at before
	CreatedAfter *time.Time // hides records older than the plan's history
	Now          time.Time
}

// PendingCheck is what a booking stored as pending must satisfy to be
// kept by a status filter: BookingFilter.StoredStatuses.
type PendingCheck int

// The checks of a stored pending booking's confirm_by against the
// filter's Now.
const (
	PendingAny     PendingCheck = iota // kept whatever its confirm_by
	PendingLive                        // kept while confirm_by is NULL or after Now: still pending
	PendingExpired                     // kept once confirm_by is at or before Now: expired
)

// StoredStatuses turns the filter's statuses, which are as of Now, into
// the statuses stored in a row and the check of a stored pending row's
// confirm_by, so that a store matches the stored column (which an index
// serves) rather than an expression of it: a pending booking past
// confirm_by counts as expired. Each status is listed once, in
// BookingStatuses order.
func (f BookingFilter) StoredStatuses() ([]string, PendingCheck) {
	wantPending, wantExpired := false, false
	for _, st := range f.Status {
		wantPending = wantPending || st == BookingPending
		wantExpired = wantExpired || st == BookingExpired
	}
	var stored []string
	for _, st := range BookingStatuses {
		if slices.Contains(f.Status, st) || (st == BookingPending && wantExpired) {
			stored = append(stored, string(st))
		}
	}
	switch {
	case wantPending && wantExpired:
		return stored, PendingAny
	case wantPending:
		return stored, PendingLive
	case wantExpired:
		return stored, PendingExpired
	}
	return stored, PendingAny
}

// BookingWrites are records written in the same transaction as a booking
// change.
type BookingWrites struct {
	Visitor   *Visitor  // a new visitor record
	NewVisits []Visit   // visits made by the change (confirmation)
	Visits    []Visit   // existing visits stored again whole (cancel, reschedule)
	Messages  []Message // outbox
	// Capacity, when above zero, makes the write check the booking's slot
	// (type and starts_at): if Capacity bookings other than this one
	// already hold it (Booking.HoldsSlot at the call's now), the write
	// aborts with a *ConflictError at starts_at.
	Capacity int
}
