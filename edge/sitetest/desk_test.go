package sitetest_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// desk records a kiosk action in the edge's cache as the kiosk's store
// does: the visit as the desk left it and its fact, in one transaction.
func desk(t *testing.T, e *sitetest.Edge, v protocol.Visit, f protocol.Fact) string {
	t.Helper()
	f.DeviceID = "kiosk-1"
	stored, err := e.Cache().Record(cache.LocalChange{Visits: []protocol.Visit{v}}, f)
	require.NoError(t, err)
	return stored.ID
}

// Desk facts made while the cloud is stopped (a walk-in for a team taken
// by a person and checked out, a walk-in for the desk handed over to the
// team, an invited visit checked in at the desk) wait in the edge's
// outbox, published again and again into the void; once the cloud is
// back, each is applied exactly once, at the desk's time, the receivers
// are told once, and the edge's cache converges with the cloud's visits.
func TestDeskFacts_CloudStopped(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		svc := w.Svc()
		host, err := svc.CreatePerson(t.Context(), w.Tenant, cloud.PersonInput{Name: cloud.Some("Hana Host"), Email: cloud.Some("hana@example.com")})
		require.NoError(t, err)
		team, err := svc.CreateTeam(t.Context(), w.Tenant, cloud.TeamInput{Name: cloud.Some("Sales"), SiteID: cloud.Some(w.Site.SiteID),
			VisitorsCanChoose: cloud.Some(true)})
		require.NoError(t, err)
		now := time.Now().UTC()
		from, until := now.Add(-10*time.Minute), now.Add(2*time.Hour)
		invited, err := svc.CreateVisit(t.Context(), w.Actor, cloud.VisitInput{SiteID: cloud.Some(w.Site.SiteID), Type: cloud.Some("meeting"),
			ExpectedAt: cloud.Some(&from), ExpectedUntil: cloud.Some(&until), HostID: cloud.Some(host.ID),
			Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Ivo Invited")})})
		require.NoError(t, err)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		w.WaitConverged(t, e, settle)

		w.StopCloud()
		at := func(min int) time.Time { return now.Add(time.Duration(min) * time.Minute).Truncate(time.Microsecond) }
		walkIn := func(name string, teamID, teamName string, when time.Time) (protocol.Visit, protocol.Fact) {
			id := ids.New(ids.Visit)
			audience := "desk"
			if teamID != "" {
				audience = "team"
			}
			v := protocol.Visit{ID: id, Status: "checked_in", ForVisitID: id, CheckedInAt: &when, Uses: 1,
				Rules: protocol.Rules{GateIDs: []string{}}, VisitorName: name, Type: "meeting", Source: "walk_in", Audience: audience,
				TeamID: teamID, TeamName: teamName, NeedsSomeone: true, WaitingSince: &when}
			f := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactWalkIn, At: when, VisitID: id,
				WalkIn: &protocol.WalkIn{Type: "meeting", TeamID: teamID, Visitor: protocol.WalkInVisitor{Name: name}}}
			return v, f
		}
		var facts []string
		v1, f := walkIn("Wanda Walker", team.ID, team.Name, at(0))
		facts = append(facts, desk(t, e, v1, f))
		v1.HostID, v1.HostName, v1.NeedsSomeone = host.ID, host.Name, false
		facts = append(facts, desk(t, e, v1, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactTake, At: at(1), VisitID: v1.ID,
			PersonID: host.ID}))
		v2, f := walkIn("Dora Desk", "", "", at(2))
		facts = append(facts, desk(t, e, v2, f))
		v2.TeamID, v2.TeamName, v2.WaitingSince = team.ID, team.Name, ptr(at(3))
		facts = append(facts, desk(t, e, v2, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactHandOver, At: at(3), VisitID: v2.ID,
			To: protocol.ToTeam, TeamID: team.ID}))
		cached, ok := e.View().Visit(invited.ID)
		require.True(t, ok)
		cached.Status, cached.CheckedInAt, cached.Uses = "checked_in", ptr(at(4)), cached.Uses+1
		facts = append(facts, desk(t, e, cached, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactDeskCheckIn, At: at(4),
			VisitID: invited.ID}))
		v1.Status, v1.CheckedOutAt, v1.NeedsSomeone = "checked_out", ptr(at(5)), false
		facts = append(facts, desk(t, e, v1, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactDeskCheckOut, At: at(5), VisitID: v1.ID}))
		require.Equal(t, len(facts), e.Outbox())

		sitetest.Eventually(t, heal, func() bool {
			return e.Half().State().Counters.FactsPublished >= uint64(2*len(facts))
		}, "the edge did not publish its facts again")
		require.Empty(t, w.FactRows(t, e.ID), "nothing reached the cloud while it was stopped")
		w.StartCloud()

		waitDeliveredOnce(t, w, e.ID, facts, nil, e.Outbox)
		for _, r := range w.FactRows(t, e.ID) {
			require.Empty(t, r.Conflict, "fact %s (%s)", r.ID, r.Kind)
		}
		got := w.Visit(t, v1.ID)
		require.Equal(t, cloud.SourceWalkIn, got.Source)
		require.Equal(t, cloud.VisitCheckedOut, got.Status)
		require.True(t, at(0).Equal(*got.CheckedInAt), "checked in at the desk's time")
		require.True(t, at(5).Equal(*got.CheckedOutAt))
		require.Equal(t, host.ID, got.HostID)
		require.Equal(t, team.ID, got.Team.ID)
		got = w.Visit(t, v2.ID)
		require.Equal(t, cloud.Receiver{Kind: cloud.ReceiverTeam, TeamID: team.ID}, got.Receiver)
		require.True(t, at(3).Equal(*got.WaitingSince))
		got = w.Visit(t, invited.ID)
		require.Equal(t, cloud.VisitCheckedIn, got.Status)
		require.True(t, at(4).Equal(*got.CheckedInAt))
		require.Equal(t, 1, got.Pass.Uses)

		subjects := func(visitID string) []string {
			ms, _, err := svc.Messages(t.Context(), w.Actor, cloud.MessageFilter{VisitID: visitID}, cloud.Page{Limit: 100})
			require.NoError(t, err)
			var out []string
			for _, m := range ms {
				out = append(out, m.Subject+" → "+m.To)
			}
			slices.Sort(out)
			return out
		}
		require.Equal(t, []string{"Your visitor has arrived → " + team.ID}, subjects(v1.ID), "the team told once")
		require.Equal(t, []string{"A visitor has been passed to you → " + team.ID}, subjects(v2.ID))
		require.Contains(t, subjects(invited.ID), "Your visitor has arrived → hana@example.com")
		require.Equal(t, 1, countSubject(subjects(invited.ID), "Your visitor has arrived → hana@example.com"), "the host told once")
		w.WaitConverged(t, e, heal)
	})
}

func countSubject(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
