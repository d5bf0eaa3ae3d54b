package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/ids"
)

// Event is a state change as integrators see it: written in the same
// transaction as the change, read through GET /events and delivered to
// webhook endpoints (docs/decisions.md, "Events").
type Event struct {
	ID         string // evt_...
	Tenant     Tenant
	Type       string          // one of EventTypes
	ObjectType string          // visit, booking, person, visitor, ...
	ObjectID   string          // the object data describes
	Data       json.RawMessage // the object as the API returned it at that moment
	RequestID  string          // the API request that made the change; empty when none
	CreatedAt  time.Time
}

// The event types: 30 across the nine kinds of object the spec names, and
// one about webhook endpoints.
// Every one is listed here, fired or not yet (docs/decisions.md, "Events",
// says which issue fires which).
const (
	EventVisitCreated       = "visit.created"
	EventVisitUpdated       = "visit.updated"
	EventVisitApproved      = "visit.approved"
	EventVisitDenied        = "visit.denied"
	EventVisitCancelled     = "visit.cancelled"
	EventVisitCheckedIn     = "visit.checked_in"
	EventVisitCheckedOut    = "visit.checked_out"
	EventVisitHandedOver    = "visit.handed_over"
	EventPassSent           = "pass.sent"
	EventPassRevoked        = "pass.revoked"
	EventDeliveryReceived   = "delivery.received"
	EventDeliveryNotified   = "delivery.notified"
	EventDeliveryPickedUp   = "delivery.picked_up"
	EventBookingCreated     = "booking.created"
	EventBookingConfirmed   = "booking.confirmed"
	EventBookingDeclined    = "booking.declined"
	EventBookingExpired     = "booking.expired"
	EventBookingCancelled   = "booking.cancelled"
	EventBookingRescheduled = "booking.rescheduled"
	EventAttendancePunch    = "attendance.punched"
	EventTimesheetReady     = "timesheet.to_confirm"
	EventTimesheetOK        = "timesheet.approved"
	EventWatchlistMatched   = "watchlist.matched"
	EventRollCallStarted    = "roll_call.started"
	EventRollCallClosed     = "roll_call.closed"
	EventPersonCreated      = "person.created"
	EventPersonUpdated      = "person.updated"
	EventPersonDeactivate   = "person.deactivated"
	EventPersonReactivate   = "person.reactivated"
	EventVisitorErased      = "visitor.erased"

	// EventWebhookEndpointDisabled is one more, beyond the 30 of the
	// preview: an endpoint disabled because it failed for the whole retry
	// schedule (docs/decisions.md, "Webhooks").
	EventWebhookEndpointDisabled = "webhook_endpoint.disabled"

	// The fleet's (issue 17; docs/decisions.md, "Enrolment (issue 17)"):
	// data is the Edge. edge.updated and edge.update_failed are for the
	// signed updates to fire.
	EventEdgeOnline       = "edge.online"
	EventEdgeOffline      = "edge.offline"
	EventEdgeRevoked      = "edge.revoked"
	EventEdgeUpdated      = "edge.updated"
	EventEdgeUpdateFailed = "edge.update_failed"
)

// EventTypes lists every event type, sorted.
var EventTypes = func() []string {
	l := []string{
		EventVisitCreated, EventVisitUpdated, EventVisitApproved, EventVisitDenied, EventVisitCancelled,
		EventVisitCheckedIn, EventVisitCheckedOut, EventVisitHandedOver,
		EventPassSent, EventPassRevoked,
		EventDeliveryReceived, EventDeliveryNotified, EventDeliveryPickedUp,
		EventBookingCreated, EventBookingConfirmed, EventBookingDeclined, EventBookingExpired, EventBookingCancelled, EventBookingRescheduled,
		EventAttendancePunch, EventTimesheetReady, EventTimesheetOK,
		EventWatchlistMatched, EventRollCallStarted, EventRollCallClosed,
		EventPersonCreated, EventPersonUpdated, EventPersonDeactivate, EventPersonReactivate,
		EventVisitorErased,
		EventWebhookEndpointDisabled,
		EventEdgeOnline, EventEdgeOffline, EventEdgeRevoked, EventEdgeUpdated, EventEdgeUpdateFailed,
	}
	slices.Sort(l)
	return l
}()

// ValidEventType reports whether t is one of EventTypes.
func ValidEventType(t string) bool {
	_, ok := slices.BinarySearch(EventTypes, t)
	return ok
}

// EventFilter narrows ListEvents. Empty fields do not filter.
type EventFilter struct {
	Type         string
	CreatedGTE   *time.Time // created at or after
	CreatedLT    *time.Time // created before
	CreatedAfter *time.Time // hides records older than the plan's history
	ObjectID     string
}

// An EventRenderer turns the object of an event into its API
// representation: the API's own encoding, so an event's data is exactly
// what a GET of the object returned at that moment. httpapi provides it.
type EventRenderer func(obj any) (json.RawMessage, error)

// eventLog collects the events and audit entries of the store write a
// context is passed to.
type eventLog struct {
	events []Event
	audit  []AuditEvent
	scrub  map[string]json.RawMessage // object ID → its rendering after an erasure: TakeScrubs
	scrubT Tenant                     // whose objects scrub holds
	failed error                      // a rendering for scrub failed: the write must not commit
	taken  bool                       // a transaction took them
	took   int                        // how many events it took
}

type eventsKey struct{}

// withEvents returns ctx carrying an event log for one store write: the
// one ctx already carries, or a new one. A service method that audits a
// write it makes through eventStore starts the log, adds the audit entry
// and lets eventStore add the events.
func withEvents(ctx context.Context) (context.Context, *eventLog) {
	if l, ok := ctx.Value(eventsKey{}).(*eventLog); ok {
		return ctx, l
	}
	l := &eventLog{}
	return context.WithValue(ctx, eventsKey{}, l), l
}

// TakeEvents returns the events recorded for the store write ctx goes
// with, and forgets them. Stores call it inside every write transaction,
// before committing, and insert what it returns in that transaction: so an
// event is committed exactly with its change.
func TakeEvents(ctx context.Context) []Event {
	l, _ := ctx.Value(eventsKey{}).(*eventLog)
	if l == nil {
		return nil
	}
	evs := l.events
	l.events, l.taken, l.took = nil, true, l.took+len(evs)
	return evs
}

// TakeAudit is TakeEvents for the audit entries recorded for the write:
// stores insert them in the same transaction.
func TakeAudit(ctx context.Context) []AuditEvent {
	l, _ := ctx.Value(eventsKey{}).(*eventLog)
	if l == nil {
		return nil
	}
	a := l.audit
	l.audit, l.taken = nil, true
	return a
}

// TakeScrubs returns, for the write ctx goes with, the objects whose
// earlier events must lose the personal data an erasure removed: each
// object's ID with its rendering after the erasure. Stores call it in the
// transaction and rewrite each earlier event of each object with
// ScrubEventData.
// An error means the write must not commit.
func TakeScrubs(ctx context.Context) (Tenant, map[string]json.RawMessage, error) {
	l, _ := ctx.Value(eventsKey{}).(*eventLog)
	if l == nil {
		return Tenant{}, nil, nil
	}
	m, err := l.scrub, l.failed
	l.scrub = nil
	return l.scrubT, m, err
}

// erasedKeys are the members of a visit's or booking's rendering that hold
// the visitor's personal data: what EraseVisitor clears.
var erasedKeys = []string{"visitor", "purpose", "vehicle_plate", "custom_fields"}

// ScrubEventData returns an earlier event's data with the personal data
// of an erased visitor replaced by what the object shows after the
// erasure (erased): the visitor, purpose, vehicle plate and custom fields,
// and a reschedule's note. The rest (status, times, IDs) stays as it was.
func ScrubEventData(data, erased json.RawMessage) (json.RawMessage, error) {
	var old, now map[string]json.RawMessage
	if err := json.Unmarshal(data, &old); err != nil {
		return nil, fmt.Errorf("scrub event: %w", err)
	}
	if err := json.Unmarshal(erased, &now); err != nil {
		return nil, fmt.Errorf("scrub event: %w", err)
	}
	for _, k := range erasedKeys {
		if _, ok := old[k]; ok {
			old[k] = now[k]
		}
	}
	var moved map[string]json.RawMessage
	if raw, ok := old["rescheduled_to"]; ok && json.Unmarshal(raw, &moved) == nil && moved != nil {
		if _, ok := moved["note"]; ok {
			moved["note"] = json.RawMessage("null")
			old["rescheduled_to"], _ = json.Marshal(moved)
		}
	}
	return json.Marshal(old)
}

// committed returns err, or an error when the write succeeded while events
// were recorded and no transaction took them: a store method that writes
// outside a transaction, which would change an object without its event.
func (l *eventLog) committed(err error) error {
	if err == nil && len(l.events) > 0 && !l.taken {
		return fmt.Errorf("store write committed without its %d events (%s first): it must write in a transaction that calls TakeEvents", len(l.events), l.events[0].Type)
	}
	if err == nil && len(l.audit) > 0 && !l.taken {
		return fmt.Errorf("store write committed without its audit entry %s: it must write in a transaction that calls TakeAudit", l.audit[0].Action)
	}
	return err
}

// committed is l.committed, and once events are committed it wakes the
// webhook dispatcher, so their first delivery attempt need not wait for
// its next poll.
func (s *Service) committed(l *eventLog, err error) error {
	err = l.committed(err)
	if err == nil && l.took > 0 {
		s.wakeWebhooks()
	}
	return err
}

// atomic runs fn in one store transaction (Store.Atomic): the reads that
// decide a write request's action and everything it writes, the stored
// response included, commit together or not at all. The webhook
// dispatcher is woken once the events have committed with it.
func (s *Service) atomic(ctx context.Context, fn func(context.Context) error) error {
	ctx, l := withEvents(ctx)
	return s.committed(l, s.store.Atomic(ctx, fn))
}

// SetEventRenderer sets how event data is rendered. Until it is set the
// service writes no events; svc-cloud sets it before serving.
func (s *Service) SetEventRenderer(r EventRenderer) { s.render = r }

// record adds to l one event of each type, in order, about the object
// objType objID rendered as data.
func (s *Service) record(ctx context.Context, l *eventLog, types []string, objType, objID string, t Tenant, data json.RawMessage) error {
	now := s.Now()
	for _, typ := range types {
		if !ValidEventType(typ) {
			return fmt.Errorf("record event: %q is not an event type", typ)
		}
		l.events = append(l.events, Event{ID: ids.New(ids.Event), Tenant: t, Type: typ, ObjectType: objType, ObjectID: objID,
			Data: data, RequestID: RequestID(ctx), CreatedAt: now})
	}
	return nil
}

// Events returns a page of the tenant's events, newest first. In live mode
// it needs Growth or above.
func (s *Service) Events(ctx context.Context, a Actor, f EventFilter, p Page) ([]Event, bool, error) {
	if err := s.eventsAllowed(a); err != nil {
		return nil, false, err
	}
	f.CreatedAfter = s.historyStart(a)
	return s.store.ListEvents(ctx, a.Tenant, f, p)
}

// Event returns one of the tenant's events or ErrNotFound.
func (s *Service) Event(ctx context.Context, a Actor, id string) (Event, error) {
	if err := s.eventsAllowed(a); err != nil {
		return Event{}, err
	}
	e, err := s.store.Event(ctx, a.Tenant, id)
	if err != nil {
		return Event{}, err
	}
	if err := s.checkHistory(a, e.CreatedAt); err != nil {
		return Event{}, ErrNotFound
	}
	return e, nil
}

// eventsAllowed applies the spec's plan rule: reading events in live mode
// needs Growth or above; test mode works on every plan.
func (s *Service) eventsAllowed(a Actor) error {
	if a.Tenant.Mode == ModeLive && !a.Plan.Includes(PlanGrowth) {
		return &PlanError{Detail: fmt.Sprintf("Reading events in live mode needs the Growth plan or above; this organisation is on %s.", a.Plan)}
	}
	return nil
}
