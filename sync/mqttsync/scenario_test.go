package mqttsync

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/protocol"
)

const patience = 20 * time.Second

// scenarios run on every backend: the embedded broker always, Mosquitto
// when SVC_TEST_MQTT_URL is set.
var scenarios = []struct {
	name string
	run  func(t *testing.T, b *backend)
}{
	{"ChangesReachTheEdgeInOrder", scenarioChangesInOrder},
	{"GapTriggersResync", scenarioGap},
	{"FarBehindEdgeGetsSnapshotInParts", scenarioSnapshot},
	{"PrunedFeedGetsSnapshot", scenarioPruned},
	{"FactsAckedAndRemoved", scenarioFacts},
	{"RejectedAndFailedFactsStay", scenarioRejected},
	{"OutageQueuesFactsAppliedOnce", scenarioOutage},
	{"CloudRestartLosesNoFact", scenarioCloudRestart},
	{"MalformedMessagesDropped", scenarioMalformed},
	{"LastWillMarksEdgeOffline", scenarioLastWill},
	{"CloudAfterTheEdgeHearsItCaughtUp", scenarioCloudAfterEdge},
	{"SharedSubscriptionsSplitFacts", scenarioShared},
}

func TestScenarios(t *testing.T) {
	for _, bk := range backends(t) {
		for _, sc := range scenarios {
			t.Run(sc.name+"/"+bk.name, func(t *testing.T) {
				t.Parallel()
				sc.run(t, bk.start(t))
			})
		}
	}
}

// syncedEdge starts a cloud and an edge on a fresh site with head visits
// and waits until the edge holds them all.
func syncedEdge(t *testing.T, b *backend, head int, modEdge func(*EdgeConfig), modCloud func(*CloudConfig)) (*fakeCloud, *Cloud, *testEdge) {
	t.Helper()
	site := newSite()
	store := newFakeCloud()
	store.addVisits(site, head)
	cloud, _ := startCloud(t, b, site.OrgID, store, modCloud)
	// The feed goes out before the edge subscribes, so the edge starts
	// from a snapshot (it asks for what follows 0).
	waitFor(t, patience, "the feed to be published", func() bool { return store.unpublished(site) == 0 })
	e := startEdge(t, b, site, store, modEdge)
	waitFor(t, patience, "the edge's first resync", func() bool {
		return e.store.Seq() == uint64(head) && !e.State().SyncedAt.IsZero()
	})
	return store, cloud, e
}

// scenarioCloudAfterEdge: the edge connects while no cloud is, so its
// status and first resync go unheard; the cloud then connects and
// publishes the site's feed, which the edge applies, and the edge's next
// resync is answered with nothing. The cloud still hears a status of the
// caught-up cache at once, not StatusEvery (here an hour) later
// (TestEnrol_Mosquitto failed on this in CI).
func scenarioCloudAfterEdge(t *testing.T, b *backend) {
	site := newSite()
	store := newFakeCloud()
	head := store.addVisits(site, 4)
	e := startEdge(t, b, site, store, func(c *EdgeConfig) { c.StatusEvery = time.Hour })
	waitFor(t, patience, "the edge to connect", func() bool { return e.State().Connected })
	startCloud(t, b, site.OrgID, store, nil)
	waitFor(t, patience, "a status of the caught-up cache", func() bool {
		st, ok := store.lastStatus(e.id)
		return ok && st.State == "online" && st.Seq == head
	})
	require.Len(t, e.store.snapshotParts(), 0, "the feed brought the cache up, not a snapshot")
}

func scenarioChangesInOrder(t *testing.T, b *backend) {
	store, cloud, e := syncedEdge(t, b, 3, nil, nil)
	require.Len(t, e.store.snapshotParts(), 1, "a new edge (seq 0) starts from a snapshot")

	// Changes committed in several runs, some larger than a Batch holds.
	for _, n := range []int{1, 7, protocol.MaxChanges + 20, 2} {
		store.addVisits(e.site, n)
		cloud.Notify()
	}
	head := store.addVisits(e.site, 0)
	waitFor(t, patience, "the feed to reach the edge", func() bool { return e.store.Seq() == head })

	applied := e.store.appliedSeqs()
	want := make([]uint64, 0, head-3)
	for s := uint64(4); s <= head; s++ {
		want = append(want, s)
	}
	assert.Equal(t, want, applied, "changes after the snapshot applied once each, in order")
	assert.Equal(t, int(head), e.store.visitCount())
	assert.Zero(t, e.State().Counters.Dropped)
}

func scenarioGap(t *testing.T, b *backend) {
	store, cloud, e := syncedEdge(t, b, 5, nil, nil)
	before := len(store.resyncAfters())

	// 6..10 are "lost" on the way; 11..30 arrive: a gap.
	store.addLost(e.site, 25, 5)
	cloud.Notify()
	waitFor(t, patience, "the gap to be filled", func() bool { return e.store.Seq() == 30 })

	want := make([]uint64, 0, 25)
	for s := uint64(6); s <= 30; s++ {
		want = append(want, s)
	}
	assert.Equal(t, want, e.store.appliedSeqs(), "6..30 applied in order, none twice")
	assert.Contains(t, store.resyncAfters()[before:], uint64(5), "the edge asked for what follows 5")
	assert.Len(t, e.store.snapshotParts(), 1, "a small gap is filled with changes, not a snapshot")
}

func scenarioSnapshot(t *testing.T, b *backend) {
	// A new edge (seq 0) gets a snapshot of 2500 visits, in parts of at
	// most MaxSnapshot visits.
	site := newSite()
	store := newFakeCloud()
	head := store.addVisits(site, 2500)
	cloud, _ := startCloud(t, b, site.OrgID, store, func(c *CloudConfig) { c.SnapshotAfter = 100 })
	waitFor(t, patience, "the feed to be published", func() bool { return store.unpublished(site) == 0 })
	e := startEdge(t, b, site, store, nil)
	waitFor(t, patience, "the snapshot", func() bool { return e.store.Seq() == head })

	snaps := e.store.snapshotParts()
	require.Len(t, snaps, 1)
	parts := snaps[0]
	assert.GreaterOrEqual(t, len(parts), 3, "2500 visits need at least 3 parts")
	total := 0
	for i, p := range parts {
		assert.Equal(t, i+1, p.Part)
		assert.LessOrEqual(t, len(p.Visits), protocol.MaxSnapshot)
		assert.Equal(t, head, p.Seq)
		total += len(p.Visits)
	}
	assert.Equal(t, 2500, total)
	assert.NotNil(t, parts[0].Settings)
	assert.Equal(t, 2500, e.store.visitCount())

	// Then it falls far behind again (seq 2500, head 2700 > 100 more):
	// another snapshot; and 20 more (within 100) come as changes.
	e.proxy.Cut()
	waitFor(t, patience, "the edge to notice", func() bool { return !e.State().Connected })
	store.addLost(site, 200, 200) // published while the edge was away, and not queued for it
	e.proxy.Restore()
	waitFor(t, patience, "the second snapshot", func() bool { return len(e.store.snapshotParts()) == 2 })
	assert.Equal(t, uint64(2700), e.store.Seq())
	store.addVisits(site, 20)
	cloud.Notify()
	waitFor(t, patience, "the feed", func() bool { return e.store.Seq() == 2720 })
	assert.Len(t, e.store.snapshotParts(), 2)
}

func scenarioPruned(t *testing.T, b *backend) {
	store, cloud, e := syncedEdge(t, b, 10, nil, nil)
	e.proxy.Cut()
	waitFor(t, patience, "the edge to notice", func() bool { return !e.State().Connected })
	store.addLost(e.site, 30, 30)
	store.prune(e.site, 20) // 11..20 are no longer kept: changes cannot fill the gap
	e.proxy.Restore()
	waitFor(t, patience, "the snapshot", func() bool { return len(e.store.snapshotParts()) == 2 })
	assert.Equal(t, uint64(40), e.store.Seq())
	assert.Equal(t, 40, e.store.visitCount())
	_ = cloud
}

func scenarioFacts(t *testing.T, b *backend) {
	store, _, e := syncedEdge(t, b, 1, nil, nil)
	e.store.onAck = func(ids []string) {
		for _, id := range ids {
			if !store.isApplied(id) {
				t.Errorf("fact %s acknowledged before the cloud applied it", id)
			}
		}
	}
	ids := e.store.record(600) // more than one window
	e.Notify()
	waitFor(t, patience, "the outbox to empty", func() bool { return e.store.outboxLen() == 0 })
	for _, id := range ids {
		require.True(t, store.isApplied(id), "fact %s applied", id)
	}
	assert.Equal(t, 600, store.appliedCount())
	st := e.State()
	assert.Equal(t, uint64(600), st.Counters.FactsAcked)
	waitFor(t, patience, "the state to show an empty outbox", func() bool { s := e.State(); return s.OutboxDepth == 0 && s.InFlight == 0 })
}

func scenarioRejected(t *testing.T, b *backend) {
	store, cloud, e := syncedEdge(t, b, 1, nil, nil)
	// The cloud forgets the edge: its facts are rejected, never
	// acknowledged, and stay in the outbox.
	store.mu.Lock()
	delete(store.edges, e.id)
	store.mu.Unlock()
	ids := e.store.record(3)
	e.Notify()
	waitFor(t, patience, "the rejections", func() bool { return cloud.State().FactsRejected >= 3 })
	assert.Equal(t, 3, e.store.outboxLen(), "rejected facts stay in the outbox")

	// Known again, with the store failing twice (the batch and then the
	// first fact tried alone, or two batches): the edge republishes after
	// AckTimeout and they are applied.
	store.mu.Lock()
	store.edges[e.id] = e.site
	store.failNext = 2
	store.mu.Unlock()
	waitFor(t, patience, "the outbox to empty", func() bool { return e.store.outboxLen() == 0 })
	for _, id := range ids {
		assert.True(t, store.isApplied(id))
		assert.GreaterOrEqual(t, store.callsFor(id), 2, "each was published again after it was refused")
	}
	assert.GreaterOrEqual(t, cloud.State().FactsFailed, uint64(1))
}

func scenarioOutage(t *testing.T, b *backend) {
	store, cloud, e := syncedEdge(t, b, 1, nil, nil)
	var acked []string
	e.store.onAck = func(ids []string) {
		for _, id := range ids {
			if !store.isApplied(id) {
				t.Errorf("fact %s acknowledged before the cloud applied it", id)
			}
		}
		acked = append(acked, ids...) // Ack is called from the edge's one goroutine
	}
	first := e.store.record(3000)
	e.Notify()
	// Cut the link mid-flush: some facts are applied, some in flight,
	// some not yet published.
	waitFor(t, patience, "the first facts to be applied", func() bool { return store.appliedCount() > 0 })
	e.proxy.Cut()
	waitFor(t, patience, "the edge to notice", func() bool { return !e.State().Connected })
	second := e.store.record(500) // facts keep being recorded while offline
	e.Notify()
	store.addVisits(e.site, 50) // and the cloud keeps changing
	cloud.Notify()
	assert.Greater(t, e.store.outboxLen(), 500, "facts queue in the outbox while the broker is unreachable")

	e.proxy.Restore()
	waitFor(t, patience, "the outbox to empty", func() bool { return e.store.outboxLen() == 0 })
	waitFor(t, patience, "the edge to catch up", func() bool { return e.store.Seq() == 51 })
	all := append(slices.Clone(first), second...)
	for _, id := range all {
		require.True(t, store.isApplied(id), "fact %s applied", id)
	}
	assert.Equal(t, 3500, store.appliedCount(), "each fact applied once")
	assert.GreaterOrEqual(t, e.State().Counters.Connects, uint64(2))
}

func scenarioCloudRestart(t *testing.T, b *backend) {
	site := newSite()
	store := newFakeCloud()
	store.addVisits(site, 1)
	_, stop := startCloud(t, b, site.OrgID, store, nil)
	e := startEdge(t, b, site, store, nil)
	waitFor(t, patience, "the edge to sync", func() bool { return e.store.Seq() == 1 })
	ids := e.store.record(400)
	e.Notify()
	waitFor(t, patience, "some facts to be applied", func() bool { return store.appliedCount() > 0 })
	stop()
	more := e.store.record(100)
	e.Notify()
	startCloud(t, b, site.OrgID, store, nil)
	waitFor(t, patience, "the outbox to empty", func() bool { return e.store.outboxLen() == 0 })
	for _, id := range append(ids, more...) {
		require.True(t, store.isApplied(id), "fact %s applied", id)
	}
	assert.Equal(t, 500, store.appliedCount())
}

func scenarioMalformed(t *testing.T, b *backend) {
	store, cloud, e := syncedEdge(t, b, 2, nil, nil)
	raw := rawClient(t, b, broker.Access{Cloud: true}, "raw-"+e.id)
	good, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 3, At: t0, Visit: ptr(newVisit("Late"))}}})
	require.NoError(t, err)
	ack, err := protocol.Encode(&protocol.Reply{Kind: protocol.ReplyAck, Acks: []string{ids.New(ids.Fact)}})
	require.NoError(t, err)
	bad := []struct{ topic, payload string }{
		{e.site.Changes(), "not json"},
		{e.site.Changes(), `{"v":2,"changes":[]}`},                                                           // another version
		{e.site.Changes(), string(good[:len(good)-1]) + `,"extra":1}`},                                       // unknown field
		{e.site.Changes(), `{"v":1,"changes":[{"seq":3,"at":"2026-03-02T09:00:00Z"}]}`},                      // a change of no object
		{e.site.Changes(), string(ack)},                                                                      // a reply on the feed
		{e.site.Replies(e.id), string(good)},                                                                 // a batch as a reply
		{e.site.Replies(e.id), `{"v":1,"kind":"snapshot","request_id":"x","snapshot":{"part":2,"parts":1}}`}, // invalid part
	}
	for _, m := range bad {
		publish(t, raw, m.topic, false, []byte(m.payload))
	}
	// Garbage for the cloud too: not a fact, a fact of a foreign shape, a
	// resync request without an ID, a status naming another edge.
	cloudBad := []struct{ topic, payload string }{
		{e.site.Facts(e.id), "{"},
		{e.site.Facts(e.id), string(good)},
		{e.site.Resync(e.id), `{"v":1,"after":1}`},
		{e.site.Status(e.id), `{"v":1,"edge_id":"` + ids.New(ids.Edge) + `","state":"online","at":"2026-03-02T09:00:00Z","seq":0,"outbox":0}`},
	}
	for _, m := range cloudBad {
		publish(t, raw, m.topic, false, []byte(m.payload))
	}
	publish(t, raw, e.site.Changes(), false, good)
	waitFor(t, patience, "the good batch after the bad ones", func() bool { return e.store.Seq() == 3 })
	waitFor(t, patience, "the edge to drop every bad message", func() bool { return e.State().Counters.Dropped == uint64(len(bad)) })
	waitFor(t, patience, "the cloud to drop every bad message", func() bool { return cloud.State().Dropped == uint64(len(cloudBad)) })
	assert.Equal(t, []uint64{3}, e.store.appliedSeqs(), "nothing but the good batch applied")
	assert.Zero(t, store.callCount(), "no bad fact reached the store")
	assert.Len(t, e.store.snapshotParts(), 1)
	assert.True(t, e.State().Connected, "the edge is still connected")
}

func scenarioLastWill(t *testing.T, b *backend) {
	store, _, e := syncedEdge(t, b, 1, func(c *EdgeConfig) { c.MinBackoff, c.MaxBackoff = 10*time.Second, 10*time.Second }, nil)
	waitFor(t, patience, "the online status", func() bool {
		st, ok := store.lastStatus(e.id)
		return ok && st.State == "online"
	})
	e.proxy.Cut() // no DISCONNECT: the broker publishes the will
	waitFor(t, patience, "the last will", func() bool {
		st, ok := store.lastStatus(e.id)
		return ok && st.State == "offline"
	})
	st, _ := store.lastStatus(e.id)
	assert.Equal(t, e.id, st.EdgeID)
	// The broker may publish the will before the edge's client has
	// noticed its connection is gone.
	waitFor(t, patience, "the edge to see its connection cut", func() bool { return !e.State().Connected })
}

func scenarioShared(t *testing.T, b *backend) {
	site := newSite()
	fake := newFakeCloud()
	fake.addVisits(site, 1)
	a, bb := &sharedCloud{fakeCloud: fake}, &sharedCloud{fakeCloud: fake}
	startCloud(t, b, site.OrgID, a, nil)
	startCloud(t, b, site.OrgID, bb, nil)
	e := startEdge(t, b, site, fake, nil)
	waitFor(t, patience, "the edge to sync", func() bool { return e.store.Seq() == 1 })
	ids := e.store.record(400)
	e.Notify()
	waitFor(t, patience, "the outbox to empty", func() bool { return e.store.outboxLen() == 0 })
	sa, sb := a.seen(), bb.seen()
	assert.NotEmpty(t, sa, "the first cloud process got a share")
	assert.NotEmpty(t, sb, "the second cloud process got a share")
	for _, id := range ids {
		assert.True(t, sa[id] || sb[id], "fact %s seen by one of them", id)
	}
	assert.Equal(t, 400, fake.appliedCount())
	t.Logf("shares: %d and %d of 400 (%d handed to both, redelivered)", len(sa), len(sb), len(sa)+len(sb)-400)
}

// TestBrokerRestart stops the embedded broker and starts a new one on the
// same address: sessions, queued and retained messages are gone, and both
// halves reconnect, subscribe again and catch up.
func TestBrokerRestart(t *testing.T) {
	b := embedded(t)
	store, cloud, e := syncedEdge(t, b, 3, nil, nil)
	ids := e.store.record(300)
	e.Notify()
	waitFor(t, patience, "some facts to be applied", func() bool { return store.appliedCount() > 0 })
	b.restart()
	more := e.store.record(200)
	e.Notify()
	store.addVisits(e.site, 10)
	cloud.Notify()
	waitFor(t, patience, "the outbox to empty", func() bool { return e.store.outboxLen() == 0 })
	waitFor(t, patience, "the feed to reach the edge", func() bool { return e.store.Seq() == 13 })
	for _, id := range append(ids, more...) {
		require.True(t, store.isApplied(id))
	}
	assert.Equal(t, 500, store.appliedCount())
}

// rejectingStore rejects (ErrRejected: never acknowledged) the facts whose
// counter is at or below upTo, as a cloud does with a fact it will not take
// (a kind an older cloud does not know, a desk fact whose walk-in never
// comes), and applies the others through the fake cloud.
type rejectingStore struct {
	*fakeCloud
	upTo  uint64
	mu    sync.Mutex
	tries map[string]int // rejections by fact ID
}

func (r *rejectingStore) rejected(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tries[id]
}

func (r *rejectingStore) ApplyFacts(ctx context.Context, site protocol.Site, facts []protocol.Fact) ([]error, error) {
	errs := make([]error, len(facts))
	var ok []protocol.Fact
	var at []int
	r.mu.Lock()
	for i, f := range facts {
		if f.Counter <= r.upTo {
			r.tries[f.ID]++
			errs[i] = ErrRejected
			continue
		}
		ok, at = append(ok, f), append(at, i)
	}
	r.mu.Unlock()
	if len(ok) > 0 {
		sub, err := r.fakeCloud.ApplyFacts(ctx, site, ok)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			errs[i] = sub[j]
		}
	}
	return errs, nil
}

// TestEdge_RejectedFactsDoNotHoldTheWindow: facts the cloud rejects are
// never acknowledged. As many as the window at the outbox's head held it
// for ever: republished at every AckTimeout from the oldest, they kept the
// facts after them from the cloud. A fact unacknowledged parkAfter times
// is now parked out of the window, and the facts after it go on; the
// rejected ones stay in the outbox and are tried again later.
func TestEdge_RejectedFactsDoNotHoldTheWindow(t *testing.T) {
	b := embedded(t)
	site := newSite()
	inner := newFakeCloud()
	store := &rejectingStore{fakeCloud: inner, upTo: 2, tries: map[string]int{}}
	startCloud(t, b, site.OrgID, store, nil)
	e := startEdge(t, b, site, inner, func(c *EdgeConfig) {
		c.Window = 2
		c.AckTimeout = 100 * time.Millisecond
		c.ResyncEvery = 50 * time.Millisecond // the cloud answers these: it works, and leaves two facts unacknowledged
	})
	waitFor(t, patience, "the edge to connect", func() bool { return e.State().Connected })
	ids := e.store.record(3) // two the cloud rejects, then one it takes
	e.Notify()
	waitFor(t, patience, "the fact after the rejected ones to be applied", func() bool { return inner.isApplied(ids[2]) })
	waitFor(t, patience, "its acknowledgement", func() bool { return e.store.outboxLen() == 2 })
	before := store.rejected(ids[0])
	waitFor(t, patience, "a rejected fact to be tried again", func() bool { return store.rejected(ids[0]) > before })
	assert.Equal(t, 2, e.store.outboxLen(), "the rejected facts stay in the outbox")
}
