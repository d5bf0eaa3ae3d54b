package sitetest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/sync/protocol"
)

// Timeouts of the waits: generous, as -race on two cores is slow; a
// passing run takes a fraction.
const (
	settle = 15 * time.Second // a change or a fact crossing once
	heal   = 30 * time.Second // recovery from an outage or a restart
)

// waitVisit waits until the edge's cache holds the visit and has been
// synced (a first snapshot shows its visits a moment before the sync time
// is written, and gates refuse until then).
func waitVisit(t *testing.T, e *sitetest.Edge, id string) protocol.Visit {
	t.Helper()
	var v protocol.Visit
	sitetest.Eventually(t, settle, func() bool {
		view := e.View()
		var ok bool
		v, ok = view.Visit(id)
		return ok && !view.SyncedAt().IsZero()
	}, "visit %s did not reach the edge", id)
	return v
}

// A visit created in the cloud reaches the edge; its pass admits at the
// gate; the check-in reaches the cloud at the time of the scan; and the
// edge gets the visit back from the cloud as checked in.
func TestSite_HappyPath(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()

		v := w.NewVisit(t)
		tok := w.Token(t, v.ID)
		cached := waitVisit(t, e, v.ID)
		require.Equal(t, string(cloud.VisitExpected), cached.Status)
		require.NotEmpty(t, e.View().Keys(), "the organisation's key came with the site")

		// The gate's clock, a minute and a half behind the cloud's: the
		// check-in must carry the scan's time, not the cloud's.
		scanned := time.Now().Add(-90 * time.Second).UTC().Truncate(time.Microsecond)
		head := w.Head(t)
		e.Clock.Set(scanned)
		res := e.Scan(t, w.Entry, tok)
		e.Clock.Real()
		require.True(t, res.Admitted, "%+v", res)
		require.Equal(t, string(protocol.FactCheckIn), res.Kind)
		require.Equal(t, v.ID, res.VisitID)

		sitetest.Eventually(t, settle, func() bool { return w.Visit(t, v.ID).Status == cloud.VisitCheckedIn },
			"the check-in did not reach the cloud")
		got := w.Visit(t, v.ID)
		require.NotNil(t, got.CheckedInAt)
		require.True(t, scanned.Equal(*got.CheckedInAt), "checked in at %v, scanned at %v", got.CheckedInAt, scanned)
		require.Equal(t, 1, got.Pass.Uses)
		require.Equal(t, w.Entry, got.GateID)
		rec, ok := w.EdgeFact(t, res.FactID)
		require.True(t, ok, "fact %s recorded", res.FactID)
		require.Equal(t, protocol.FactCheckIn, rec.Fact.Kind)
		require.True(t, scanned.Equal(rec.Fact.At))
		require.Empty(t, rec.Conflict)
		rows := w.FactRows(t, e.ID)
		require.Len(t, rows, 1)
		require.Equal(t, res.FactID, rows[0].ID)

		// Back at the edge: the outbox is empty, and the cache holds the
		// cloud's visit, checked in, at the feed's head, which is the
		// cloud's change of the visit that the check-in made.
		sitetest.Eventually(t, settle, func() bool { return e.Outbox() == 0 }, "the check-in was not acknowledged")
		changes, _, err := w.Svc().SiteChanges(t.Context(), w.Site, head, 0)
		require.NoError(t, err)
		require.Len(t, changes, 1, "the check-in's change of the visit")
		require.NotNil(t, changes[0].Visit)
		require.Equal(t, v.ID, changes[0].Visit.ID)
		require.Equal(t, string(cloud.VisitCheckedIn), changes[0].Visit.Status)
		w.WaitConverged(t, e, settle)
		require.Equal(t, changes[0].Seq, e.View().Seq())
		cached, _ = e.View().Visit(v.ID)
		require.Equal(t, string(cloud.VisitCheckedIn), cached.Status)
		require.True(t, scanned.Equal(*cached.CheckedInAt))
		require.Equal(t, 1, cached.Uses)

		// The same through the gate's TCP reader, as an IP QR reader sends.
		v2 := w.NewVisit(t)
		tok2 := w.Token(t, v2.ID)
		waitVisit(t, e, v2.ID)
		e.ReaderScan(t, w.Entry, tok2)
		sitetest.Eventually(t, settle, func() bool { return w.Visit(t, v2.ID).Status == cloud.VisitCheckedIn },
			"the reader's check-in did not reach the cloud")
		require.Len(t, w.FactRows(t, e.ID), 2)

		// The cloud knows the edge is online, and how far it got.
		sitetest.Eventually(t, settle, func() bool {
			edges, err := w.Svc().Edges(t.Context(), w.Tenant, w.Site.SiteID)
			require.NoError(t, err)
			return len(edges) == 1 && edges[0].State == cloud.EdgeOnline && edges[0].Software == "sitetest"
		}, "the edge's status did not reach the cloud")
	})
}

// A visitor checks in, leaves through the exit gate and comes back on the
// same pass: the cloud records the check-out at the exit's scan time and
// makes the re-entry's visit the edge made, and the edge's cache ends
// equal to the cloud's.
func TestSite_ExitAndReEntry(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		v := w.NewVisit(t)
		tok := w.Token(t, v.ID)
		waitVisit(t, e, v.ID)

		at := time.Now().Add(-5 * time.Minute).UTC().Truncate(time.Microsecond)
		inAt, outAt, againAt := at, at.Add(time.Minute), at.Add(2*time.Minute)
		e.Clock.Set(inAt)
		in := e.Scan(t, w.Entry, tok)
		require.Equal(t, string(protocol.FactCheckIn), in.Kind, "%+v", in)
		e.Clock.Set(outAt)
		out := e.Scan(t, w.Exit, tok)
		require.Equal(t, string(protocol.FactCheckOut), out.Kind, "%+v", out)
		e.Clock.Set(againAt)
		again := e.Scan(t, w.Entry, tok)
		e.Clock.Real()
		require.Equal(t, string(protocol.FactReEntry), again.Kind, "%+v", again)
		require.NotEqual(t, v.ID, again.VisitID)
		require.Equal(t, v.ID, again.PassVisitID)

		sitetest.Eventually(t, settle, func() bool { return e.Outbox() == 0 }, "the facts were not acknowledged")
		require.Len(t, w.FactRows(t, e.ID), 3)
		first := w.Visit(t, v.ID)
		require.Equal(t, cloud.VisitCheckedOut, first.Status)
		require.True(t, inAt.Equal(*first.CheckedInAt))
		require.True(t, outAt.Equal(*first.CheckedOutAt), "checked out at %v, scanned at %v", first.CheckedOutAt, outAt)
		require.Equal(t, again.VisitID, first.ReenteredAs)
		next := w.Visit(t, again.VisitID)
		require.Equal(t, cloud.VisitCheckedIn, next.Status)
		require.Equal(t, v.ID, next.Pass.ForVisitID)
		require.True(t, againAt.Equal(*next.CheckedInAt))
		for _, f := range []string{in.FactID, out.FactID, again.FactID} {
			rec, ok := w.EdgeFact(t, f)
			require.True(t, ok)
			require.Empty(t, rec.Conflict, "fact %s", f)
		}
		w.WaitConverged(t, e, settle)
	})
}
