package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// Waiting reminders (docs/decisions.md, "Waiting reminders"): a site's
// wait limit, and the waits a reminder is due for.

func reminderTests() []test {
	return []test{
		{"SiteWaitLimit", testSiteWaitLimit},
		{"OverdueWaits", testOverdueWaits},
		{"OverdueWaitsFollowWrites", testOverdueWaitsFollowWrites},
		{"OverdueWaitsFollowFacts", testOverdueWaitsFollowFacts},
	}
}

// waitingSince makes newVisit's visit checked in at at and waiting for
// someone since then.
func waitingSince(at time.Time) func(*cloud.Visit, *cloud.VisitWrites) {
	return func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Status, v.CheckedInAt, v.WaitingSince, v.NeedsSomeone = cloud.VisitCheckedIn, ptr(at), ptr(at), true
	}
}

func (e *env) overdue(t testing.TB, now time.Time, limit int) []cloud.OverdueWait {
	t.Helper()
	due, err := e.s.OverdueWaits(t.Context(), now.Add(-cloud.WaitReminderHorizon), now, limit)
	require.NoError(t, err)
	return due
}

func overdueIDs(due []cloud.OverdueWait) []string {
	out := make([]string, len(due))
	for i, d := range due {
		out[i] = d.VisitID
	}
	return out
}

// A site's wait limit is stored and read back, and its edge's settings
// carry it, from the site's creation and after a change.
func testSiteWaitLimit(t *testing.T, e *env) {
	s := e.newSite(t, e.a, func(s *cloud.Site) { s.WaitLimitMinutes = 25 })
	got, err := e.s.Site(t.Context(), e.a, s.ID)
	require.NoError(t, err)
	require.Equal(t, 25, got.WaitLimitMinutes)
	snap, err := e.s.SiteSnapshot(t.Context(), e.a, s.ID, e.now)
	require.NoError(t, err)
	require.Equal(t, 25, snap.Settings.WaitLimitMinutes)

	head := e.head(t, e.a, s.ID)
	got, err = e.s.UpdateSite(t.Context(), e.a, s.ID, func(x *cloud.Site) error {
		x.WaitLimitMinutes, x.UpdatedAt = 60, e.tick()
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 60, got.WaitLimitMinutes)
	got, err = e.s.Site(t.Context(), e.a, s.ID)
	require.NoError(t, err)
	require.Equal(t, 60, got.WaitLimitMinutes)
	cs, _ := e.changes(t, e.a, s.ID, head)
	require.Len(t, cs, 1)
	require.Equal(t, &protocol.Settings{Timezone: s.Timezone, OfflineLimitMinutes: cloud.DefaultOfflineLimitMinutes,
		SiteName: s.Name, WaitLimitMinutes: 60}, cs[0].Settings)

	bare := e.newSite(t, e.a)
	snap, err = e.s.SiteSnapshot(t.Context(), e.a, bare.ID, e.now)
	require.NoError(t, err)
	require.Equal(t, cloud.DefaultWaitLimitMinutes, snap.Settings.WaitLimitMinutes, "a site without a limit has the default")
}

// OverdueWaits finds, across tenants, the visits checked in and waiting
// for someone past their own site's limit, with no reminder for this
// wait, begun after from; earliest first, at most limit.
func testOverdueWaits(t *testing.T, e *env) {
	now := e.now
	ago := func(m int) time.Time { return now.Add(-time.Duration(m) * time.Minute) }
	five := e.newSite(t, e.a, func(s *cloud.Site) { s.Name, s.WaitLimitMinutes = "Five", 5 })
	thirty := e.newSite(t, e.b, func(s *cloud.Site) { s.Name, s.WaitLimitMinutes = "Thirty", 30 })
	unset := e.newSite(t, e.c, func(s *cloud.Site) { s.Name = "Default" }) // the default, 10
	p := e.newPerson(t, e.a)

	due1 := e.newVisit(t, e.a, five.ID, waitingSince(ago(6)))
	e.newVisit(t, e.a, five.ID, waitingSince(ago(4)))    // within five minutes
	e.newVisit(t, e.b, thirty.ID, waitingSince(ago(20))) // within thirty
	due2 := e.newVisit(t, e.b, thirty.ID, waitingSince(ago(31)))
	due3 := e.newVisit(t, e.c, unset.ID, waitingSince(ago(11)))
	e.newVisit(t, e.c, unset.ID, waitingSince(ago(9))) // within the default
	e.newVisit(t, e.a, five.ID, waitingSince(ago(20)), hostedBy(p), func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.NeedsSomeone = false // taken
	})
	e.newVisit(t, e.a, five.ID, waitingSince(ago(20)), func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.Status, v.CheckedOutAt, v.NeedsSomeone = cloud.VisitCheckedOut, ptr(ago(1)), false
	})
	e.newVisit(t, e.a, five.ID, waitingSince(ago(20)), func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.RemindedFor = v.WaitingSince // reminded for this wait
	})
	handed := e.newVisit(t, e.a, five.ID, waitingSince(ago(7)), func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.RemindedFor = ptr(ago(40)) // reminded of a wait before a hand-over
	})
	legacy := e.newVisit(t, e.a, five.ID, waitingSince(ago(8)), func(v *cloud.Visit, _ *cloud.VisitWrites) {
		v.WaitingSince = nil // stored before waiting_since: its check-in stands for it
	})
	e.newVisit(t, e.a, five.ID, waitingSince(now.Add(-cloud.WaitReminderHorizon-time.Minute))) // too long ago
	e.newVisit(t, e.a, five.ID)                                                                // expected

	due := e.overdue(t, now, 100)
	require.Equal(t, []string{due2.ID, due3.ID, legacy.ID, handed.ID, due1.ID}, overdueIDs(due))
	require.Equal(t, cloud.OverdueWait{Tenant: e.b, VisitID: due2.ID, Since: ago(31), SiteName: "Thirty", WaitLimitMinutes: 30}, due[0])
	require.Equal(t, cloud.OverdueWait{Tenant: e.c, VisitID: due3.ID, Since: ago(11), SiteName: "Default",
		WaitLimitMinutes: cloud.DefaultWaitLimitMinutes}, due[1])
	require.Equal(t, cloud.OverdueWait{Tenant: e.a, VisitID: due1.ID, Since: ago(6), SiteName: "Five", WaitLimitMinutes: 5}, due[4])

	require.Equal(t, []string{due2.ID, due3.ID}, overdueIDs(e.overdue(t, now, 2)), "at most limit, earliest first")
	earlier, err := e.s.OverdueWaits(t.Context(), now.Add(-cloud.WaitReminderHorizon), now.Add(-90*time.Second), 100)
	require.NoError(t, err)
	require.Equal(t, []string{legacy.ID, handed.ID}, overdueIDs(earlier),
		"90 seconds earlier, only the waits then past their site's limit")
}

// A write that takes, reminds, hands over or checks out a visit moves it
// in and out of OverdueWaits, and so does a change of its site's limit.
func testOverdueWaitsFollowWrites(t *testing.T, e *env) {
	now := e.now
	s := e.newSite(t, e.a, func(s *cloud.Site) { s.WaitLimitMinutes = 5 })
	v := e.newVisit(t, e.a, s.ID, waitingSince(now.Add(-6*time.Minute)))
	update := func(fn func(*cloud.Visit)) {
		t.Helper()
		_, err := e.s.UpdateVisit(t.Context(), e.a, v.ID, func(x *cloud.Visit, _ *cloud.VisitWrites) error {
			fn(x)
			return nil
		})
		require.NoError(t, err)
	}
	require.Equal(t, []string{v.ID}, overdueIDs(e.overdue(t, now, 10)))

	update(func(x *cloud.Visit) { x.RemindedFor = cloud.WaitStart(*x) })
	require.Empty(t, e.overdue(t, now, 10), "reminded for this wait")

	update(func(x *cloud.Visit) { x.WaitingSince = ptr(now.Add(-2 * time.Minute)) }) // handed over
	require.Empty(t, e.overdue(t, now, 10), "a new wait, not yet past the limit")
	require.Equal(t, []string{v.ID}, overdueIDs(e.overdue(t, now.Add(3*time.Minute), 10)), "the new wait past the limit")

	_, err := e.s.UpdateSite(t.Context(), e.a, s.ID, func(x *cloud.Site) error {
		x.WaitLimitMinutes = 1
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{v.ID}, overdueIDs(e.overdue(t, now, 10)), "past the site's new limit")

	update(func(x *cloud.Visit) {
		x.Hosts, x.HostID, x.NeedsSomeone = []cloud.Host{{ID: ids.New(ids.Person), Role: cloud.HostRoleLead}}, "", false
	})
	require.Empty(t, e.overdue(t, now, 10), "taken")

	update(func(x *cloud.Visit) { x.Hosts, x.NeedsSomeone = []cloud.Host{}, true })
	require.Equal(t, []string{v.ID}, overdueIDs(e.overdue(t, now, 10)))
	update(func(x *cloud.Visit) {
		x.Status, x.CheckedOutAt, x.NeedsSomeone = cloud.VisitCheckedOut, ptr(now), false
	})
	require.Empty(t, e.overdue(t, now, 10), "checked out")
}

// Visits written by a batch of edge facts (the stores' other write path)
// move in and out of OverdueWaits alike.
func testOverdueWaitsFollowFacts(t *testing.T, e *env) {
	now := e.now
	s := e.newSite(t, e.a, func(s *cloud.Site) { s.WaitLimitMinutes = 5 })
	v1, v2 := e.newVisit(t, e.a, s.ID), e.newVisit(t, e.a, s.ID, waitingSince(now.Add(-10*time.Minute)))
	require.Equal(t, []string{v2.ID}, overdueIDs(e.overdue(t, now, 10)))
	batch := []cloud.EdgeFact{
		{Tenant: e.a, SiteID: s.ID, Fact: e.newFact(protocol.FactCheckIn, v1.ID), ReceivedAt: now},
		{Tenant: e.a, SiteID: s.ID, Fact: e.newFact(protocol.FactCheckOut, v2.ID), ReceivedAt: now},
	}
	_, err := e.s.ApplyFacts(t.Context(), batch, func(i int, load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
		x, err := load(batch[i].Fact.VisitID)
		if err != nil {
			return err
		}
		if i == 0 {
			at := now.Add(-6 * time.Minute)
			x.Status, x.CheckedInAt, x.WaitingSince, x.NeedsSomeone = cloud.VisitCheckedIn, &at, &at, true
		} else {
			x.Status, x.CheckedOutAt, x.NeedsSomeone = cloud.VisitCheckedOut, &now, false
		}
		w.Visits = append(w.Visits, x)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{v1.ID}, overdueIDs(e.overdue(t, now, 10)))
}
