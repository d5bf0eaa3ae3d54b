package sitetest_test

import (
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/sync/protocol"
)

// feedWatch records the sequences of Site's feed as a subscriber sees
// them.
type feedWatch struct {
	mu   sync.Mutex
	seqs []uint64
	bad  int
}

func watchFeed(t *testing.T, w *sitetest.World) *feedWatch {
	t.Helper()
	f := &feedWatch{}
	c := w.RawClient(t)
	tok := c.Subscribe(w.Site.Changes(), 1, func(_ paho.Client, m paho.Message) {
		var b protocol.Batch
		err := protocol.Decode(m.Payload(), &b)
		f.mu.Lock()
		defer f.mu.Unlock()
		if err != nil {
			f.bad++
			return
		}
		for _, c := range b.Changes {
			f.seqs = append(f.seqs, c.Seq)
		}
	})
	require.True(t, tok.WaitTimeout(10*time.Second))
	require.NoError(t, tok.Error())
	return f
}

func (f *feedWatch) seen() ([]uint64, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint64(nil), f.seqs...), f.bad
}

// Two cloud processes (two services on one PostgreSQL database, two cloud
// halves on one broker) share the inbound facts through the shared
// subscriptions: each takes some, and each fact is applied once. Both
// write and publish the site's feed, and it reaches the edge (and any
// subscriber) in order: every sequence once, with no gap for the edge to
// ask about.
func TestCloud_TwoProcessesShareFacts(t *testing.T) {
	sitetest.Each(t, []string{sitetest.Postgres}, func(t *testing.T, opts sitetest.Options) {
		const n = 50
		w := sitetest.Start(t, opts)
		first, second := w.Cloud(), w.AddProcess(t)
		e := w.NewEdge(t, sitetest.EdgeOptions{ResyncEvery: time.Hour})
		e.Start()
		w.WaitConverged(t, e, settle)
		asked := e.Half().State().Counters.ResyncRequests
		feed := watchFeed(t, w)
		from := w.Head(t) + 1

		visits := make([]cloud.Visit, n)
		for i := range visits {
			p := first
			if i%2 == 1 {
				p = second
			}
			visits[i] = p.NewVisit(t)
		}
		toks := w.Tokens(t, visits)
		w.WaitConverged(t, e, heal)
		facts := checkIn(t, e.ScanAll, w.Entry, toks)
		waitDeliveredOnce(t, w, e.ID, facts, visits, e.Outbox)
		w.WaitConverged(t, e, heal) // the check-ins come back on the feed

		a, b := first.Half().State().FactsApplied, second.Half().State().FactsApplied
		t.Logf("facts applied by the first process %d, by the second %d", a, b)
		require.Positive(t, a, "the first process took a share of the facts")
		require.Positive(t, b, "the second process took a share of the facts")
		require.GreaterOrEqual(t, a+b, uint64(n))

		ca, cb := first.Half().State().ChangesSent, second.Half().State().ChangesSent
		t.Logf("changes published by the first process %d, by the second %d", ca, cb)
		require.Positive(t, ca, "the first process published some of the feed")
		require.Positive(t, cb, "the second process published some of the feed")

		head := w.Head(t)
		sitetest.Eventually(t, settle, func() bool {
			seqs, _ := feed.seen()
			return len(seqs) > 0 && seqs[len(seqs)-1] == head
		}, "the feed's last change did not reach the subscriber")
		seqs, bad := feed.seen()
		require.Zero(t, bad)
		want := make([]uint64, 0, head-from+1)
		for s := from; s <= head; s++ {
			want = append(want, s)
		}
		require.Equal(t, want, seqs, "the feed as a subscriber saw it: every change once, in order")
		require.Equal(t, asked, e.Half().State().Counters.ResyncRequests, "the edge never saw a gap")

		// Copies of each fact, as QoS 1 redeliveries and republications
		// make them, reach both processes at once: each is applied once.
		more := w.NewVisits(t, 20)
		moreToks := w.Tokens(t, more)
		w.WaitConverged(t, e, heal)
		w.StopCloud()
		second.StopHalf()
		moreFacts := checkIn(t, e.ScanAll, w.Entry, moreToks)
		e.Stop()
		c := e.OpenCache(t)
		queued, err := c.Outbox(0)
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.Len(t, queued, len(more))
		first.StartHalf()
		second.StartHalf()
		raw := w.RawClient(t)
		const copies = 4
		var pubs []paho.Token
		for range copies {
			for i := range queued {
				pubs = append(pubs, raw.Publish(w.Site.Facts(e.ID), 1, false, encode(t, &queued[i])))
			}
		}
		for _, tok := range pubs {
			require.True(t, tok.WaitTimeout(settle))
			require.NoError(t, tok.Error())
		}
		sitetest.Eventually(t, settle, func() bool {
			return first.Half().State().FactsApplied+second.Half().State().FactsApplied >= copies*uint64(len(queued))
		}, "the copies were not all applied")
		a, b = first.Half().State().FactsApplied, second.Half().State().FactsApplied
		t.Logf("copies applied by the first process %d, by the second %d", a, b)
		require.Positive(t, a)
		require.Positive(t, b)
		e.Start()
		waitDeliveredOnce(t, w, e.ID, append(facts, moreFacts...), append(visits, more...), e.Outbox)
	})
}
