package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Idempotency: every write transaction stores its request's response
// (cloud.TakeReply) with the write, and a key already held aborts the
// write (docs/decisions.md, "Idempotency").

func idempotencyTests() []test {
	return []test{
		{"WritesStoreTheirReply", testIdemWritesStoreReply},
		{"KeyHeldAbortsEveryWrite", testIdemKeyHeldAborts},
		{"NoResponseNoRecord", testIdemNoResponse},
		{"OnlyTheFirstWriteTakesIt", testIdemFirstWriteTakes},
		{"RolledBackWriteStoresNothing", testIdemRolledBack},
		{"PutThenLookUp", testIdemPutThenLookUp},
		{"PutTwice", testIdemPutTwice},
		{"LookUpSince", testIdemLookUpSince},
		{"OtherTenantIndependent", testIdemOtherTenant},
		{"ExpiredReplaced", testIdemExpiredReplaced},
		{"RacedWrites", testIdemRacedWrites},
		{"Purge", testIdemPurge},
	}
}

func (e *env) rec(tn cloud.Tenant, key string, at time.Time, resp cloud.StoredResponse) cloud.IdempotencyRecord {
	return cloud.IdempotencyRecord{Tenant: tn, Key: key, Fingerprint: []byte("fingerprint of " + key),
		Method: "POST", Path: "/v1/people", RequestID: ids.New(ids.Request), CreatedAt: at, Response: resp}
}

func response(body string) cloud.StoredResponse {
	return cloud.StoredResponse{Status: 201,
		Header: map[string]string{"Content-Type": "application/json", "Location": "/v1/people/person_1"},
		Body:   []byte(body)}
}

// withReply returns a context carrying a reply for rec whose response is
// already rendered.
func withReply(ctx context.Context, rec cloud.IdempotencyRecord) (context.Context, *cloud.Reply) {
	r := cloud.NewReply(rec)
	r.Set(rec.Response)
	return cloud.WithReply(ctx, r), r
}

func (e *env) requireRecord(t testing.TB, want cloud.IdempotencyRecord, msgAndArgs ...any) {
	t.Helper()
	got, err := e.s.IdempotencyRecord(t.Context(), want.Tenant, want.Key, want.CreatedAt.Add(-time.Hour))
	require.NoError(t, err, msgAndArgs...)
	require.Equal(t, want.Fingerprint, got.Fingerprint, msgAndArgs...)
	require.Equal(t, want.Method, got.Method, msgAndArgs...)
	require.Equal(t, want.Path, got.Path, msgAndArgs...)
	require.Equal(t, want.RequestID, got.RequestID, msgAndArgs...)
	require.True(t, want.CreatedAt.Equal(got.CreatedAt), "created at: want %v, got %v", want.CreatedAt, got.CreatedAt)
	require.Equal(t, want.Response.Status, got.Response.Status, msgAndArgs...)
	require.Equal(t, want.Response.Header, got.Response.Header, msgAndArgs...)
	require.Equal(t, string(want.Response.Body), string(got.Response.Body), msgAndArgs...)
}

func (e *env) requireNoRecord(t testing.TB, tn cloud.Tenant, key string, msgAndArgs ...any) {
	t.Helper()
	_, err := e.s.IdempotencyRecord(t.Context(), tn, key, e.now.Add(-48*time.Hour))
	require.ErrorIs(t, err, cloud.ErrNotFound, msgAndArgs...)
}

// idemWrite is one write method made with ctx: do makes it and returns
// whether its effect is in the store afterwards (nil: none to see).
type idemWrite struct {
	name string
	do   func(t *testing.T, e *env, ctx context.Context) (effect func() bool, err error)
}

// idemWrites are the store's write methods that API requests make.
func idemWrites() []idemWrite {
	found := func(err error) bool { return err == nil }
	return []idemWrite{
		{"CreateSite", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			s := cloud.Site{ID: ids.New(ids.Site), Tenant: e.a, Name: "Site", Timezone: "UTC", CreatedAt: e.now, UpdatedAt: e.now}
			return func() bool { _, err := e.s.Site(t.Context(), e.a, s.ID); return found(err) }, e.s.CreateSite(ctx, s)
		}},
		{"CreateGate", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			site := e.newSite(t, e.a)
			g := cloud.Gate{ID: ids.New(ids.Gate), Tenant: e.a, SiteID: site.ID, Name: "Gate", Direction: cloud.DirectionBoth,
				CreatedAt: e.now, UpdatedAt: e.now}
			return func() bool { _, err := e.s.Gate(t.Context(), e.a, g.ID); return found(err) }, e.s.CreateGate(ctx, g)
		}},
		{"CreatePerson", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			p := cloud.Person{ID: ids.New(ids.Person), Tenant: e.a, Name: "Person", Active: true,
				PassIssuedAt: e.now.Truncate(time.Second), CreatedAt: e.now, UpdatedAt: e.now}
			return func() bool { _, err := e.s.Person(t.Context(), e.a, p.ID); return found(err) }, e.s.CreatePerson(ctx, p)
		}},
		{"UpdatePerson", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			p := e.newPerson(t, e.a)
			_, err := e.s.UpdatePerson(ctx, e.a, p.ID, func(p *cloud.Person) error { p.Name = "Renamed"; return nil })
			return func() bool { got, _ := e.s.Person(t.Context(), e.a, p.ID); return got.Name == "Renamed" }, err
		}},
		{"CreateTeam", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			tm := cloud.Team{ID: ids.New(ids.Team), Tenant: e.a, Name: "Team", MemberIDs: []string{}, CreatedAt: e.now, UpdatedAt: e.now}
			return func() bool { _, err := e.s.Team(t.Context(), e.a, tm.ID); return found(err) }, e.s.CreateTeam(ctx, tm)
		}},
		{"CreateBookingType", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			bt := cloud.BookingType{ID: ids.New(ids.BookingType), Tenant: e.a, Name: "Consultation", SiteID: ids.New(ids.Site),
				VisitType: "meeting", ConfirmationWindowHours: cloud.DefaultConfirmationWindowHours, SlotMinutes: 30, Capacity: 1,
				Hours: []cloud.OpeningHours{}, CreatedAt: e.now, UpdatedAt: e.now}
			return func() bool { _, err := e.s.BookingType(t.Context(), e.a, bt.ID); return found(err) }, e.s.CreateBookingType(ctx, bt)
		}},
		{"CreateVisit", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			site := e.newSite(t, e.a)
			vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: e.a, Name: "Visitor", CreatedAt: e.now, UpdatedAt: e.now}
			v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.a, Status: cloud.VisitExpected, Type: "meeting",
				Source: cloud.SourceInvitation, SiteID: site.ID, Audience: cloud.AudienceDesk, VisitorID: vr.ID,
				Receiver: cloud.Receiver{Kind: cloud.ReceiverReception}, CreatedAt: e.now, UpdatedAt: e.now}
			return func() bool { _, err := e.s.Visit(t.Context(), e.a, v.ID); return found(err) },
				e.s.CreateVisit(ctx, v, cloud.VisitWrites{Visitor: &vr})
		}},
		{"UpdateVisit", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			v := e.newVisit(t, e.a, e.newSite(t, e.a).ID)
			_, err := e.s.UpdateVisit(ctx, e.a, v.ID, func(v *cloud.Visit, _ *cloud.VisitWrites) error {
				v.Status = cloud.VisitCancelled
				return nil
			})
			return func() bool { got, _ := e.s.Visit(t.Context(), e.a, v.ID); return got.Status == cloud.VisitCancelled }, err
		}},
		{"CreateBooking", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			b, w := e.bookingDraft(e.a, e.newBookingType(t, e.a), 1)
			return func() bool { _, err := e.s.Booking(t.Context(), e.a, b.ID); return found(err) },
				e.s.CreateBooking(ctx, b, w, e.now)
		}},
		{"UpdateBooking", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			b := e.newBooking(t, e.a, e.newBookingType(t, e.a), 1)
			_, err := e.s.UpdateBooking(ctx, e.a, b.ID, e.now, func(b *cloud.Booking, _ *cloud.BookingWrites) error {
				b.Status = cloud.BookingCancelled
				return nil
			})
			return func() bool {
				got, _ := e.s.Booking(t.Context(), e.a, b.ID)
				return got.Status == cloud.BookingCancelled
			}, err
		}},
		{"Attendance", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			p := e.newPerson(t, e.a)
			err := e.s.Attendance(ctx, e.a, func(tx cloud.AttendanceTx) error {
				return tx.PutConsent(cloud.Consent{Tenant: e.a, PersonID: p.ID, Kind: cloud.EvidenceSelfie, Given: true, UpdatedAt: e.now})
			})
			return func() bool { c, _ := e.s.Consents(t.Context(), e.a, p.ID); return c[cloud.EvidenceSelfie].Given }, err
		}},
		{"CreateWebhookEndpoint", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			we := cloud.WebhookEndpoint{ID: ids.New(ids.WebhookEndpoint), Tenant: e.a, URL: "https://example.org/hook",
				EventTypes: []string{"*"}, Secret: cloud.NewWebhookSecret(), CreatedAt: e.now, UpdatedAt: e.now}
			return func() bool { _, err := e.s.WebhookEndpoint(t.Context(), e.a, we.ID); return found(err) },
				e.s.CreateWebhookEndpoint(ctx, we)
		}},
		{"ResendWebhookDeliveries", func(t *testing.T, e *env, ctx context.Context) (func() bool, error) {
			since := e.now
			_, err := e.s.ResendWebhookDeliveries(ctx, e.a, ids.New(ids.WebhookEndpoint), cloud.ResendFilter{Since: &since}, e.now, 1, nil)
			return nil, err // nothing to resend: the record is the effect
		}},
	}
}

func testIdemWritesStoreReply(t *testing.T, e *env) {
	for i, w := range idemWrites() {
		t.Run(w.name, func(t *testing.T) {
			rec := e.rec(e.a, fmt.Sprintf("stores-%d", i), e.now, response(`{"write":"`+w.name+`"}`))
			ctx, r := withReply(t.Context(), rec)
			effect, err := w.do(t, e, ctx)
			require.NoError(t, err)
			require.True(t, effect == nil || effect(), "the write happened")
			require.True(t, r.Stored(), "the store reports the record committed")
			all, without := r.Commits()
			require.Equal(t, 1, all, "one write committed")
			require.Zero(t, without, "and the record went with it")
			e.requireRecord(t, rec)
		})
	}
}

func testIdemKeyHeldAborts(t *testing.T, e *env) {
	for i, w := range idemWrites() {
		t.Run(w.name, func(t *testing.T) {
			key := fmt.Sprintf("held-%d", i)
			first := e.rec(e.a, key, e.now.Add(-time.Minute), response(`{"first":true}`))
			require.NoError(t, e.s.PutIdempotencyRecord(t.Context(), first))

			ctx, r := withReply(t.Context(), e.rec(e.a, key, e.now, response(`{"second":true}`)))
			effect, err := w.do(t, e, ctx)
			require.ErrorIs(t, err, cloud.ErrIdempotencyKeyUsed)
			require.False(t, effect != nil && effect(), "the write rolled back")
			require.False(t, r.Stored())
			e.requireRecord(t, first, "the first record stays")
		})
	}
}

func testIdemNoResponse(t *testing.T, e *env) {
	r := cloud.NewReply(e.rec(e.a, "no-response", e.now, cloud.StoredResponse{}))
	site := cloud.Site{ID: ids.New(ids.Site), Tenant: e.a, Name: "Site", Timezone: "UTC", CreatedAt: e.now, UpdatedAt: e.now}
	require.NoError(t, e.s.CreateSite(cloud.WithReply(t.Context(), r), site))
	require.False(t, r.Stored())
	all, without := r.Commits()
	require.Equal(t, 1, all)
	require.Equal(t, 1, without, "a write committed without the response")
	e.requireNoRecord(t, e.a, "no-response")
}

func testIdemFirstWriteTakes(t *testing.T, e *env) {
	rec := e.rec(e.a, "two-writes", e.now, response(`{"n":1}`))
	ctx, r := withReply(t.Context(), rec)
	e.newSite(t, e.a) // without the reply
	_, err := e.s.UpdateSite(ctx, e.a, e.newSite(t, e.a).ID, func(s *cloud.Site) error { s.Name = "One"; return nil })
	require.NoError(t, err)
	require.True(t, r.Stored())
	// A second write of the same request stores no second record: it
	// would fail on the key the first one took.
	_, err = e.s.UpdateSite(ctx, e.a, e.newSite(t, e.a).ID, func(s *cloud.Site) error { s.Name = "Two"; return nil })
	require.NoError(t, err)
	all, without := r.Commits()
	require.Equal(t, 2, all)
	require.Equal(t, 1, without)
	e.requireRecord(t, rec)
}

func testIdemRolledBack(t *testing.T, e *env) {
	site := e.newSite(t, e.a)
	ctx, r := withReply(t.Context(), e.rec(e.a, "rolled-back", e.now, response(`{}`)))
	_, err := e.s.UpdateSite(ctx, e.a, site.ID, func(*cloud.Site) error { return errAbort })
	require.ErrorIs(t, err, errAbort)
	require.False(t, r.Stored())
	all, _ := r.Commits()
	require.Zero(t, all)
	e.requireNoRecord(t, e.a, "rolled-back")

	// The same reply rides with the request's next write.
	_, err = e.s.UpdateSite(ctx, e.a, site.ID, func(s *cloud.Site) error { s.Name = "Renamed"; return nil })
	require.NoError(t, err)
	require.True(t, r.Stored())
}

func testIdemPutThenLookUp(t *testing.T, e *env) {
	rec := e.rec(e.a, "put", e.now, response(`{"id":"person_1"}`))
	require.NoError(t, e.s.PutIdempotencyRecord(t.Context(), rec))
	e.requireRecord(t, rec)
	e.requireNoRecord(t, e.a, "other")
}

func testIdemPutTwice(t *testing.T, e *env) {
	first := e.rec(e.a, "twice", e.now, response(`{"n":1}`))
	require.NoError(t, e.s.PutIdempotencyRecord(t.Context(), first))
	second := e.rec(e.a, "twice", e.now.Add(time.Second), response(`{"n":2}`))
	require.ErrorIs(t, e.s.PutIdempotencyRecord(t.Context(), second), cloud.ErrIdempotencyKeyUsed)
	e.requireRecord(t, first)
}

func testIdemLookUpSince(t *testing.T, e *env) {
	rec := e.rec(e.a, "since", e.now.Add(-2*time.Hour), response(`{}`))
	require.NoError(t, e.s.PutIdempotencyRecord(t.Context(), rec))
	_, err := e.s.IdempotencyRecord(t.Context(), e.a, "since", e.now.Add(-time.Hour))
	require.ErrorIs(t, err, cloud.ErrNotFound, "created before since")
	got, err := e.s.IdempotencyRecord(t.Context(), e.a, "since", rec.CreatedAt)
	require.NoError(t, err, "created at since")
	require.Equal(t, rec.RequestID, got.RequestID)
}

func testIdemOtherTenant(t *testing.T, e *env) {
	var recs []cloud.IdempotencyRecord
	for i, tn := range []cloud.Tenant{e.a, e.b, e.c} {
		rec := e.rec(tn, "shared-key", e.now, response(fmt.Sprintf(`{"tenant":%d}`, i)))
		ctx, r := withReply(t.Context(), rec)
		e.newSite(t, tn)
		site := cloud.Site{ID: ids.New(ids.Site), Tenant: tn, Name: "Site", Timezone: "UTC", CreatedAt: e.now, UpdatedAt: e.now}
		require.NoError(t, e.s.CreateSite(ctx, site), "the same key in another tenant")
		require.True(t, r.Stored())
		recs = append(recs, rec)
	}
	for _, rec := range recs {
		e.requireRecord(t, rec)
	}
}

func testIdemExpiredReplaced(t *testing.T, e *env) {
	old := e.rec(e.a, "expired", e.now.Add(-25*time.Hour), response(`{"old":true}`))
	require.NoError(t, e.s.PutIdempotencyRecord(t.Context(), old))
	rec := e.rec(e.a, "expired", e.now, response(`{"new":true}`))
	ctx, r := withReply(t.Context(), rec)
	site := cloud.Site{ID: ids.New(ids.Site), Tenant: e.a, Name: "Site", Timezone: "UTC", CreatedAt: e.now, UpdatedAt: e.now}
	require.NoError(t, e.s.CreateSite(ctx, site), "a record older than the window does not hold the key")
	require.True(t, r.Stored())
	e.requireRecord(t, rec)

	// Put replaces an expired record the same way.
	later := e.rec(e.a, "expired", e.now.Add(25*time.Hour), response(`{"later":true}`))
	require.NoError(t, e.s.PutIdempotencyRecord(t.Context(), later))
	e.requireRecord(t, later)
}

// testIdemRacedWrites: requests with one key racing in several processes
// each make their write; exactly one commits, with its response.
func testIdemRacedWrites(t *testing.T, e *env) {
	const n = 8
	errs := make([]error, n)
	sites := make([]string, n)
	replies := make([]*cloud.Reply, n)
	recs := make([]cloud.IdempotencyRecord, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		recs[i] = e.rec(e.a, "raced", e.now, response(fmt.Sprintf(`{"writer":%d}`, i)))
		var ctx context.Context
		ctx, replies[i] = withReply(t.Context(), recs[i])
		sites[i] = ids.New(ids.Site)
		site := cloud.Site{ID: sites[i], Tenant: e.a, Name: "Site", Timezone: "UTC", CreatedAt: e.now, UpdatedAt: e.now}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = e.s.CreateSite(ctx, site)
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "writers %d and %d both committed", winner, i)
			winner = i
			continue
		}
		require.True(t, errors.Is(err, cloud.ErrIdempotencyKeyUsed), "writer %d: %v", i, err)
	}
	require.NotEqual(t, -1, winner, "one writer commits")
	for i, id := range sites {
		_, err := e.s.Site(t.Context(), e.a, id)
		if i == winner {
			require.NoError(t, err)
			require.True(t, replies[i].Stored())
		} else {
			require.ErrorIs(t, err, cloud.ErrNotFound, "writer %d's site", i)
		}
	}
	e.requireRecord(t, recs[winner])
}

func testIdemPurge(t *testing.T, e *env) {
	old1 := e.rec(e.a, "old-1", e.now.Add(-3*time.Hour), response(`{}`))
	old2 := e.rec(e.c, "old-2", e.now.Add(-2*time.Hour), response(`{}`))
	fresh := e.rec(e.a, "fresh", e.now.Add(-10*time.Minute), response(`{}`))
	for _, r := range []cloud.IdempotencyRecord{old1, old2, fresh} {
		require.NoError(t, e.s.PutIdempotencyRecord(t.Context(), r))
	}
	n, err := e.s.PurgeIdempotencyKeys(t.Context(), e.now.Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	e.requireNoRecord(t, e.a, "old-1")
	e.requireNoRecord(t, e.c, "old-2")
	e.requireRecord(t, fresh)

	n, err = e.s.PurgeIdempotencyKeys(t.Context(), e.now.Add(-time.Hour))
	require.NoError(t, err)
	require.Zero(t, n)
}
