package mqttsync

import (
	"errors"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// recorder is a paho.Client that records publications instead of sending
// them, for the halves' logic without a broker. Only Publish is used.
type recorder struct {
	paho.Client
	mu   sync.Mutex
	pubs []message
}

func (r *recorder) Publish(topic string, _ byte, _ bool, payload any) paho.Token {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pubs = append(r.pubs, message{topic: topic, payload: payload.([]byte)})
	return failedToken{nil}
}

func (r *recorder) take() []message {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pubs
	r.pubs = nil
	return out
}

// resyncs decodes the resync requests among msgs.
func resyncs(t *testing.T, msgs []message) []protocol.ResyncRequest {
	t.Helper()
	var out []protocol.ResyncRequest
	for _, m := range msgs {
		if _, kind, _, _ := protocol.ParseTopic(m.topic); kind != protocol.KindResync {
			continue
		}
		var r protocol.ResyncRequest
		require.NoError(t, protocol.Decode(m.payload, &r))
		out = append(out, r)
	}
	return out
}

func newTestEdge(t testing.TB) (*Edge, *fakeEdge, *recorder) {
	t.Helper()
	site := newSite()
	id := ids.New(ids.Edge)
	store := newFakeEdge(id)
	e, err := NewEdge(EdgeConfig{BrokerURL: "tcp://127.0.0.1:1", Site: site, EdgeID: id, Store: store, Logger: testLogger(t)})
	require.NoError(t, err)
	return e, store, &recorder{}
}

func changes(from, to uint64) []protocol.Change {
	var out []protocol.Change
	for s := from; s <= to; s++ {
		v := newVisit("V")
		out = append(out, protocol.Change{Seq: s, At: t0, Visit: &v})
	}
	return out
}

func encode[M protocol.Message](t testing.TB, m M) []byte {
	t.Helper()
	b, err := protocol.Encode(m)
	require.NoError(t, err)
	return b
}

func TestEdge_Feed(t *testing.T) {
	e, store, rec := newTestEdge(t)
	feed := func(from, to uint64) message {
		return message{e.cfg.Site.Changes(), encode(t, &protocol.Batch{Changes: changes(from, to)})}
	}

	e.handle(rec, feed(1, 3))
	assert.Equal(t, uint64(3), store.Seq(), "a batch that follows on is applied")
	assert.Empty(t, resyncs(t, rec.take()))

	e.handle(rec, feed(2, 5))
	assert.Equal(t, []uint64{1, 2, 3, 4, 5}, store.appliedSeqs(), "what was applied before is skipped")

	e.handle(rec, feed(1, 5))
	assert.Empty(t, rec.take(), "a redelivery asks for nothing")

	e.handle(rec, feed(9, 10))
	assert.Equal(t, uint64(5), store.Seq(), "a gap is not applied")
	reqs := resyncs(t, rec.take())
	require.Len(t, reqs, 1)
	assert.Equal(t, uint64(5), reqs[0].After)

	e.handle(rec, feed(11, 12))
	assert.Empty(t, rec.take(), "one request outstanding at a time")

	// The answer fills the gap; the feed went on to 12, so it asks again.
	reply := func(r protocol.Reply) message { return message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &r)} }
	e.handle(rec, reply(protocol.Reply{Kind: protocol.ReplyChanges, RequestID: "stale", Changes: changes(6, 8)}))
	assert.Equal(t, uint64(5), store.Seq(), "an answer to another request is ignored")
	e.handle(rec, reply(protocol.Reply{Kind: protocol.ReplyChanges, RequestID: reqs[0].RequestID, Changes: changes(6, 8), More: true}))
	assert.Equal(t, uint64(8), store.Seq())
	reqs = resyncs(t, rec.take())
	require.Len(t, reqs, 1, "More: ask for the rest")
	assert.Equal(t, uint64(8), reqs[0].After)
	e.handle(rec, reply(protocol.Reply{Kind: protocol.ReplyChanges, RequestID: reqs[0].RequestID, Changes: changes(9, 10)}))
	assert.Equal(t, uint64(10), store.Seq())
	reqs = resyncs(t, rec.take())
	require.Len(t, reqs, 1, "the feed went on to 12 meanwhile")
	assert.Equal(t, uint64(10), reqs[0].After)
	e.handle(rec, reply(protocol.Reply{Kind: protocol.ReplyChanges, RequestID: reqs[0].RequestID, Changes: changes(11, 12)}))
	assert.Equal(t, uint64(12), store.Seq())
	assert.Empty(t, rec.take())
	assert.False(t, e.syncedAt.IsZero(), "a completed resync is a sync")
	assert.Len(t, store.synced, 1, "MarkSynced once")
	assert.Zero(t, e.State().Counters.Dropped)
}

// The first resync answered on a connection sends the status at the next
// tick, not StatusEvery later, when the cache moved since the status sent
// as the edge connected: whether the reply's changes moved it or the
// feed's batches did before an empty reply (as when the cloud connects
// after the edge and publishes the site's feed). A later resync, or a
// first one that found the cache as its status said, sends none.
func TestEdge_StatusAtTheNextTickOnceCaughtUp(t *testing.T) {
	statuses := func(e *Edge, rec *recorder) int {
		n := 0
		for _, m := range rec.take() {
			if m.topic == e.cfg.Site.Status(e.cfg.EdgeID) {
				n++
			}
		}
		return n
	}
	// connect does what a session does first: the status, then a resync.
	connect := func(t *testing.T, e *Edge, rec *recorder) protocol.ResyncRequest {
		e.caughtUp = false
		e.publishStatus(rec)
		e.requestResync(rec)
		reqs := resyncs(t, rec.take())
		require.Len(t, reqs, 1)
		return reqs[0]
	}
	reply := func(t *testing.T, e *Edge, req protocol.ResyncRequest, cs []protocol.Change) message {
		r := protocol.Reply{Kind: protocol.ReplyChanges, RequestID: req.RequestID, Changes: cs}
		return message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &r)}
	}
	feed := func(t *testing.T, e *Edge, cs []protocol.Change) message {
		return message{e.cfg.Site.Changes(), encode(t, &protocol.Batch{Changes: cs})}
	}

	t.Run("the reply's changes", func(t *testing.T) {
		e, store, rec := newTestEdge(t)
		req := connect(t, e, rec)
		e.onTick(rec)
		require.Zero(t, statuses(e, rec), "not caught up yet: the status waits")
		e.handle(rec, reply(t, e, req, changes(1, 3)))
		require.Equal(t, uint64(3), store.Seq())
		e.onTick(rec)
		require.Equal(t, 1, statuses(e, rec), "caught up, and the cache moved: the next tick says so")
	})
	t.Run("the feed's batches, then an empty reply", func(t *testing.T) {
		e, store, rec := newTestEdge(t)
		req := connect(t, e, rec)
		e.handle(rec, feed(t, e, changes(1, 3)))
		require.Equal(t, uint64(3), store.Seq())
		e.onTick(rec)
		require.Zero(t, statuses(e, rec), "the resync is not answered yet")
		e.handle(rec, reply(t, e, req, nil))
		require.Nil(t, e.rs, "answered")
		e.onTick(rec)
		require.Equal(t, 1, statuses(e, rec), "caught up, and the cache moved: the next tick says so")

		req = func() protocol.ResyncRequest {
			e.requestResync(rec)
			return resyncs(t, rec.take())[0]
		}()
		e.handle(rec, reply(t, e, req, changes(4, 5)))
		require.Equal(t, uint64(5), store.Seq())
		e.onTick(rec)
		require.Zero(t, statuses(e, rec), "a later resync leaves the status to StatusEvery")

		req = connect(t, e, rec) // a new connection
		e.handle(rec, reply(t, e, req, nil))
		e.onTick(rec)
		require.Zero(t, statuses(e, rec), "the cache is as the connection's status said")
	})
}

func TestEdge_Snapshot(t *testing.T) {
	e, store, rec := newTestEdge(t)
	e.requestResync(rec)
	req := resyncs(t, rec.take())[0]
	assert.Equal(t, uint64(0), req.After)
	part := func(p, n int, seq uint64) message {
		v := newVisit("V")
		r := protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: req.RequestID,
			Snapshot: &protocol.Snapshot{Seq: seq, Part: p, Parts: n, Gates: []protocol.Gate{}, Keys: []protocol.Key{}, Visits: []protocol.Visit{v}}}
		return message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &r)}
	}
	e.handle(rec, part(3, 3, 40))
	e.handle(rec, message{e.cfg.Site.Changes(), encode(t, &protocol.Batch{Changes: changes(1, 2)})})
	assert.Empty(t, store.appliedSeqs(), "feed batches wait while a snapshot arrives")
	e.handle(rec, part(1, 3, 40))
	e.handle(rec, part(2, 4, 40)) // not of this snapshot
	e.handle(rec, part(2, 3, 41)) // nor this
	assert.Empty(t, store.snapshotParts())
	e.handle(rec, part(2, 3, 40))
	require.Len(t, store.snapshotParts(), 1, "replaced once all parts are there")
	assert.Len(t, store.snapshotParts()[0], 3)
	assert.Equal(t, uint64(40), store.Seq())
	assert.Equal(t, 3, store.visitCount())
	assert.Empty(t, resyncs(t, rec.take()), "the feed seen (1..2) is behind the snapshot")
	assert.False(t, e.State().Resyncing)
}

// TestEdge_DefaultWindow: with no Window set, an outbox longer than
// DefaultWindow has that many facts published before the first
// acknowledgement comes back, and no more.
func TestEdge_DefaultWindow(t *testing.T) {
	e, store, rec := newTestEdge(t)
	store.record(DefaultWindow + 10)
	e.flush(rec)
	require.Len(t, rec.take(), DefaultWindow)
	e.flush(rec)
	assert.Empty(t, rec.take(), "the window is full")
}

func TestEdge_Facts(t *testing.T) {
	e, store, rec := newTestEdge(t)
	e.cfg.Window = 3
	ids := store.record(5)
	e.flush(rec)
	pubs := rec.take()
	require.Len(t, pubs, 3, "at most Window in flight")
	for i, m := range pubs {
		var f protocol.Fact
		require.NoError(t, protocol.Decode(m.payload, &f))
		assert.Equal(t, ids[i], f.ID, "in counter order")
		assert.Equal(t, e.cfg.Site.Facts(e.cfg.EdgeID), m.topic)
	}
	e.flush(rec)
	assert.Empty(t, rec.take(), "the window is full")

	ack := func(ids ...string) message {
		return message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &protocol.Reply{Kind: protocol.ReplyAck, Acks: ids})}
	}
	require.True(t, e.handle(rec, ack(ids[0], ids[1])))
	assert.Equal(t, 3, store.outboxLen(), "removed on the ack only")
	e.flush(rec)
	assert.Len(t, rec.take(), 2, "room for two more")

	// Unacknowledged past AckTimeout: published again.
	now := time.Now()
	e.cfg.Now = func() time.Time { return now.Add(e.cfg.AckTimeout) }
	e.onTick(rec)
	var again []string
	for _, m := range rec.take() {
		var f protocol.Fact
		if protocol.Decode(m.payload, &f) == nil {
			again = append(again, f.ID)
		}
	}
	assert.Equal(t, ids[2:], again)
}

func TestEdge_DropsMalformedAndForeign(t *testing.T) {
	e, store, rec := newTestEdge(t)
	store.record(1)
	other := newSite()
	batch := encode(t, &protocol.Batch{Changes: changes(1, 1)})
	ack := encode(t, &protocol.Reply{Kind: protocol.ReplyAck, Acks: []string{ids.New(ids.Fact)}})
	site, id := e.cfg.Site, e.cfg.EdgeID
	for _, tt := range []struct {
		name, topic string
		payload     []byte
	}{
		{"not JSON", site.Changes(), []byte("{")},
		{"empty", site.Changes(), nil},
		{"another version", site.Changes(), []byte(`{"v":2,"changes":[]}`)},
		{"trailing data", site.Changes(), append(append([]byte{}, batch...), batch...)},
		{"too large", site.Changes(), make([]byte, protocol.MaxMessage+1)},
		{"a reply on the feed", site.Changes(), ack},
		{"a batch as a reply", site.Replies(id), batch},
		{"another site's feed", other.Changes(), batch},
		{"another edge's replies", site.Replies(ids.New(ids.Edge)), ack},
		{"the facts topic", site.Facts(id), batch},
		{"a status topic", site.Status(id), batch},
		{"not a protocol topic", "elsewhere", batch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := e.State().Counters.Dropped
			e.handle(rec, message{tt.topic, tt.payload})
			assert.Equal(t, before+1, e.State().Counters.Dropped)
		})
	}
	assert.Zero(t, store.Seq())
	assert.Empty(t, store.appliedSeqs())
	assert.Empty(t, store.acked)
	assert.Empty(t, rec.take(), "nothing published in answer")
}

func TestEdgeConfig_Validate(t *testing.T) {
	ok := EdgeConfig{BrokerURL: "tcp://127.0.0.1:1883", Site: newSite(), EdgeID: ids.New(ids.Edge), Store: newFakeEdge("")}
	require.NoError(t, ok.Validate())
	for _, tt := range []struct {
		name string
		mod  func(*EdgeConfig)
		want string
	}{
		{"no broker", func(c *EdgeConfig) { c.BrokerURL = "" }, "BrokerURL"},
		{"http broker", func(c *EdgeConfig) { c.BrokerURL = "http://x" }, "BrokerURL"},
		{"bad site", func(c *EdgeConfig) { c.Site.Mode = "prod" }, "Site"},
		{"bad edge", func(c *EdgeConfig) { c.EdgeID = "gate_x" }, "EdgeID"},
		{"no store", func(c *EdgeConfig) { c.Store = nil }, "Store"},
		{"negative window", func(c *EdgeConfig) { c.Window = -1 }, "Window"},
		{"negative timeout", func(c *EdgeConfig) { c.AckTimeout = -time.Second }, "AckTimeout"},
		{"long software", func(c *EdgeConfig) { c.Software = string(make([]byte, 65)) }, "Software"},
		{"short badge key", func(c *EdgeConfig) { c.BadgeKey = make([]byte, 31) }, "BadgeKey"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tt.want)
			_, err = NewEdge(c)
			require.ErrorIs(t, err, ErrConfig)
		})
	}
}

// TestEdge_RunStopsWithoutBroker checks Run keeps retrying an unreachable
// broker and returns once its context ends.
func TestEdge_RunStopsWithoutBroker(t *testing.T) {
	e, _, _ := newTestEdge(t)
	e.cfg.MinBackoff, e.cfg.MaxBackoff = time.Millisecond, 5*time.Millisecond
	stop := run(t, e.Run)
	waitFor(t, 5*time.Second, "a few attempts", func() bool { return e.State().Counters.ConnectErrors >= 3 })
	assert.False(t, e.State().Connected)
	stop()
	require.Error(t, e.Run(t.Context()), "Run twice")
}

// TestEdge_SnapshotBehindTheCacheIsDropped: batches that follow on are
// applied while a requested snapshot is on its way; a snapshot older than
// what they brought would take them back out (a badge key certified a
// moment ago, gone until the next resync), so it is dropped and the rest
// asked for. A snapshot behind the request itself (the cloud's feed gone
// back) still replaces the cache.
func TestEdge_SnapshotBehindTheCacheIsDropped(t *testing.T) {
	e, store, rec := newTestEdge(t)
	feed := func(from, to uint64) message {
		return message{e.cfg.Site.Changes(), encode(t, &protocol.Batch{Changes: changes(from, to)})}
	}
	snapshot := func(id string, seq uint64) message {
		r := protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: id,
			Snapshot: &protocol.Snapshot{Seq: seq, Part: 1, Parts: 1, Gates: []protocol.Gate{}, Keys: []protocol.Key{}, Visits: []protocol.Visit{}}}
		return message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &r)}
	}
	e.handle(rec, feed(1, 5))
	e.handle(rec, feed(9, 10)) // a gap: a resync after 5
	reqs := resyncs(t, rec.take())
	require.Len(t, reqs, 1)
	require.Equal(t, uint64(5), reqs[0].After)
	e.handle(rec, feed(6, 8)) // follows on: applied while the snapshot is made
	require.Equal(t, uint64(8), store.Seq())

	e.handle(rec, snapshot(reqs[0].RequestID, 7))
	assert.Empty(t, store.snapshotParts(), "a snapshot behind the cache is not applied")
	assert.Equal(t, uint64(8), store.Seq())
	reqs = resyncs(t, rec.take())
	require.Len(t, reqs, 1, "the feed went on to 10: the rest is asked for")
	assert.Equal(t, uint64(8), reqs[0].After)

	e.handle(rec, snapshot(reqs[0].RequestID, 3)) // behind the request: the cloud's feed went back
	require.Len(t, store.snapshotParts(), 1)
	assert.Equal(t, uint64(3), store.Seq())
}

// Messages that reached the edge together are written together: the
// acknowledgements of all the replies among them in one Ack, and feed
// batches that follow on from one another in one Apply; a batch that does
// not follow on is applied on its own, in order.
func TestEdge_HandleAllWritesTogether(t *testing.T) {
	e, store, rec := newTestEdge(t)
	ids := store.record(6)
	e.flush(rec)
	rec.take()
	feed := func(from, to uint64) message {
		return message{e.cfg.Site.Changes(), encode(t, &protocol.Batch{Changes: changes(from, to)})}
	}
	ack := func(ids ...string) message {
		return message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &protocol.Reply{Kind: protocol.ReplyAck, Acks: ids})}
	}

	acked := e.handleAll(rec, []message{
		feed(1, 2), ack(ids[0], ids[1]), feed(3, 5), ack(ids[2]), feed(6, 6), ack(ids[3], ids[4]),
		feed(4, 7), // overlaps what came before: applied on its own, the applied part skipped
	})
	require.True(t, acked)
	assert.Equal(t, 1, store.acks, "one Ack for three replies")
	assert.Equal(t, []string{ids[0], ids[1], ids[2], ids[3], ids[4]}, store.acked)
	assert.Equal(t, 1, store.outboxLen())
	assert.Equal(t, 2, store.applies, "1..6 as one run, then 4..7")
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7}, store.appliedSeqs())
	assert.Empty(t, resyncs(t, rec.take()))
	assert.Len(t, e.inflight, 1, "the acknowledged facts left the window")
}

// flush reads the outbox on from the last fact it published, not again
// from the oldest (each read decodes every fact): an acknowledgement of k
// facts costs k facts read. A fact that leaves the window unacknowledged
// makes the next flush read from the oldest again.
func TestEdge_FlushReadsPastInFlight(t *testing.T) {
	e, store, rec := newTestEdge(t)
	e.cfg.Window = 100
	ids := store.record(300)
	e.flush(rec)
	require.Len(t, rec.take(), 100)
	require.Equal(t, 100, store.read)

	ack := message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &protocol.Reply{Kind: protocol.ReplyAck, Acks: ids[:10]})}
	require.True(t, e.handle(rec, ack))
	e.flush(rec)
	assert.Len(t, rec.take(), 10)
	assert.Equal(t, 110, store.read, "ten facts read for ten acknowledged")

	now := time.Now()
	e.cfg.Now = func() time.Time { return now.Add(e.cfg.AckTimeout) }
	e.onTick(rec) // all 100 in flight time out, and are published again
	var again []string
	for _, m := range rec.take() {
		var f protocol.Fact
		if protocol.Decode(m.payload, &f) == nil {
			again = append(again, f.ID)
		}
	}
	assert.Equal(t, ids[10:110], again, "from the oldest")
}

// An acknowledgement's room in the window goes to the next facts before
// the Ack is written, so the cloud works on them meanwhile; when the Ack
// fails, the acknowledged facts are published again from the oldest.
func TestEdge_AckPublishesNextFirst(t *testing.T) {
	e, store, rec := newTestEdge(t)
	e.cfg.Window = 3
	ids := store.record(6)
	e.flush(rec)
	rec.take()
	ack := func(ids ...string) message {
		return message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &protocol.Reply{Kind: protocol.ReplyAck, Acks: ids})}
	}
	factIDs := func(msgs []message) []string {
		var out []string
		for _, m := range msgs {
			var f protocol.Fact
			if protocol.Decode(m.payload, &f) == nil {
				out = append(out, f.ID)
			}
		}
		return out
	}
	var before []string
	store.onAck = func([]string) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		before = factIDs(rec.pubs)
	}
	require.True(t, e.handle(rec, ack(ids[0], ids[1])))
	assert.Equal(t, ids[3:5], before, "published before the Ack was written")
	assert.Equal(t, ids[3:5], factIDs(rec.take()))
	assert.Equal(t, 4, store.outboxLen())

	store.ackErr = errors.New("disk full")
	require.False(t, e.handle(rec, ack(ids[2])))
	assert.Equal(t, ids[5:6], factIDs(rec.take()), "the next fact went out")
	store.ackErr = nil
	require.True(t, e.handle(rec, ack(ids[3])))
	e.flush(rec)
	assert.Equal(t, ids[2:3], factIDs(rec.take()), "the fact whose Ack failed is published again, in the room made")
	assert.Equal(t, 3, store.outboxLen(), "ids[2], ids[4] and ids[5] wait")

	// Reading from the oldest (after a failed Ack, here, or a fact timed
	// out), the acknowledged facts are written first, so they are not
	// published again.
	store.ackErr = errors.New("disk full")
	require.False(t, e.handle(rec, ack(ids[4])))
	store.ackErr = nil
	rec.take()
	require.True(t, e.handle(rec, ack(ids[2], ids[4], ids[5])))
	e.flush(rec)
	assert.Empty(t, factIDs(rec.take()), "nothing acknowledged goes out again")
	assert.Zero(t, store.outboxLen())
}

// An acknowledgement carrying the feed's Seq waits until the cache has
// applied the feed up to it: removing a fact from the outbox makes the
// cache take the cloud's latest version of the visit it names, and before
// the change the fact made has arrived, that version is an earlier one (a
// check-out acknowledged first put the visitor back inside). Facts go out
// asking for such acknowledgements; one without Seq, from a cloud that
// sends none, is taken at once.
func TestEdge_HoldsAnAckUntilTheFeedReachesItsSeq(t *testing.T) {
	e, store, rec := newTestEdge(t)
	ids := store.record(4)
	e.flush(rec)
	for _, m := range rec.take() {
		var f protocol.Fact
		require.NoError(t, protocol.Decode(m.payload, &f))
		assert.True(t, f.AckSeq, "a published fact asks for the feed's Seq in its acknowledgement")
	}
	feed := func(from, to uint64) message {
		return message{e.cfg.Site.Changes(), encode(t, &protocol.Batch{Changes: changes(from, to)})}
	}
	ack := func(seq uint64, ids ...string) message {
		return message{e.cfg.Site.Replies(e.cfg.EdgeID), encode(t, &protocol.Reply{Kind: protocol.ReplyAck, Acks: ids, Seq: seq})}
	}

	require.False(t, e.handle(rec, ack(5, ids[0])))
	assert.Zero(t, store.acks, "held: the feed is at 0")
	require.False(t, e.handle(rec, feed(1, 3)))
	assert.Zero(t, store.acks, "held: the feed is at 3")
	assert.Equal(t, 4, store.outboxLen())
	require.True(t, e.handle(rec, feed(4, 5)))
	assert.Equal(t, []string{ids[0]}, store.acked, "released once the feed reached 5")

	// Together with the batch that reaches its Seq, whatever the order
	// they came in: the batch is applied first.
	require.True(t, e.handleAll(rec, []message{ack(7, ids[1]), ack(6, ids[2]), feed(6, 7)}))
	assert.Equal(t, []string{ids[0], ids[1], ids[2]}, store.acked)
	assert.Equal(t, 2, store.acks, "the two in one Ack")

	require.True(t, e.handle(rec, ack(0, ids[3])), "no Seq: taken at once")
	assert.Zero(t, store.outboxLen())
	assert.Empty(t, e.held)
}

// TestEdge_NoResyncStormAfterTheFeedWentBack: after the cloud's feed goes
// back (a restored database: its snapshot is behind the edge's request and
// replaces the cache), an answer of "nothing after Seq" ends the resync.
// The edge kept the old feed's highest sequence and asked again at once
// after every answer, until the restored feed passed the old head.
func TestEdge_NoResyncStormAfterTheFeedWentBack(t *testing.T) {
	e, store, rec := newTestEdge(t)
	site, id := e.cfg.Site, e.cfg.EdgeID
	e.handle(rec, message{site.Changes(), encode(t, &protocol.Batch{Changes: changes(1, 10)})})
	require.Equal(t, uint64(10), store.Seq())
	rec.take()

	e.requestResync(rec)
	reqs := resyncs(t, rec.take())
	require.Len(t, reqs, 1)
	snap := protocol.Snapshot{Part: 1, Parts: 1, Seq: 5}
	e.handle(rec, message{site.Replies(id), encode(t, &protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: reqs[0].RequestID, Snapshot: &snap})})
	require.Equal(t, uint64(5), store.Seq(), "the restored feed's snapshot replaced the cache")
	require.Empty(t, resyncs(t, rec.take()), "nothing was seen past the snapshot: no request follows it")

	// Asked again later (ResyncEvery), the cloud answers "nothing after 5".
	e.requestResync(rec)
	reqs = resyncs(t, rec.take())
	require.Len(t, reqs, 1)
	e.handle(rec, message{site.Replies(id), encode(t, &protocol.Reply{Kind: protocol.ReplyChanges, RequestID: reqs[0].RequestID})})
	require.Empty(t, resyncs(t, rec.take()), "caught up: no request until the next poll")
}

// TestEdge_FeedWentOnDuringResyncAsksAgain: a batch past the cache that
// arrives while a resync runs is asked for once the resync is answered.
func TestEdge_FeedWentOnDuringResyncAsksAgain(t *testing.T) {
	e, store, rec := newTestEdge(t)
	site, id := e.cfg.Site, e.cfg.EdgeID
	e.handle(rec, message{site.Changes(), encode(t, &protocol.Batch{Changes: changes(1, 3)})})
	rec.take()
	e.requestResync(rec)
	reqs := resyncs(t, rec.take())
	require.Len(t, reqs, 1)
	e.handle(rec, message{site.Changes(), encode(t, &protocol.Batch{Changes: changes(6, 7)})}) // a gap after 3
	e.handle(rec, message{site.Replies(id), encode(t, &protocol.Reply{Kind: protocol.ReplyChanges, RequestID: reqs[0].RequestID,
		Changes: changes(4, 5)})}) // the cloud's feed when it answered
	require.Equal(t, uint64(5), store.Seq())
	again := resyncs(t, rec.take())
	require.Len(t, again, 1, "6..7 arrived during the resync: asked for")
	require.Equal(t, uint64(5), again[0].After)
}

// TestEdge_ParksOnlyWhatAWorkingCloudLeavesUnacknowledged: facts that time
// out while the cloud says nothing (its database down) go out again every
// AckTimeout and are never parked, so they are not held back once it
// recovers. Facts that time out while the cloud answers other messages are
// counted, parked after parkAfter times, and the fact after them goes out.
func TestEdge_ParksOnlyWhatAWorkingCloudLeavesUnacknowledged(t *testing.T) {
	e, store, rec := newTestEdge(t)
	e.cfg.Window = 2
	ids := store.record(3)
	start := time.Now()
	at := func(d time.Duration) { e.cfg.Now = func() time.Time { return start.Add(d) } }
	published := func() (out []string) {
		for _, m := range rec.take() {
			if m.topic == e.cfg.Site.Facts(e.cfg.EdgeID) {
				var f protocol.Fact
				require.NoError(t, protocol.Decode(m.payload, &f))
				out = append(out, f.ID)
			}
		}
		return out
	}
	at(0)
	e.flush(rec)
	require.Equal(t, ids[:2], published())

	tick := e.cfg.AckTimeout
	for k := 1; k <= parkAfter+1; k++ { // the cloud silent
		at(time.Duration(k) * tick)
		e.onTick(rec)
		require.ElementsMatch(t, ids[:2], published(), "round %d: published again", k)
	}
	require.Empty(t, e.parked, "nothing parked while the cloud said nothing")

	seq := uint64(1)
	base := time.Duration(parkAfter+1) * tick
	for k := 1; k <= parkAfter; k++ { // the cloud answers, but not for these two
		at(base + time.Duration(k)*tick - tick/2)
		e.handle(rec, message{e.cfg.Site.Changes(), encode(t, &protocol.Batch{Changes: changes(seq, seq)})})
		seq++
		at(base + time.Duration(k)*tick)
		e.onTick(rec)
		got := published()
		if k < parkAfter {
			require.ElementsMatch(t, ids[:2], got, "round %d", k)
			continue
		}
		require.Equal(t, []string{ids[2]}, got, "parked, the two leave the window to the fact after them")
	}
	require.Len(t, e.parked, 2)
	require.Equal(t, 3, store.outboxLen(), "parked facts stay in the outbox")
}
