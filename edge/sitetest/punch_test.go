package sitetest_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
)

// punchPeople is how many employees clock in and out while the site is
// cut off.
const punchPeople = 6

// Employees scan their personal passes at the gates while the site is
// cut off from the broker: the gates open from the cache, a pass held to
// the reader twice is one punch, and the punches wait in the outbox. Once
// the link is back, each punch reaches the cloud exactly once, with the
// time of the scan, and lands in the person's timesheet of the right
// period with the minutes between their in and their out.
func TestPunches_OfflineReachTimesheetsOnce(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		ctx := t.Context()
		svc := w.Svc()

		people := make([]cloud.Person, punchPeople)
		tokens := make([]string, punchPeople)
		for i := range people {
			p, err := svc.CreatePerson(ctx, w.Tenant, cloud.PersonInput{Name: cloud.Some(fmt.Sprintf("Employee %d", i))})
			require.NoError(t, err)
			people[i] = p
			tokens[i], _, err = svc.PersonPass(ctx, w.Tenant, p.ID)
			require.NoError(t, err)
		}
		w.WaitConverged(t, e, settle)
		for _, p := range people {
			_, ok := e.View().Person(p.ID)
			require.True(t, ok, "person %s reached the edge", p.ID)
		}

		// Yesterday at the site, 08:00 to 16:30 and a little more for each
		// person, in whole minutes.
		site, err := svc.Store().Site(ctx, w.Tenant, w.Site.SiteID)
		require.NoError(t, err)
		loc, err := time.LoadLocation(site.Timezone)
		require.NoError(t, err)
		day := cloud.DateOf(time.Now().In(loc)).AddDays(-1)
		start := day.Start(loc).Add(8 * time.Hour)

		e.Proxy.Cut()
		sitetest.Eventually(t, settle, func() bool { return !e.Half().State().Connected }, "the edge did not notice the cut")

		var facts []string
		wantMinutes := map[string]int{}
		for i, p := range people {
			in := start.Add(time.Duration(i) * time.Minute)
			out := in.Add(8*time.Hour + 30*time.Minute + time.Duration(i)*time.Minute)
			wantMinutes[p.ID] = int(out.Sub(in) / time.Minute)

			e.Clock.Set(in)
			r := e.Scan(t, w.Entry, tokens[i])
			require.True(t, r.Admitted, "%+v", r)
			require.Equal(t, "in", r.Direction)
			facts = append(facts, r.FactID)
			e.Clock.Set(in.Add(20 * time.Second))
			again := e.Scan(t, w.Entry, tokens[i])
			require.True(t, again.Admitted)
			require.True(t, again.Repeat, "held to the reader twice: one punch")
			require.NotEmpty(t, again.FactID, "the second opening is recorded too, as a passage")
			facts = append(facts, again.FactID)

			e.Clock.Set(out)
			r = e.Scan(t, w.Exit, tokens[i])
			require.True(t, r.Admitted, "%+v", r)
			require.Equal(t, "out", r.Direction)
			facts = append(facts, r.FactID)
		}
		require.Equal(t, len(facts), e.Outbox())
		require.Empty(t, w.FactRows(t, e.ID), "nothing reached the cloud during the outage")

		e.Proxy.Restore()
		sitetest.Eventually(t, heal, func() bool { return e.Outbox() == 0 && len(w.FactRows(t, e.ID)) >= len(facts) },
			"the punches did not reach the cloud")
		var got []string
		for _, r := range w.FactRows(t, e.ID) {
			got = append(got, r.ID)
		}
		slices.Sort(got)
		slices.Sort(facts)
		require.Equal(t, facts, got, "each fact recorded once")

		store := svc.Store()
		for i, p := range people {
			punches, _, err := store.ListPunches(ctx, w.Tenant, cloud.PunchFilter{PersonID: p.ID}, cloud.Page{Limit: 10})
			require.NoError(t, err)
			require.Len(t, punches, 2, "person %d: one in, one out, each once", i)
			require.Equal(t, cloud.PunchOut, punches[0].Kind)
			require.Equal(t, cloud.PunchIn, punches[1].Kind)
			require.Equal(t, cloud.SourceGate, punches[1].Source)
			require.Equal(t, w.Entry, punches[1].GateID)
			require.Equal(t, day, punches[1].Day)
			require.True(t, start.Add(time.Duration(i)*time.Minute).Equal(punches[1].OccurredAt), "the scan's time, not the arrival's")

			sheets, _, err := store.ListTimesheets(ctx, w.Tenant, cloud.TimesheetFilter{PersonID: p.ID}, cloud.Page{Limit: 10})
			require.NoError(t, err)
			require.Len(t, sheets, 1)
			require.Equal(t, wantMinutes[p.ID], sheets[0].Totals.Minutes, "person %d", i)
			period, err := store.TimesheetPeriod(ctx, w.Tenant, sheets[0].PeriodID)
			require.NoError(t, err)
			require.True(t, period.Contains(day), "the timesheet of the period holding the day of the scans")
		}
	})
}
