package sqlite

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/shared/passrule"
)

// The service's Atomic calls (Store.Atomic's fn may run twice) each run
// here in a batch that a later call rolls back after writing: the call
// runs again and commits what one run commits.

// rerunEnv is the service over a store whose group commit the test
// drives, with a seeded organisation.
type rerunEnv struct {
	s       *Store
	commits *atomic.Int64
	svc     *cloud.Service
	a       cloud.Actor
	seed    cloud.SeedResult
	tn      cloud.Tenant // groupStore's, for the calls around the one tested
	now     time.Time
	visit   func() visitWrites
}

func newRerunEnv(t *testing.T) *rerunEnv {
	t.Helper()
	s, commits, tn, now, visit := groupStore(t)
	svc := cloud.NewService(s, time.Now)
	svc.SetEventRenderer(httpapi.RenderEvent)
	seed, err := svc.Seed(context.Background(), "Rerun", cloud.PlanEnterprise)
	require.NoError(t, err)
	a := cloud.Actor{Tenant: cloud.Tenant{OrgID: seed.Organisation.ID, Mode: cloud.ModeTest}, Plan: cloud.PlanEnterprise}
	return &rerunEnv{s: s, commits: commits, svc: svc, a: a, seed: seed, tn: tn, now: now, visit: visit}
}

// behindAFailure holds the writer with a call writing a visit, lets call
// reach its first write behind it and a call that fails after writing
// behind that, and lets them go: the failure rolls back the batch, and
// the held call and call run again. It returns call's error, once every
// call has returned.
func (e *rerunEnv) behindAFailure(t *testing.T, call func(context.Context) error) error {
	t.Helper()
	ctx := context.Background()
	held, bad := e.visit(), failing(e.visit(), e.tn, e.now)
	before := e.commits.Load()
	release, heldErr, runs := holdWriter(ctx, e.s, held.v, held.w, false)
	callErr := make(chan error, 1)
	go func() { callErr <- call(ctx) }()
	require.Eventually(t, func() bool { return len(e.s.writer.waiting) == 1 || len(callErr) > 0 }, 10*time.Second, time.Millisecond,
		"the call waits for the writer")
	require.Empty(t, callErr, "the call returned before the writer was free")
	badErr := make(chan error, 1)
	go func() {
		badErr <- e.s.Atomic(ctx, func(ctx context.Context) error { return e.s.CreateVisit(ctx, bad.v, bad.w) })
	}()
	require.Eventually(t, func() bool { return len(e.s.writer.waiting) == 2 }, 10*time.Second, time.Millisecond,
		"the failing call waits behind it")
	release()
	require.NoError(t, <-heldErr)
	err := <-callErr
	require.Error(t, <-badErr)
	require.Equal(t, int32(2), runs.Load(), "the batch rolled back and its calls ran again")
	require.Positive(t, e.commits.Load()-before)
	requireVisits(t, e.s, e.tn, []visitWrites{held}, bad)
	return err
}

// count is a count(*) query's answer, read on the writer.
func (e *rerunEnv) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.s.w.QueryRowContext(context.Background(), query, args...).Scan(&n))
	return n
}

// TestRerun_CreateVisit: POST /visits' call (Service.CreateVisit) commits
// one visitor for its email, one visit, one visit.created event.
func TestRerun_CreateVisit(t *testing.T) {
	e := newRerunEnv(t)
	const email = "ada.rerun@example.org"
	at := time.Now().Add(time.Hour)
	in := cloud.VisitInput{SiteID: cloud.Some(e.seed.Test.Sites[0].ID), HostID: cloud.Some(e.seed.Test.People[0]), Type: cloud.Some("meeting"),
		Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Ada Lovelace"), Email: cloud.Some(email)}), ExpectedAt: cloud.Some(&at)}
	var created cloud.Visit
	require.NoError(t, e.behindAFailure(t, func(ctx context.Context) (err error) {
		created, err = e.svc.CreateVisit(ctx, e.a, in)
		return err
	}))
	org := e.a.Tenant.OrgID
	require.Equal(t, []int{1, 1, 1}, []int{
		e.count(t, `SELECT count(*) FROM visitors WHERE org_id = ? AND email = ?`, org, email),
		e.count(t, `SELECT count(*) FROM visits v JOIN visitors r ON r.org_id = v.org_id AND r.mode = v.mode AND r.id = v.visitor_id
			WHERE r.org_id = ? AND r.email = ?`, org, email),
		e.count(t, `SELECT count(*) FROM events WHERE org_id = ? AND type = ? AND object_id = ?`, org, cloud.EventVisitCreated, created.ID),
	}, "visitors, visits and visit.created events")
	_, err := e.s.Visit(context.Background(), e.a.Tenant, created.ID)
	require.NoError(t, err, "the visit returned is the one stored")
}

// TestRerun_CheckIn: a check-in (a transition: Service.CheckIn) commits
// the visit checked in, with one visit.checked_in event, where a second
// run on its own first run's writes would be refused as checked in
// already.
func TestRerun_CheckIn(t *testing.T) {
	e := newRerunEnv(t)
	ctx := context.Background()
	at := time.Now()
	v, err := e.svc.CreateVisit(ctx, e.a, cloud.VisitInput{SiteID: cloud.Some(e.seed.Test.Sites[0].ID), HostID: cloud.Some(e.seed.Test.People[0]),
		Type: cloud.Some("meeting"), Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Grace Hopper")}), ExpectedAt: cloud.Some(&at)})
	require.NoError(t, err)
	var in cloud.Visit
	require.NoError(t, e.behindAFailure(t, func(ctx context.Context) (err error) {
		in, err = e.svc.CheckIn(ctx, e.a, v.ID, cloud.CheckInInput{})
		return err
	}))
	require.Equal(t, cloud.VisitCheckedIn, in.Status)
	stored, err := e.s.Visit(ctx, e.a.Tenant, v.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.VisitCheckedIn, stored.Status)
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM events WHERE org_id = ? AND type = ? AND object_id = ?`,
		e.a.Tenant.OrgID, cloud.EventVisitCheckedIn, v.ID), "visit.checked_in events")
}

// TestRerun_CreateTeam: Service.CreateTeam commits one team of its name,
// where a second run on its first run's writes would be refused for the
// name taken.
func TestRerun_CreateTeam(t *testing.T) {
	e := newRerunEnv(t)
	var tm cloud.Team
	require.NoError(t, e.behindAFailure(t, func(ctx context.Context) (err error) {
		tm, err = e.svc.CreateTeam(ctx, e.a.Tenant, cloud.TeamInput{Name: cloud.Some("Rerun team"), SiteID: cloud.Some(e.seed.Test.Sites[0].ID)})
		return err
	}))
	require.Equal(t, 1, e.count(t, `SELECT count(*) FROM teams WHERE org_id = ? AND mode = ? AND name = ?`,
		e.a.Tenant.OrgID, string(e.a.Tenant.Mode), "Rerun team"))
	_, err := e.s.Team(context.Background(), e.a.Tenant, tm.ID)
	require.NoError(t, err, "the team returned is the one stored")
}

// TestRerun_CreateBooking: Service.CreateBooking of a slot with room for
// one commits one booking, confirmed with one visit and one
// booking.created event, where a second run on its first run's writes
// would find the slot full.
func TestRerun_CreateBooking(t *testing.T) {
	e := newRerunEnv(t)
	ctx := context.Background()
	from, err := passrule.ParseClock("00:00")
	require.NoError(t, err)
	until, err := passrule.ParseClock("23:30")
	require.NoError(t, err)
	every := []time.Weekday{time.Sunday, time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday}
	bt, err := e.svc.CreateBookingType(ctx, e.a, cloud.BookingTypeInput{Name: cloud.Some("Rerun"), SiteID: cloud.Some(e.seed.Test.Sites[0].ID),
		VisitType: cloud.Some("meeting"), SlotMinutes: cloud.Some(30), Capacity: cloud.Some(1), RequiresConfirmation: cloud.Some(false),
		Hours: cloud.Some([]cloud.OpeningHours{{Days: every, From: from, Until: until}})})
	require.NoError(t, err)
	loc, err := time.LoadLocation("Europe/London")
	require.NoError(t, err)
	day := time.Now().In(loc).AddDate(0, 0, 2)
	starts := time.Date(day.Year(), day.Month(), day.Day(), 10, 0, 0, 0, loc).UTC()
	var b cloud.Booking
	require.NoError(t, e.behindAFailure(t, func(ctx context.Context) (err error) {
		b, err = e.svc.CreateBooking(ctx, e.a, cloud.BookingInput{TypeID: cloud.Some(bt.ID), StartsAt: cloud.Some(&starts),
			Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Katherine Johnson")})})
		return err
	}))
	require.Equal(t, cloud.BookingConfirmed, b.Status)
	org := e.a.Tenant.OrgID
	require.Equal(t, []int{1, 1, 1}, []int{
		e.count(t, `SELECT count(*) FROM bookings WHERE org_id = ? AND type_id = ?`, org, bt.ID),
		e.count(t, `SELECT count(*) FROM visits WHERE org_id = ? AND booking_id = ?`, org, b.ID),
		e.count(t, `SELECT count(*) FROM events WHERE org_id = ? AND type = ? AND object_id = ?`, org, cloud.EventBookingCreated, b.ID),
	}, "bookings, their visits and booking.created events")
}
