package mqttsync

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/svc-vms/svc/shared/ratelog"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/sync/protocol"
)

func newTestCloud(t testing.TB, store CloudStore) (*Cloud, *recorder) {
	t.Helper()
	c, err := NewCloud(CloudConfig{BrokerURL: "tcp://127.0.0.1:1", ClientID: "svc-cloud-test", Store: store, Logger: testLogger(t), SnapshotAfter: 1000})
	require.NoError(t, err)
	rec := &recorder{}
	c.setClient(rec)
	return c, rec
}

// replies decodes the replies among msgs.
func replies(t *testing.T, msgs []message) []protocol.Reply {
	t.Helper()
	var out []protocol.Reply
	for _, m := range msgs {
		var r protocol.Reply
		require.NoError(t, protocol.Decode(m.payload, &r), "a reply on %s", m.topic)
		out = append(out, r)
	}
	return out
}

// A resync from an edge that is not one of the site's (another site's,
// unknown, revoked) is not answered: the broker's rules are not the only
// check on who reads a site's feed.
func TestCloud_ResyncFromAStrangerNotAnswered(t *testing.T) {
	store := newFakeCloud()
	site, other := newSite(), newSite()
	mine, theirs := ids.New(ids.Edge), ids.New(ids.Edge)
	store.addEdge(site, mine)
	store.addEdge(other, theirs)
	store.addVisits(site, 5)
	c, rec := newTestCloud(t, store)
	req := encode(t, &protocol.ResyncRequest{RequestID: "r1", After: 0})
	for _, edge := range []string{theirs, ids.New(ids.Edge)} {
		c.answerResync(context.Background(), message{site.Resync(edge), req})
		require.Empty(t, rec.take(), "edge %s", edge)
	}
	require.Equal(t, uint64(2), c.State().Dropped)
	c.answerResync(context.Background(), message{site.Resync(mine), req})
	require.NotEmpty(t, rec.take(), "the site's own edge is answered")
}

func TestCloud_AnswerResync(t *testing.T) {
	for _, tt := range []struct {
		name     string
		head     int
		pruned   uint64
		after    uint64
		snapshot bool
		from, to uint64 // changes sent
		more     bool
	}{
		{"a new edge", 10, 0, 0, true, 0, 0, false},
		{"a new edge of an empty site", 0, 0, 0, true, 0, 0, false},
		{"up to date", 10, 0, 10, false, 0, 0, false},
		{"a few behind", 10, 0, 7, false, 8, 10, false},
		{"more than a reply holds", 700, 0, 100, false, 101, 100 + protocol.MaxChanges, true},
		{"far behind", 1200, 0, 100, true, 0, 0, false},
		{"ahead of the feed", 10, 0, 20, true, 0, 0, false},
		{"behind what is kept", 50, 30, 20, true, 0, 0, false},
		{"just within what is kept", 50, 30, 30, false, 31, 50, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeCloud()
			site, edge := newSite(), ids.New(ids.Edge)
			store.addEdge(site, edge)
			store.addVisits(site, tt.head)
			store.prune(site, tt.pruned)
			c, rec := newTestCloud(t, store)
			req := encode(t, &protocol.ResyncRequest{RequestID: "r1", After: tt.after})
			c.answerResync(context.Background(), message{site.Resync(edge), req})

			msgs := rec.take()
			require.NotEmpty(t, msgs)
			for _, m := range msgs {
				assert.Equal(t, site.Replies(edge), m.topic)
			}
			rs := replies(t, msgs)
			if tt.snapshot {
				visits := 0
				for i, r := range rs {
					require.Equal(t, protocol.ReplySnapshot, r.Kind)
					assert.Equal(t, "r1", r.RequestID)
					assert.Equal(t, i+1, r.Snapshot.Part)
					assert.Equal(t, len(rs), r.Snapshot.Parts)
					assert.Equal(t, uint64(tt.head), r.Snapshot.Seq)
					visits += len(r.Snapshot.Visits)
				}
				assert.Equal(t, tt.head, visits)
				return
			}
			require.Len(t, rs, 1)
			r := rs[0]
			assert.Equal(t, protocol.ReplyChanges, r.Kind)
			assert.Equal(t, "r1", r.RequestID)
			assert.Equal(t, tt.more, r.More)
			if tt.from == 0 {
				assert.Empty(t, r.Changes)
				return
			}
			require.NotEmpty(t, r.Changes)
			assert.Equal(t, tt.from, r.Changes[0].Seq)
			assert.Equal(t, tt.to, r.Changes[len(r.Changes)-1].Seq)
		})
	}
}

func TestCloud_AcksInBatches(t *testing.T) {
	store := newFakeCloud()
	site := newSite()
	edges := []string{ids.New(ids.Edge), ids.New(ids.Edge)}
	for _, e := range edges {
		store.addEdge(site, e)
	}
	c, rec := newTestCloud(t, store)
	c.cfg.AckEvery = time.Hour // only a full batch goes out

	var want []string
	for _, e := range edges {
		fe := newFakeEdge(e)
		fe.record(protocol.MaxAcks + 10)
		facts, _ := fe.Outbox(0)
		for i := range facts {
			c.facts.push(message{site.Facts(e), encode(t, &facts[i])})
			if e == edges[0] && i < protocol.MaxAcks {
				want = append(want, facts[i].ID)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.factsWorker(ctx); close(done) }()
	waitFor(t, 10*time.Second, "two full acknowledgements", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.pubs) == 2
	})
	cancel()
	<-done
	msgs := rec.take()
	rs := replies(t, msgs)
	assert.Equal(t, site.Replies(edges[0]), msgs[0].topic)
	assert.Equal(t, site.Replies(edges[1]), msgs[1].topic)
	assert.Equal(t, want, rs[0].Acks, "MaxAcks facts of the first edge, in order")
	assert.Len(t, rs[1].Acks, protocol.MaxAcks)
	assert.Equal(t, 2*(protocol.MaxAcks+10), store.appliedCount())
}

func TestCloud_AcksAfterAckEvery(t *testing.T) {
	store := newFakeCloud()
	site, edge, stranger := newSite(), ids.New(ids.Edge), ids.New(ids.Edge)
	store.addEdge(site, edge)
	c, rec := newTestCloud(t, store)
	fe, fs := newFakeEdge(edge), newFakeEdge(stranger)
	fe.record(3)
	fs.record(1)
	facts, _ := fe.Outbox(0)
	strange, _ := fs.Outbox(0)
	for _, f := range append(facts, strange...) {
		c.facts.push(message{site.Facts(f.EdgeID), encode(t, &f)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.factsWorker(ctx); close(done) }()
	waitFor(t, 10*time.Second, "the acknowledgement", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.pubs) == 1
	})
	cancel()
	<-done
	rs := replies(t, rec.take())
	assert.Equal(t, []string{facts[0].ID, facts[1].ID, facts[2].ID}, rs[0].Acks, "the unknown edge's fact is not acknowledged")
	assert.Equal(t, uint64(1), c.State().FactsRejected)
}

func TestCloud_Status(t *testing.T) {
	store := newFakeCloud()
	site, edge := newSite(), ids.New(ids.Edge)
	c, _ := newTestCloud(t, store)
	st := protocol.Status{EdgeID: edge, State: "offline", At: t0, Seq: 4, Outbox: 2}
	c.recordStatus(context.Background(), message{site.Status(edge), encode(t, &st)})
	c.recordStatus(context.Background(), message{site.Status(edge), nil}) // a retained status cleared
	c.recordStatus(context.Background(), message{site.Status(ids.New(ids.Edge)), encode(t, &st)})
	got, ok := store.lastStatus(edge)
	require.True(t, ok)
	st.V = protocol.Version
	assert.Equal(t, st, got)
	assert.Len(t, store.statuses, 1)
	assert.Equal(t, uint64(1), c.State().Dropped, "a status naming another edge than its topic")
}

func TestCloud_RouteDropsForeign(t *testing.T) {
	c, _ := newTestCloud(t, newFakeCloud())
	site := newSite()
	c.route(message{"elsewhere/x", []byte("{}")})
	c.route(message{site.Changes(), []byte("{}")})
	c.route(message{site.Replies(ids.New(ids.Edge)), []byte("{}")})
	assert.Equal(t, uint64(3), c.State().Dropped)
	c.route(message{site.Facts(ids.New(ids.Edge)), []byte("{}")})
	c.route(message{site.Resync(ids.New(ids.Edge)), []byte("{}")})
	c.route(message{site.Status(ids.New(ids.Edge)), []byte("{}")})
	assert.Len(t, c.facts.take(0), 1)
	assert.Len(t, c.resync.take(0), 1)
	assert.Len(t, c.status.take(0), 1)
}

func TestCloud_PublishFeedFailsWhenDisconnected(t *testing.T) {
	store := newFakeCloud()
	site := newSite()
	store.addVisits(site, 5)
	c, _ := newTestCloud(t, store)
	c.setClient(nil)
	n, err := store.PublishFeeds(context.Background(), 100, c.publishFeed)
	require.ErrorIs(t, err, errNotConnected)
	assert.Zero(t, n)
	assert.Equal(t, 5, store.unpublished(site), "the cursor stays")
}

func TestCloudConfig_Validate(t *testing.T) {
	ok := CloudConfig{BrokerURL: "tcp://127.0.0.1:1883", ClientID: "svc-cloud-1", Store: newFakeCloud()}
	require.NoError(t, ok.Validate())
	for _, tt := range []struct {
		name string
		mod  func(*CloudConfig)
		want string
	}{
		{"no broker", func(c *CloudConfig) { c.BrokerURL = "127.0.0.1:1883" }, "BrokerURL"},
		{"no client ID", func(c *CloudConfig) { c.ClientID = "" }, "ClientID"},
		{"no store", func(c *CloudConfig) { c.Store = nil }, "Store"},
		{"a filter not shared", func(c *CloudConfig) { c.Filters = []string{"svc/v1/#"} }, "Filters"},
		{"negative poll", func(c *CloudConfig) { c.PollEvery = -1 }, "PollEvery"},
		{"too many workers", func(c *CloudConfig) { c.ResyncWorkers = 1000 }, "ResyncWorkers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tt.want)
			_, err = NewCloud(c)
			require.ErrorIs(t, err, ErrConfig)
		})
	}
}

// A fact whose edge is not the one its topic names is dropped before the
// store sees it: the broker keeps an edge to its own facts topic, so such a
// fact is forged or misrouted, and applying it would credit another edge.
func TestCloud_FactOnAnotherEdgesTopicIsDropped(t *testing.T) {
	store := newFakeCloud()
	site, edge, other := newSite(), ids.New(ids.Edge), ids.New(ids.Edge)
	store.addEdge(site, edge)
	store.addEdge(site, other)
	c, _ := newTestCloud(t, store)
	fe := newFakeEdge(edge)
	fe.record(1)
	facts, _ := fe.Outbox(0)

	var acked []string
	ack := func(_ ackKey, id string, _ uint64) { acked = append(acked, id) }
	c.applyFacts(context.Background(), []message{{site.Facts(other), encode(t, &facts[0])}}, ack)
	assert.Empty(t, acked, "not applied")
	assert.Zero(t, store.callCount(), "the store never saw it")
	assert.Equal(t, uint64(1), c.State().Dropped)

	c.applyFacts(context.Background(), []message{{site.Facts(edge), encode(t, &facts[0])}}, ack)
	assert.Equal(t, []string{facts[0].ID}, acked, "the same fact on its own edge's topic is applied")
}

// factMsgs are the messages of facts of an edge of site.
func factMsgs(t *testing.T, site protocol.Site, facts ...protocol.Fact) []message {
	t.Helper()
	out := make([]message, len(facts))
	for i := range facts {
		out[i] = message{site.Facts(facts[i].EdgeID), encode(t, &facts[i])}
	}
	return out
}

// edgeFacts records n facts of a new edge that store knows at site.
func edgeFacts(store *fakeCloud, site protocol.Site, n int) []protocol.Fact {
	edge := ids.New(ids.Edge)
	store.addEdge(site, edge)
	fe := newFakeEdge(edge)
	fe.record(n)
	facts, _ := fe.Outbox(0)
	return facts
}

type acked struct {
	mu  sync.Mutex
	ids map[ackKey][]string
}

func (a *acked) ack(k ackKey, id string, _ uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ids == nil {
		a.ids = map[ackKey][]string{}
	}
	a.ids[k] = append(a.ids[k], id)
}

func factIDs(facts ...protocol.Fact) []string {
	out := make([]string, len(facts))
	for i, f := range facts {
		out[i] = f.ID
	}
	return out
}

// The facts taken together are applied in one ApplyFacts call per site,
// each site's in arrival order; a rejected fact is not acknowledged and
// does not keep the others of its batch from being so.
func TestCloud_FactsBatchedPerSite(t *testing.T) {
	store := newFakeCloud()
	a, b := newSite(), newSite()
	fa, fb := edgeFacts(store, a, 3), edgeFacts(store, b, 2)
	stranger := fa[2]
	stranger.EdgeID = ids.New(ids.Edge) // not an edge store knows
	c, _ := newTestCloud(t, store)
	msgs := append(factMsgs(t, a, fa[0]), factMsgs(t, b, fb[0])...)
	msgs = append(msgs, factMsgs(t, a, fa[1], stranger)...)
	msgs = append(msgs, factMsgs(t, b, fb[1])...)
	msgs = append(msgs, factMsgs(t, a, fa[0])...)
	msgs = append(msgs, message{a.Facts(ids.New(ids.Edge)), []byte(`{"v":1}`)})
	var got acked
	c.applyFacts(context.Background(), msgs, got.ack)

	assert.Equal(t, []int{4, 2}, store.batchSizes(), "one call per site")
	assert.Equal(t, map[ackKey][]string{
		{a, fa[0].EdgeID}: factIDs(fa[0], fa[1], fa[0]),
		{b, fb[0].EdgeID}: factIDs(fb...),
	}, got.ids)
	st := c.State()
	assert.Equal(t, uint64(5), st.FactsApplied)
	assert.Equal(t, uint64(1), st.FactsRejected)
	assert.Equal(t, uint64(1), st.Dropped)
	assert.Equal(t, uint64(2), st.FactBatches)
}

// A batch that fails as a whole is tried again fact by fact: one fact
// that fails does not keep the others from being applied and
// acknowledged.
func TestCloud_FailedBatchTriedFactByFact(t *testing.T) {
	store := newFakeCloud()
	site := newSite()
	facts := edgeFacts(store, site, 3)
	store.failNext = 2 // the batch, and the first fact alone
	c, _ := newTestCloud(t, store)
	var got acked
	c.applyFacts(context.Background(), factMsgs(t, site, facts...), got.ack)

	assert.Equal(t, []int{3, 1, 1, 1}, store.batchSizes())
	assert.Equal(t, map[ackKey][]string{{site, facts[0].EdgeID}: factIDs(facts[1:]...)}, got.ids)
	assert.False(t, store.isApplied(facts[0].ID))
	st := c.State()
	assert.Equal(t, uint64(2), st.FactsApplied)
	assert.Equal(t, uint64(1), st.FactsFailed)
}

// The facts worker applies what waits in batches of at most FactBatch and
// acknowledges every fact applied.
func TestCloud_FactsWorkerBatches(t *testing.T) {
	store := newFakeCloud()
	site := newSite()
	facts := edgeFacts(store, site, 600)
	c, rec := newTestCloud(t, store)
	for _, m := range factMsgs(t, site, facts...) {
		require.True(t, c.facts.push(m))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.factsWorker(ctx)
	}()
	defer func() { cancel(); <-done }()
	acks := 0
	waitFor(t, patience, "every fact acknowledged", func() bool {
		for _, r := range replies(t, rec.take()) {
			acks += len(r.Acks)
		}
		return acks == len(facts)
	})
	assert.Equal(t, []int{256, 256, 88}, store.batchSizes())
}

// feedCalls is a store whose PublishFeeds notes when it is called.
type feedCalls struct {
	*fakeCloud
	mu    sync.Mutex
	calls []time.Time
}

func (s *feedCalls) PublishFeeds(context.Context, int, func(protocol.Site, []protocol.Change) error) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, time.Now())
	return 0, nil
}

func (s *feedCalls) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// newPacedCloud is a cloud half whose publisher polls once an hour and
// paces its passes every every, over store.
func newPacedCloud(t *testing.T, store CloudStore, every time.Duration) *Cloud {
	c, err := NewCloud(CloudConfig{BrokerURL: "tcp://127.0.0.1:1", ClientID: "svc-cloud-test", Store: store,
		Logger: testLogger(t), PollEvery: time.Hour, PublishEvery: every})
	require.NoError(t, err)
	c.setClient(&recorder{})
	return c
}

// runPublisher runs c's publisher until the test ends.
func runPublisher(t *testing.T, c *Cloud) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.publisher(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// A stream of commits is published once per PublishEvery after a burst of
// publishBurst passes, the last commit within PublishEvery; a commit after
// a quiet spell at once. Time is synctest's.
func TestCloud_PublisherCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 20 * time.Millisecond
		store := &feedCalls{fakeCloud: newFakeCloud()}
		c := newPacedCloud(t, store, every)
		runPublisher(t, c)
		synctest.Wait()

		c.Notify()
		synctest.Wait()
		require.Len(t, store.times(), 1, "the first commit is published at once")

		var last time.Time
		for range 1000 { // a commit every 100µs for 200ms
			c.Notify()
			last = time.Now()
			time.Sleep(200 * time.Microsecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		calls := store.times()[1:]
		require.LessOrEqual(t, len(calls), publishBurst+200/20+1, "a pass per 20ms for 200ms of commits, after a burst: %v", calls)
		require.GreaterOrEqual(t, len(calls), 200/20, "passes go on while the commits come")
		for i := publishBurst; i < len(calls); i++ {
			require.GreaterOrEqual(t, calls[i].Sub(calls[i-1]), every, "pass %d", i)
		}
		end := calls[len(calls)-1]
		require.False(t, end.Before(last), "the last commit was published")
		require.LessOrEqual(t, end.Sub(last), every)

		time.Sleep(time.Second)
		c.Notify()
		synctest.Wait()
		require.Len(t, store.times(), 1+len(calls)+1)
		require.Equal(t, time.Now(), store.times()[len(calls)+1], "after a quiet spell, at once")
	})
}

// Commits that come on average slower than PublishEvery, however
// unevenly, are each published at once: with a plain least gap between
// passes, a commit 10ms after the last would wait 5ms.
func TestCloud_PublisherSteadyCommitsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &feedCalls{fakeCloud: newFakeCloud()}
		c := newPacedCloud(t, store, 15*time.Millisecond)
		runPublisher(t, c)
		synctest.Wait()
		var notified []time.Time
		for i := range 200 {
			c.Notify()
			notified = append(notified, time.Now())
			synctest.Wait()
			time.Sleep([]time.Duration{10 * time.Millisecond, 30 * time.Millisecond}[i%2])
		}
		require.Equal(t, notified, store.times())
	})
}

// The facts worker waits while facts keep arriving, each within a quarter
// of FactLinger of the last, FactLinger at most, and then takes them as
// one batch; without FactLinger it takes the first alone. Time is
// synctest's.
func TestCloud_FactLingerGathersABurst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		linger time.Duration
		pushes int           // facts after the first
		every  time.Duration // apart
		taken  int
		waited time.Duration
	}{
		{"a burst", 2 * time.Millisecond, 4, 300 * time.Microsecond, 5, 2 * time.Millisecond},
		{"a pair", 2 * time.Millisecond, 1, 300 * time.Microsecond, 2, time.Millisecond},
		{"a stream, cut at FactLinger", 2 * time.Millisecond, 20, 150 * time.Microsecond, 14, 2 * time.Millisecond},
		{"a quiet spell", 2 * time.Millisecond, 1, 700 * time.Microsecond, 1, 500 * time.Microsecond},
		{"no linger", -1, 4, 300 * time.Microsecond, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, err := NewCloud(CloudConfig{BrokerURL: "tcp://127.0.0.1:1", ClientID: "svc-cloud-test", Store: newFakeCloud(),
					Logger: testLogger(t), FactLinger: tc.linger})
				require.NoError(t, err)
				fact := message{topic: "svc/test/org/sites/site/facts/edge", payload: []byte("{}")}
				c.facts.push(fact)
				start := time.Now()
				taken := make(chan int)
				waited := make(chan time.Duration, 1)
				go func() {
					timer := time.NewTimer(time.Hour)
					timer.Stop()
					c.linger(t.Context(), timer)
					waited <- time.Since(start)
					taken <- len(c.facts.take(c.cfg.FactBatch))
				}()
				for range tc.pushes {
					time.Sleep(tc.every)
					c.facts.push(fact)
				}
				assert.Equal(t, tc.taken, <-taken)
				assert.Equal(t, tc.waited, <-waited)
			})
		})
	}
}

func TestPacer(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tt := range []struct {
		name  string
		at    []time.Time
		waits []time.Duration
	}{
		{"a burst, then one a period", []time.Time{ms(0), ms(0), ms(0), ms(0), ms(0), ms(0)},
			[]time.Duration{0, 0, 0, 0, 10 * time.Millisecond, 20 * time.Millisecond}},
		{"refilled while quiet", []time.Time{ms(0), ms(0), ms(0), ms(0), ms(100), ms(100), ms(100), ms(100), ms(100)},
			[]time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 10 * time.Millisecond}},
		{"passes a period apart never wait", []time.Time{ms(0), ms(10), ms(20), ms(30), ms(40), ms(50), ms(60)},
			[]time.Duration{0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := pacer{every: 10 * time.Millisecond}
			var got []time.Duration
			for _, at := range tt.at {
				w := p.take(at)
				got = append(got, w)
			}
			require.Equal(t, tt.waits, got)
		})
	}
}

// TestCloud_LogsARejectedFactOnceAndAFloodRateLimited: a rejected fact the
// edge publishes again is logged with its reason once; a flood of foreign
// messages writes a bounded number of warnings, not one each.
func TestCloud_LogsARejectedFactOnceAndAFloodRateLimited(t *testing.T) {
	store := newFakeCloud()
	site := newSite()
	facts := edgeFacts(store, site, 1)
	stranger := facts[0]
	stranger.EdgeID = ids.New(ids.Edge) // not an edge the store knows: rejected
	var buf lockedbuf.Buffer
	c, err := NewCloud(CloudConfig{BrokerURL: "tcp://127.0.0.1:1", ClientID: "svc-cloud-test", Store: store,
		Logger: slog.New(slog.NewTextHandler(&buf, nil)), SnapshotAfter: 1000})
	require.NoError(t, err)
	c.setClient(&recorder{})
	var got acked
	for range 3 { // published again every 30 s while not acknowledged
		c.applyFacts(context.Background(), factMsgs(t, site, stranger), got.ack)
	}
	assert.Equal(t, uint64(3), c.State().FactsRejected)
	assert.Equal(t, 1, strings.Count(buf.String(), `msg="fact rejected`), "logged once with its reason:\n%s", buf.String())

	flood := make([]message, 10_000)
	for i := range flood {
		flood[i] = message{site.Facts(ids.New(ids.Edge)), []byte(`{"v":1}`)}
	}
	c.applyFacts(context.Background(), flood, got.ack)
	assert.Equal(t, uint64(10_000), c.State().Dropped)
	assert.LessOrEqual(t, strings.Count(buf.String(), `msg="message dropped"`), ratelog.DefaultBurst)
}

// heldToken is a publication the broker has not acknowledged until
// release is closed.
type heldToken struct{ release chan struct{} }

func (t heldToken) Wait() bool { <-t.release; return true }
func (t heldToken) WaitTimeout(d time.Duration) bool {
	select {
	case <-t.release:
		return true
	case <-time.After(d):
		return false
	}
}
func (t heldToken) Done() <-chan struct{} { return t.release }
func (t heldToken) Error() error          { return nil }

// holdingRecorder records publications, each acknowledged by the broker
// only once release is closed.
type holdingRecorder struct {
	*recorder
	release chan struct{}
}

func (r holdingRecorder) Publish(topic string, qos byte, retained bool, payload any) paho.Token {
	r.recorder.Publish(topic, qos, retained, payload)
	return heldToken{r.release}
}

// A broker slow to take an acknowledgement does not hold up the next
// batch: the acknowledgements are sent by a goroutine of their own, and
// those of the batches committed meanwhile go out together after it.
func TestCloud_AckSendDoesNotHoldUpTheNextBatch(t *testing.T) {
	store := newFakeCloud()
	site, edge := newSite(), ids.New(ids.Edge)
	store.addEdge(site, edge)
	c, rec := newTestCloud(t, store)
	c.cfg.WriteTimeout = time.Minute
	held := holdingRecorder{recorder: rec, release: make(chan struct{})}
	c.setClient(held)
	fe := newFakeEdge(edge)
	fe.record(3)
	facts, _ := fe.Outbox(0)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.factsWorker(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	c.facts.push(message{site.Facts(edge), encode(t, &facts[0])})
	waitFor(t, 10*time.Second, "the first acknowledgement to be sent", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.pubs) == 1
	})
	// The broker has not acknowledged it; two more facts come.
	c.facts.push(message{site.Facts(edge), encode(t, &facts[1])})
	c.facts.push(message{site.Facts(edge), encode(t, &facts[2])})
	waitFor(t, 10*time.Second, "the next facts to be applied", func() bool {
		return store.isApplied(facts[1].ID) && store.isApplied(facts[2].ID)
	})
	close(held.release)
	waitFor(t, 10*time.Second, "the second acknowledgement", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.pubs) == 2
	})
	rs := replies(t, rec.take())
	assert.Equal(t, []string{facts[0].ID}, rs[0].Acks)
	assert.Equal(t, []string{facts[1].ID, facts[2].ID}, rs[1].Acks, "acknowledged together")
}

// A fact that asks for it (protocol.Fact.AckSeq) is acknowledged with the
// site's feed head read after its commit, so the edge can wait until its
// cache holds the change the fact made; one that does not, from an older
// edge, is acknowledged without it. What the publication asked for is
// not stored with the fact.
func TestCloud_AcknowledgesWithTheFeedHeadWhenAsked(t *testing.T) {
	store := newFakeCloud()
	site := newSite()
	c, _ := newTestCloud(t, store)
	facts := edgeFacts(store, site, 2)
	head := store.addVisits(site, 3)
	require.NotZero(t, head)
	facts[0].AckSeq = true

	seqs := map[string]uint64{}
	c.applyFacts(context.Background(), factMsgs(t, site, facts...), func(_ ackKey, id string, seq uint64) { seqs[id] = seq })
	assert.Equal(t, map[string]uint64{facts[0].ID: head, facts[1].ID: 0}, seqs)
	store.mu.Lock()
	stored := store.applied[facts[0].ID]
	store.mu.Unlock()
	assert.False(t, stored.AckSeq, "not stored with the fact")

	q := newAckQueue()
	k := ackKey{site, facts[0].EdgeID}
	q.add(k, facts[0].ID, head)
	q.add(k, facts[1].ID, head-1)
	replies, _ := q.take(time.Now(), 0)
	require.Len(t, replies, 1)
	assert.Equal(t, head, replies[0].seq, "a reply carries the largest head of the facts it acknowledges")
}
