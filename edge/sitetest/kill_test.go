package sitetest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// killVisits is how many facts wait in the outbox when the edge is killed.
const killVisits = 300

// The edge, a child process, is killed with SIGKILL while it delivers its
// outbox: the cloud has applied some facts and not others, and some it
// applied were never acknowledged. Restarted on the same cache file, the
// edge delivers the rest: every fact is applied exactly once, none lost.
// The cloud learns of the death from the edge's last will.
func TestEdge_KilledMidFlush(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		// A small window makes delivery a sequence of round trips, so the
		// kill finds it in the middle; acknowledgements that gather for
		// 200 ms make the kill find facts applied and not acknowledged.
		opts.Cloud = func(c *mqttsync.CloudConfig) { c.AckEvery = 200 * time.Millisecond }
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{Window: 8})
		visits := w.NewVisits(t, killVisits)
		toks := w.Tokens(t, visits)
		child := e.StartChild(t)
		head := w.Head(t)
		sitetest.Eventually(t, heal, func() bool {
			st := child.Status(t)
			return st.Seq == head && !st.Stale
		}, "the child edge did not sync")

		w.StopCloud()
		facts := checkIn(t, child.ScanAll, w.Entry, toks)
		require.Equal(t, killVisits, child.Status(t).Outbox.Depth)

		w.StartCloud()
		var applied int
		sitetest.Eventually(t, heal, func() bool {
			applied = len(w.FactRows(t, e.ID))
			return applied >= killVisits/3
		}, "a third of the facts did not reach the cloud")
		child.Kill()
		require.Less(t, applied, killVisits, "the edge was killed after the flush, not during it")
		c := e.OpenCache(t)
		left, _, err := c.OutboxStats()
		require.NoError(t, err)
		require.NoError(t, c.Close())
		t.Logf("killed with %d of %d facts applied, %d unacknowledged in the outbox", applied, killVisits, left)
		require.Positive(t, left, "the outbox still holds what the cloud did not acknowledge")
		require.Less(t, left, killVisits, "the cloud acknowledged some before the kill")
		// What the edge published before it died is applied, and not
		// acknowledged to anyone: the restarted edge publishes it again.
		sitetest.Eventually(t, settle, func() bool { return len(w.FactRows(t, e.ID))+left > killVisits },
			"no fact was applied and left unacknowledged by the kill")
		t.Logf("%d facts applied and still in the outbox", len(w.FactRows(t, e.ID))+left-killVisits)

		sitetest.Eventually(t, settle, func() bool { return w.CloudEdge(t, e.ID).State == cloud.EdgeOffline },
			"the killed edge's last will did not reach the cloud")

		// The rest in one window, published again only if the cloud has
		// not acknowledged it within 5 s (under -race it applies a few
		// dozen a second).
		e.SetOptions(sitetest.EdgeOptions{AckTimeout: 5 * time.Second})
		child = e.StartChild(t)
		waitDeliveredOnce(t, w, e.ID, facts, visits, func() int { return child.Status(t).Outbox.Depth })
		child.Stop(t)
	})
}
