package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/svc-vms/svc/shared/form"
)

// eventStore is the Store the service writes through: it records the
// events of each write (docs/decisions.md, "Events") in the context the
// write gets, from the objects as they were before and after, and the
// store inserts them in the write's transaction (TakeEvents). Deriving
// them here, from what each write changes, rather than at every call,
// means no write path can change an object without its event.
type eventStore struct {
	Store
	s *Service
}

// renderVisit renders a visit as the API shows it: sensitive and masked
// answers left out.
func (e eventStore) renderVisit(ctx context.Context, forms map[string]*form.Form, v Visit) ([]byte, error) {
	if err := e.s.redact(ctx, v.Tenant, forms, &v); err != nil {
		return nil, err
	}
	return e.s.render(v)
}

// visitBefore is what a visit was before a write, for telling what the
// write changed.
type visitBefore struct {
	status   VisitStatus
	sent     *time.Time
	revoked  bool
	receiver Receiver
	hosts    int
	data     []byte // rendered, updated_at and all
}

func (e eventStore) before(ctx context.Context, forms map[string]*form.Form, v Visit) (visitBefore, error) {
	b := visitBefore{status: v.Status, sent: v.Pass.LastSentAt, revoked: v.Pass.Revoked, receiver: v.Receiver, hosts: len(v.Hosts)}
	var err error
	b.data, err = e.renderVisit(ctx, forms, v)
	return b, err
}

// visitChanged records the events of a visit written again: one for its
// new status, pass.sent and pass.revoked as they happened, and
// visit.handed_over or else visit.updated when nothing else says what
// changed.
func (e eventStore) visitChanged(ctx context.Context, l *eventLog, forms map[string]*form.Form, b visitBefore, v Visit) error {
	var types []string
	if v.Status != b.status {
		switch v.Status {
		case VisitExpected:
			if b.status == VisitAwaitingApproval {
				types = append(types, EventVisitApproved)
			}
		case VisitDenied:
			types = append(types, EventVisitDenied)
		case VisitCancelled:
			types = append(types, EventVisitCancelled)
		case VisitCheckedIn:
			types = append(types, EventVisitCheckedIn)
		case VisitCheckedOut:
			types = append(types, EventVisitCheckedOut)
		}
	}
	if v.Pass.Revoked && !b.revoked {
		types = append(types, EventPassRevoked)
	}
	if v.Pass.LastSentAt != nil && (b.sent == nil || !b.sent.Equal(*v.Pass.LastSentAt)) {
		types = append(types, EventPassSent)
	}
	data, err := e.renderVisit(ctx, forms, v)
	if err != nil {
		return err
	}
	if len(types) == 0 {
		switch {
		case v.Receiver != b.receiver || len(v.Hosts) != b.hosts:
			types = append(types, EventVisitHandedOver)
		case !bytes.Equal(withoutUpdatedAt(data), withoutUpdatedAt(b.data)):
			types = append(types, EventVisitUpdated)
		}
	}
	return e.s.record(ctx, l, types, "visit", v.ID, v.Tenant, data)
}

// visitCreated records a new visit: visit.created, then visit.checked_in
// when it starts checked in (a walk-in, a re-entry), pass.sent when its
// pass went out.
func (e eventStore) visitCreated(ctx context.Context, l *eventLog, forms map[string]*form.Form, v Visit) error {
	types := []string{EventVisitCreated}
	if v.Status == VisitCheckedIn {
		types = append(types, EventVisitCheckedIn)
	}
	if v.Pass.LastSentAt != nil && v.Pass.ForVisitID == v.ID { // a re-entry's pass is its source's, sent before
		types = append(types, EventPassSent)
	}
	data, err := e.renderVisit(ctx, forms, v)
	if err != nil {
		return err
	}
	return e.s.record(ctx, l, types, "visit", v.ID, v.Tenant, data)
}

// withoutUpdatedAt blanks a rendered object's updated_at, so two renders
// compare on what changed.
func withoutUpdatedAt(data []byte) []byte {
	i := bytes.Index(data, []byte(`"updated_at":"`))
	if i < 0 {
		return data
	}
	j := bytes.IndexByte(data[i+len(`"updated_at":"`):], '"')
	if j < 0 {
		return data
	}
	out := append([]byte{}, data[:i]...)
	return append(out, data[i+len(`"updated_at":"`)+j+1:]...)
}

func (e eventStore) CreateVisit(ctx context.Context, v Visit, w VisitWrites) error {
	if e.s.render == nil {
		return e.Store.CreateVisit(ctx, v, w)
	}
	ctx, l := withEvents(ctx)
	forms := map[string]*form.Form{}
	for _, nv := range append([]Visit{v}, w.Visits...) {
		if err := e.visitCreated(ctx, l, forms, nv); err != nil {
			return err
		}
	}
	return e.s.committed(l, e.Store.CreateVisit(ctx, v, w))
}

func (e eventStore) UpdateVisit(ctx context.Context, t Tenant, id string, fn func(*Visit, *VisitWrites) error) (Visit, error) {
	if e.s.render == nil {
		return e.Store.UpdateVisit(ctx, t, id, fn)
	}
	ctx, l := withEvents(ctx)
	v, err := e.Store.UpdateVisit(ctx, t, id, func(v *Visit, w *VisitWrites) error {
		l.events = l.events[:0] // a store may call fn again
		forms := map[string]*form.Form{}
		b, err := e.before(ctx, forms, *v)
		if err != nil {
			return err
		}
		if err := fn(v, w); err != nil {
			return err
		}
		for _, nv := range w.Visits {
			if err := e.visitCreated(ctx, l, forms, nv); err != nil {
				return err
			}
		}
		return e.visitChanged(ctx, l, forms, b, *v)
	})
	return v, e.s.committed(l, err)
}

func (e eventStore) ApplyFact(ctx context.Context, ef EdgeFact, fn func(func(string) (Visit, error), *FactWrites) error) (bool, error) {
	if e.s.render == nil {
		return e.Store.ApplyFact(ctx, ef, fn)
	}
	ctx, l := withEvents(ctx)
	forms := map[string]*form.Form{}
	applied, err := e.Store.ApplyFact(ctx, ef, func(load func(string) (Visit, error), w *FactWrites) error {
		l.events = l.events[:0]
		fe := e.factEvents(ctx, l, forms)
		if err := fn(fe.wrap(load), w); err != nil {
			return err
		}
		return fe.done(w)
	})
	return applied, e.s.committed(l, err)
}

// factEvents records the events of one fact: it remembers each visit the
// fact loads as it was, and compares what the fact writes with that.
type factEvents struct {
	e       eventStore
	ctx     context.Context
	l       *eventLog
	forms   map[string]*form.Form
	befores map[string]visitBefore
	failed  error
}

func (e eventStore) factEvents(ctx context.Context, l *eventLog, forms map[string]*form.Form) *factEvents {
	return &factEvents{e: e, ctx: ctx, l: l, forms: forms, befores: map[string]visitBefore{}}
}

// wrap returns load, remembering each visit it returns the first time.
func (fe *factEvents) wrap(load func(string) (Visit, error)) func(string) (Visit, error) {
	return func(id string) (Visit, error) {
		v, err := load(id)
		if _, seen := fe.befores[id]; err == nil && !seen {
			b, err := fe.e.before(fe.ctx, fe.forms, v)
			if err != nil && fe.failed == nil {
				fe.failed = err
			}
			fe.befores[id] = b
		}
		return v, err
	}
}

// done records the events of what the fact wrote: its new visits and the
// visits it changed.
func (fe *factEvents) done(w *FactWrites) error {
	if fe.failed != nil {
		return fe.failed
	}
	for _, v := range w.New {
		if err := fe.e.visitCreated(fe.ctx, fe.l, fe.forms, v); err != nil {
			return err
		}
	}
	for _, v := range w.Visits {
		b, ok := fe.befores[v.ID]
		if !ok {
			return errors.New("apply fact: a visit written that was not loaded")
		}
		if err := fe.e.visitChanged(fe.ctx, fe.l, fe.forms, b, v); err != nil {
			return err
		}
	}
	return nil
}

// bookingEvent is the event a booking's move to status fires.
func bookingEvent(from, to BookingStatus) string {
	if from == to {
		return EventBookingRescheduled
	}
	switch to {
	case BookingConfirmed:
		return EventBookingConfirmed
	case BookingDeclined:
		return EventBookingDeclined
	case BookingExpired:
		return EventBookingExpired
	case BookingCancelled:
		return EventBookingCancelled
	}
	return ""
}

// renderBooking renders a booking as the API shows it.
func (e eventStore) renderBooking(ctx context.Context, forms map[string]*form.Form, b Booking) ([]byte, error) {
	bt, err := e.s.store.BookingType(ctx, b.Tenant, b.TypeID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	probe := Visit{Tenant: b.Tenant, Type: bt.VisitType, CustomFields: b.CustomFields}
	if err := e.s.redact(ctx, b.Tenant, forms, &probe); err != nil {
		return nil, err
	}
	b.CustomFields = probe.CustomFields
	return e.s.render(b)
}

// bookingVisits records the events of the visits a booking write makes
// or stores again (visits stored again are cancelled or moved with it).
func (e eventStore) bookingVisits(ctx context.Context, l *eventLog, forms map[string]*form.Form, w BookingWrites) error {
	for _, v := range w.NewVisits {
		if err := e.visitCreated(ctx, l, forms, v); err != nil {
			return err
		}
	}
	for _, v := range w.Visits {
		typ := EventVisitUpdated
		if v.Status == VisitCancelled {
			typ = EventVisitCancelled
		}
		data, err := e.renderVisit(ctx, forms, v)
		if err != nil {
			return err
		}
		if err := e.s.record(ctx, l, []string{typ}, "visit", v.ID, v.Tenant, data); err != nil {
			return err
		}
	}
	return nil
}

func (e eventStore) CreateBooking(ctx context.Context, b Booking, w BookingWrites, now time.Time) error {
	if e.s.render == nil {
		return e.Store.CreateBooking(ctx, b, w, now)
	}
	ctx, l := withEvents(ctx)
	forms := map[string]*form.Form{}
	data, err := e.renderBooking(ctx, forms, b)
	if err != nil {
		return err
	}
	if err := e.s.record(ctx, l, []string{EventBookingCreated}, "booking", b.ID, b.Tenant, data); err != nil {
		return err
	}
	if err := e.bookingVisits(ctx, l, forms, w); err != nil {
		return err
	}
	return e.s.committed(l, e.Store.CreateBooking(ctx, b, w, now))
}

func (e eventStore) UpdateBooking(ctx context.Context, t Tenant, id string, now time.Time, fn func(*Booking, *BookingWrites) error) (Booking, error) {
	if e.s.render == nil {
		return e.Store.UpdateBooking(ctx, t, id, now, fn)
	}
	ctx, l := withEvents(ctx)
	b, err := e.Store.UpdateBooking(ctx, t, id, now, func(b *Booking, w *BookingWrites) error {
		l.events = l.events[:0]
		from, starts := b.Status, b.StartsAt
		if err := fn(b, w); err != nil {
			return err
		}
		forms := map[string]*form.Form{}
		if typ := bookingEvent(from, b.Status); typ != "" && (from != b.Status || !starts.Equal(b.StartsAt)) {
			data, err := e.renderBooking(ctx, forms, *b)
			if err != nil {
				return err
			}
			if err := e.s.record(ctx, l, []string{typ}, "booking", b.ID, b.Tenant, data); err != nil {
				return err
			}
		}
		return e.bookingVisits(ctx, l, forms, *w)
	})
	return b, e.s.committed(l, err)
}

func (e eventStore) ExpireBookings(ctx context.Context, now time.Time, fn func(Booking) error) (int64, error) {
	if e.s.render == nil {
		return e.Store.ExpireBookings(ctx, now, fn)
	}
	ctx, l := withEvents(ctx)
	forms := map[string]*form.Form{}
	n, err := e.Store.ExpireBookings(ctx, now, func(b Booking) error {
		if fn != nil {
			if err := fn(b); err != nil {
				return err
			}
		}
		data, err := e.renderBooking(ctx, forms, b)
		if err != nil {
			return err
		}
		return e.s.record(ctx, l, []string{EventBookingExpired}, "booking", b.ID, b.Tenant, data)
	})
	return n, e.s.committed(l, err)
}

func (e eventStore) CreatePerson(ctx context.Context, p Person) error {
	if e.s.render == nil {
		return e.Store.CreatePerson(ctx, p)
	}
	ctx, l := withEvents(ctx)
	data, err := e.s.render(p)
	if err != nil {
		return err
	}
	if err := e.s.record(ctx, l, []string{EventPersonCreated}, "person", p.ID, p.Tenant, data); err != nil {
		return err
	}
	return e.s.committed(l, e.Store.CreatePerson(ctx, p))
}

func (e eventStore) UpdatePerson(ctx context.Context, t Tenant, id string, fn func(*Person) error) (Person, error) {
	if e.s.render == nil {
		return e.Store.UpdatePerson(ctx, t, id, fn)
	}
	ctx, l := withEvents(ctx)
	p, err := e.Store.UpdatePerson(ctx, t, id, func(p *Person) error {
		l.events = l.events[:0]
		active := p.Active
		before, err := e.s.render(*p)
		if err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
		data, err := e.s.render(*p)
		if err != nil {
			return err
		}
		var typ string
		switch {
		case active && !p.Active:
			typ = EventPersonDeactivate
		case !active && p.Active:
			typ = EventPersonReactivate
		case !bytes.Equal(withoutUpdatedAt(before), withoutUpdatedAt(data)):
			typ = EventPersonUpdated
		default:
			return nil
		}
		return e.s.record(ctx, l, []string{typ}, "person", p.ID, p.Tenant, data)
	})
	return p, e.s.committed(l, err)
}

// ErasedVisitor is visitor.erased's data: the visitor's ID and when it
// was erased, and no personal data.
type ErasedVisitor struct {
	ID       string
	ErasedAt time.Time
}

func (e eventStore) EraseVisitor(ctx context.Context, t Tenant, id string, fn func(*Visit), bfn func(*Booking)) error {
	if e.s.render == nil {
		return e.Store.EraseVisitor(ctx, t, id, fn, bfn)
	}
	ctx, l := withEvents(ctx)
	data, err := e.s.render(ErasedVisitor{ID: id, ErasedAt: e.s.Now()})
	if err != nil {
		return err
	}
	if err := e.s.record(ctx, l, []string{EventVisitorErased}, "visitor", id, t, data); err != nil {
		return err
	}
	// Earlier events of the visitor's visits and bookings lose the
	// personal data too: each is rewritten with what the object shows
	// after the erasure (TakeScrubs).
	forms := map[string]*form.Form{}
	l.scrub, l.scrubT = map[string]json.RawMessage{}, t
	err = e.Store.EraseVisitor(ctx, t, id, func(v *Visit) {
		fn(v)
		d, err := e.renderVisit(ctx, forms, *v)
		if err != nil {
			l.failed = err
			return
		}
		l.scrub[v.ID] = d
	}, func(b *Booking) {
		bfn(b)
		d, err := e.s.render(*b)
		if err != nil {
			l.failed = err
			return
		}
		l.scrub[b.ID] = d
	})
	return e.s.committed(l, err)
}

func (e eventStore) ApplyFacts(ctx context.Context, facts []EdgeFact, fn func(int, func(string) (Visit, error), *FactWrites) error) ([]bool, error) {
	if e.s.render == nil {
		return e.Store.ApplyFacts(ctx, facts, fn)
	}
	ctx, l := withEvents(ctx)
	forms := map[string]*form.Form{}
	applied, err := e.Store.ApplyFacts(ctx, facts, func(i int, load func(string) (Visit, error), w *FactWrites) error {
		// Each fact's events compare the visits as the batch had left
		// them before it with what it writes, so a check-in and a
		// check-out of one visit in one batch fire both, in order.
		fe := e.factEvents(ctx, l, forms)
		if err := fn(i, fe.wrap(load), w); err != nil {
			return err
		}
		return fe.done(w)
	})
	return applied, e.s.committed(l, err)
}
