package mqttsync

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThroughput_Facts drains 100,000 facts from one edge's outbox through
// the broker into the cloud's store, every one applied, and logs the rate.
// It asserts no duration, only that the drain keeps moving: a loaded CI
// machine once took 36 s here and another over a minute, and
// speed is measured by the drain load program (docs/performance.md), not
// by a test. Under the race detector it drains 20,000.
func TestThroughput_Facts(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 facts: not in -short")
	}
	n := 100_000
	if raceEnabled {
		n = 20_000 // the race detector slows every goroutine several times over
	}
	for _, bk := range backends(t) {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.start(t)
			store, _, e := syncedEdge(t, b, 1, nil, nil)
			e.store.record(n)
			start := time.Now()
			e.Notify()
			left := func() uint64 { return uint64(e.store.outboxLen()) }
			waitMoving(t, 30*time.Second, "the outbox's drain", left, func() bool { return left() == 0 })
			took := time.Since(start)
			require.Equal(t, n, store.appliedCount())
			t.Logf("%s: %d facts in %v (%.0f facts/s), %d published, %d store calls",
				bk.name, n, took.Round(time.Millisecond), float64(n)/took.Seconds(), e.State().Counters.FactsPublished, store.callTotal())
		})
	}
}

// TestThroughput_Feed publishes 20,000 changes on a site's feed and
// measures how fast the edge applies them.
func TestThroughput_Feed(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short")
	}
	const n = 20_000
	for _, bk := range backends(t) {
		t.Run(bk.name, func(t *testing.T) {
			b := bk.start(t)
			store, cloud, e := syncedEdge(t, b, 1, nil, nil)
			start := time.Now()
			head := store.addVisits(e.site, n)
			cloud.Notify()
			waitMoving(t, 30*time.Second, "the edge's feed", e.store.Seq, func() bool { return e.store.Seq() == head })
			took := time.Since(start)
			t.Logf("%s: %d changes in %v (%.0f changes/s), %d resync requests",
				bk.name, n, took.Round(time.Millisecond), n/took.Seconds(), e.State().Counters.ResyncRequests)
			assert.Len(t, e.store.snapshotParts(), 1, "the live feed kept up without a snapshot")
		})
	}
}
