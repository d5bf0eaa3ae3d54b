package cloud

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// feedStore is the Service's view of its Store: every write that may
// append to a site feed (Store's "per-site change feed") tells the
// service once it has committed, so the publisher need not wait for its
// next poll.
type feedStore struct {
	Store
	changed func()
}

func (f feedStore) after(ctx context.Context, err error) error {
	if err == nil {
		f.note(ctx)
	}
	return err
}

// note tells the service of a write that may have appended to a feed: at
// once, or when the Atomic call the write is part of has committed. A
// write inside Atomic returns before its commit, and a publisher woken
// then finds nothing new; the change would wait for the next notice or
// poll (20 ms at 50 visits a second, docs/performance.md, "Drain, third
// pass").
func (f feedStore) note(ctx context.Context) {
	if w, ok := ctx.Value(atomicKey{}).(*atomicWrites); ok {
		w.changed.Store(true)
		return
	}
	f.changed()
}

// atomicKey marks a context inside feedStore.Atomic.
type atomicKey struct{}

// atomicWrites is what the writes of one Atomic call noted.
type atomicWrites struct{ changed atomic.Bool }

// Atomic runs fn as Store.Atomic does and tells the service once it has
// committed, if a write inside it may have appended to a feed. An Atomic
// call inside another joins it, and the outer one tells.
func (f feedStore) Atomic(ctx context.Context, fn func(context.Context) error) error {
	if _, ok := ctx.Value(atomicKey{}).(*atomicWrites); ok {
		return f.Store.Atomic(ctx, fn)
	}
	w := &atomicWrites{}
	err := f.Store.Atomic(context.WithValue(ctx, atomicKey{}, w), fn)
	if err == nil && w.changed.Load() {
		f.changed()
	}
	return err
}

func (f feedStore) CreateSite(ctx context.Context, s Site) error {
	return f.after(ctx, f.Store.CreateSite(ctx, s))
}

func (f feedStore) UpdateSite(ctx context.Context, t Tenant, id string, fn func(*Site) error) (Site, error) {
	s, err := f.Store.UpdateSite(ctx, t, id, fn)
	return s, f.after(ctx, err)
}

func (f feedStore) CreateGate(ctx context.Context, g Gate) error {
	return f.after(ctx, f.Store.CreateGate(ctx, g))
}

func (f feedStore) UpdateGate(ctx context.Context, t Tenant, id string, fn func(*Gate) error) (Gate, error) {
	g, err := f.Store.UpdateGate(ctx, t, id, fn)
	return g, f.after(ctx, err)
}

func (f feedStore) CreatePerson(ctx context.Context, p Person) error {
	return f.after(ctx, f.Store.CreatePerson(ctx, p))
}

func (f feedStore) UpdatePerson(ctx context.Context, t Tenant, id string, fn func(*Person) error) (Person, error) {
	p, err := f.Store.UpdatePerson(ctx, t, id, fn)
	return p, f.after(ctx, err)
}

func (f feedStore) CreateTeam(ctx context.Context, tm Team) error {
	return f.after(ctx, f.Store.CreateTeam(ctx, tm))
}

func (f feedStore) UpdateTeam(ctx context.Context, t Tenant, id string, fn func(*Team) error) (Team, error) {
	tm, err := f.Store.UpdateTeam(ctx, t, id, fn)
	return tm, f.after(ctx, err)
}

func (f feedStore) PutVisitType(ctx context.Context, vt VisitType) error {
	return f.after(ctx, f.Store.PutVisitType(ctx, vt))
}

func (f feedStore) EraseVisitor(ctx context.Context, t Tenant, id string, fn func(*Visit), bfn func(*Booking)) error {
	return f.after(ctx, f.Store.EraseVisitor(ctx, t, id, fn, bfn))
}

func (f feedStore) CreateVisit(ctx context.Context, v Visit, w VisitWrites) error {
	return f.after(ctx, f.Store.CreateVisit(ctx, v, w))
}

func (f feedStore) UpdateVisit(ctx context.Context, t Tenant, id string, fn func(*Visit, *VisitWrites) error) (Visit, error) {
	v, err := f.Store.UpdateVisit(ctx, t, id, fn)
	return v, f.after(ctx, err)
}

func (f feedStore) CreateBooking(ctx context.Context, b Booking, w BookingWrites, now time.Time) error {
	err := f.Store.CreateBooking(ctx, b, w, now)
	if len(w.NewVisits)+len(w.Visits) == 0 {
		return err
	}
	return f.after(ctx, err)
}

func (f feedStore) UpdateBooking(ctx context.Context, t Tenant, id string, now time.Time, fn func(*Booking, *BookingWrites) error) (Booking, error) {
	visits := false
	b, err := f.Store.UpdateBooking(ctx, t, id, now, func(b *Booking, w *BookingWrites) error {
		err := fn(b, w)
		visits = len(w.NewVisits)+len(w.Visits) > 0
		return err
	})
	if !visits {
		return b, err
	}
	return b, f.after(ctx, err)
}

func (f feedStore) CreatePassKey(ctx context.Context, k PassKey) error {
	return f.after(ctx, f.Store.CreatePassKey(ctx, k))
}

func (f feedStore) RotatePassKey(ctx context.Context, k PassKey, retireAt time.Time) ([]PassKey, error) {
	keys, err := f.Store.RotatePassKey(ctx, k, retireAt)
	return keys, f.after(ctx, err)
}

func (f feedStore) ApplyFact(ctx context.Context, ef EdgeFact, fn func(func(string) (Visit, error), *FactWrites) error) (bool, error) {
	applied, err := f.Store.ApplyFact(ctx, ef, fn)
	if !applied {
		return applied, err
	}
	return applied, f.after(ctx, err)
}

func (f feedStore) ApplyFacts(ctx context.Context, facts []EdgeFact, fn func(int, func(string) (Visit, error), *FactWrites) error) ([]bool, error) {
	applied, err := f.Store.ApplyFacts(ctx, facts, fn)
	if err == nil && slices.Contains(applied, true) {
		f.note(ctx) // once for the batch
	}
	return applied, err
}

func (f feedStore) CertifyBadgeKey(ctx context.Context, t Tenant, siteID, edgeID string, pub []byte, at time.Time) error {
	return f.after(ctx, f.Store.CertifyBadgeKey(ctx, t, siteID, edgeID, pub, at))
}

func (f feedStore) RevokeEdge(ctx context.Context, t Tenant, id string, at time.Time) (Edge, error) {
	e, err := f.Store.RevokeEdge(ctx, t, id, at)
	if e.BadgeKey == nil {
		return e, err // nothing went on a feed
	}
	return e, f.after(ctx, err)
}

func (f feedStore) UpdateEdge(ctx context.Context, t Tenant, id string, at time.Time, fn func(*Edge) error) (Edge, error) {
	e, err := f.Store.UpdateEdge(ctx, t, id, at, fn)
	return e, f.after(ctx, err) // a name alone appends nothing: a poll for nothing
}

// OnChange registers fn to be called after every write of the service
// that may have appended to a site's change feed, once it has committed:
// the feed's publisher runs at once instead of at its next poll. It is a
// hint (the publisher must poll as well): fn is called on the writer's
// goroutine and must not block, such as a send to a channel with room
// for one that drops when it is full.
func (s *Service) OnChange(fn func()) {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	s.onChange = append(s.onChange, fn)
}

func (s *Service) changed() {
	s.changeMu.Lock()
	fns := s.onChange
	s.changeMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
