package sitetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/sync/mqttsync"
	"github.com/svc-vms/svc/sync/protocol"
)

// The cloud process is restarted (its half stops, its store closes, a new
// store, service and half start on the same database) while the edge
// delivers a queue of facts, some of them applied and not yet
// acknowledged (acknowledgements gather for 300 ms here): the edge
// publishes those again, and each fact is applied once. Facts scanned
// after the restart go through the new process.
func TestCloud_RestartWithFactsInFlight(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		const queued, after = 60, 10
		opts.Cloud = func(c *mqttsync.CloudConfig) { c.AckEvery = 300 * time.Millisecond }
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{Window: 16})
		e.Start()
		visits := w.NewVisits(t, queued+after)
		toks := w.Tokens(t, visits)
		w.WaitConverged(t, e, settle)

		w.StopCloud()
		facts := checkIn(t, e.ScanAll, w.Entry, toks[:queued])
		w.StartCloud()
		var applied int
		sitetest.Eventually(t, heal, func() bool {
			applied = len(w.FactRows(t, e.ID))
			return applied >= queued/3
		}, "a third of the facts did not reach the cloud")
		waiting := e.Outbox()
		w.RestartCloud()
		t.Logf("restarted with %d of %d facts applied, %d unacknowledged", applied, queued, waiting)
		require.Less(t, applied, queued, "the facts were delivered before the restart, not across it")
		require.Positive(t, applied+waiting-queued, "some facts were applied and not acknowledged")

		facts = append(facts, checkIn(t, e.ScanAll, w.Entry, toks[queued:])...)
		waitDeliveredOnce(t, w, e.ID, facts, visits, e.Outbox)
		w.WaitConverged(t, e, heal)
	})
}

// An edge that was stopped while the cloud changed starts with a stale
// sequence and catches up by asking for the changes it missed (the
// broker has not kept its session, so none are queued for it).
func TestEdge_RestartCatchesUp(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		old := w.NewVisits(t, 3)
		w.WaitConverged(t, e, settle)
		e.Stop()

		stale := w.Head(t)
		added := w.NewVisits(t, 3)
		_, err := w.Svc().Cancel(t.Context(), w.Actor, old[0].ID)
		require.NoError(t, err)
		_, err = w.Svc().CheckIn(t.Context(), w.Actor, old[1].ID, cloud.CheckInInput{})
		require.NoError(t, err)
		require.Greater(t, w.Head(t), stale)
		e.DropSession(t) // no batch queued for it: it must ask

		e.Start()
		require.Equal(t, stale, e.View().Seq(), "the cache starts where it stopped")
		w.WaitConverged(t, e, heal)
		for _, v := range added {
			_, ok := e.View().Visit(v.ID)
			require.True(t, ok)
		}
		v, _ := e.View().Visit(old[0].ID)
		require.Equal(t, string(cloud.VisitCancelled), v.Status)
		// The half counts the changes once Apply has returned, just after
		// the View that WaitConverged saw.
		head := w.Head(t)
		sitetest.Eventually(t, settle, func() bool { return e.Half().State().Counters.ChangesApplied >= head-stale },
			"the changes missed were not applied as changes")
		require.Zero(t, e.Half().State().Counters.Snapshots, "caught up with changes, not a snapshot")
	})
}

// An edge restarted on an old copy of its cache file (a restored backup)
// has a stale sequence and an outbox of facts the cloud applied and
// acknowledged since: it publishes them again, the cloud acknowledges them
// without applying them twice, and the cache catches up.
func TestEdge_RestoredOldCache(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		visits := w.NewVisits(t, 10)
		toks := w.Tokens(t, visits)
		w.WaitConverged(t, e, settle)
		w.StopCloud()
		facts := checkIn(t, e.ScanAll, w.Entry, toks)
		e.Stop()
		backup := e.SaveCache(t)
		w.StartCloud()
		e.Start()
		waitDeliveredOnce(t, w, e.ID, facts, visits, e.Outbox)
		later := w.NewVisits(t, 3)
		w.WaitConverged(t, e, heal)
		e.Stop()

		e.RestoreCache(t, backup)
		c := e.OpenCache(t)
		depth, _, err := c.OutboxStats()
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.Equal(t, len(facts), depth, "the backup's outbox")
		e.Start()
		waitDeliveredOnce(t, w, e.ID, facts, visits, e.Outbox)
		sitetest.Eventually(t, settle, func() bool { return e.Half().State().Counters.FactsAcked >= uint64(len(facts)) },
			"the facts were not acknowledged again") // the counter follows the outbox's commit
		w.WaitConverged(t, e, heal)
		for _, v := range later {
			_, ok := e.View().Visit(v.ID)
			require.True(t, ok)
		}
	})
}

// A batch of the feed that never reaches the edge (the cloud publishes
// seq N+2 and drops N+1) is a gap: the edge does not apply what follows
// it, asks for what follows its sequence, and ends with the cloud's state.
// The edge here never asks on its own (ResyncEvery is an hour), and the
// feed's cursor has passed both changes, so only the resync can bring
// them.
func TestFeed_GapTriggersResync(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{ResyncEvery: time.Hour})
		e.Start()
		w.NewVisit(t)
		w.WaitConverged(t, e, settle)

		w.StopCloud()
		seq := w.Head(t)
		a, b := w.NewVisit(t), w.NewVisit(t)
		require.Equal(t, seq+2, w.Head(t), "one change a visit")
		asked, snapshots := e.Half().State().Counters.ResyncRequests, e.Half().State().Counters.Snapshots
		raw := w.RawClient(t)
		// The publisher's work, done by hand: the cursor passes both
		// changes, only the second is published.
		_, err := w.Svc().PublishFeeds(context.Background(), 100, func(site protocol.Site, cs []protocol.Change) error {
			if site != w.Site {
				return nil
			}
			require.Equal(t, seq+2, cs[len(cs)-1].Seq)
			b, err := protocol.Encode(&protocol.Batch{Changes: cs[len(cs)-1:]})
			require.NoError(t, err)
			sitetest.Publish(t, raw, site.Changes(), false, b)
			return nil
		})
		require.NoError(t, err)
		sitetest.Eventually(t, settle, func() bool { return e.Half().State().Counters.ResyncRequests > asked },
			"the gap did not make the edge ask")
		require.Equal(t, seq, e.View().Seq(), "nothing past the gap is applied")
		_, ok := e.View().Visit(b.ID)
		require.False(t, ok)

		w.StartCloud()
		w.WaitConverged(t, e, heal)
		for _, v := range []cloud.Visit{a, b} {
			_, ok := e.View().Visit(v.ID)
			require.True(t, ok, "visit %s", v.ID)
		}
		require.Positive(t, w.Cloud().Half().State().ResyncsAnswered, "answered with changes")
		require.Equal(t, snapshots, e.Half().State().Counters.Snapshots, "not with a snapshot")
	})
}

// An edge further behind than SnapshotAfter is answered with a snapshot,
// and its cache ends equal to the cloud's state.
func TestFeed_SnapshotWhenFarBehind(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		const snapshotAfter = 5
		opts.Cloud = func(c *mqttsync.CloudConfig) { c.SnapshotAfter = snapshotAfter }
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		old := w.NewVisits(t, 2)
		w.WaitConverged(t, e, settle)
		e.Stop()

		stale, published := w.Head(t), w.Cloud().Half().State().ChangesSent
		w.NewVisits(t, 2*snapshotAfter)
		_, err := w.Svc().Cancel(t.Context(), w.Actor, old[0].ID)
		require.NoError(t, err)
		head := w.Head(t)
		require.Greater(t, head-stale, uint64(snapshotAfter))
		sent := w.Cloud().Half().State().Snapshots
		// The publisher coalesces commits (PublishEvery): the feed must
		// have gone out to the absent edge's session before it is dropped,
		// or the edge would find the changes on the feed when it returns.
		sitetest.Eventually(t, settle, func() bool { return w.Cloud().Half().State().ChangesSent-published >= head-stale },
			"the cloud did not publish the changes")
		e.DropSession(t) // only the resync can bring the edge up to date

		e.Start()
		w.WaitConverged(t, e, heal)
		require.Equal(t, uint64(1), e.Half().State().Counters.Snapshots, "caught up with a snapshot")
		require.Greater(t, w.Cloud().Half().State().Snapshots, sent)
		v, _ := e.View().Visit(old[0].ID)
		require.Equal(t, string(cloud.VisitCancelled), v.Status)
	})
}
