package mqttsync

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/svc-vms/svc/shared/ratelog"
	"github.com/svc-vms/svc/sync/protocol"
)

// CloudStore is what the cloud half needs of the cloud service. Its
// methods are called from several goroutines at once.
type CloudStore interface {
	// Changes returns up to limit changes of site's feed after sequence
	// after, in order, and the feed's head (its last sequence). Changes
	// no longer kept are simply absent: the cloud half then sends a
	// snapshot. It returns the store's errors.
	Changes(ctx context.Context, site protocol.Site, after uint64, limit int) (changes []protocol.Change, head uint64, err error)
	// FeedHead returns the head of site's feed as committed (what
	// Changes returns as head), 0 before its first change. It returns
	// the store's errors.
	FeedHead(ctx context.Context, site protocol.Site) (uint64, error)
	// Snapshot returns the site's whole state as of one sequence, unsplit
	// (Part and Parts unset). It returns the store's errors.
	Snapshot(ctx context.Context, site protocol.Site) (protocol.Snapshot, error)
	// ApplyFacts applies facts that arrived for site, in order, each
	// once by its ID, as one batch (one transaction, say). errs[i] is
	// facts[i]'s outcome: nil when it is applied now or was before (also
	// earlier in facts), or an error wrapping ErrRejected when it never
	// will be (an unknown edge, say) and is not acknowledged; the others
	// are applied all the same. err is a transient error that failed the
	// whole batch: nothing of it is applied, and errs is nil.
	ApplyFacts(ctx context.Context, site protocol.Site, facts []protocol.Fact) (errs []error, err error)
	// SiteEdge returns nil when edgeID is an edge of site that may sync,
	// an error wrapping ErrRejected when it is not (unknown, another
	// site's, revoked), and the store's errors. The cloud half asks before
	// it answers a resync, so that a site's feed goes to its own edges
	// whatever the broker lets through.
	SiteEdge(ctx context.Context, site protocol.Site, edgeID string) error
	// EdgeStatus records an edge's status (a retained last will saying
	// offline included). It returns the store's errors.
	EdgeStatus(ctx context.Context, site protocol.Site, st protocol.Status) error
	// PublishFeeds hands fn the changes committed and not yet published,
	// per site in order, up to limit in all, and returns how many it
	// handed over. A site's cursor advances only past runs for which fn
	// returned nil. It returns the store's errors and fn's.
	PublishFeeds(ctx context.Context, limit int, fn func(site protocol.Site, changes []protocol.Change) error) (int, error)
}

// CloudConfig configures the cloud half. Zero durations and sizes take the
// defaults given.
type CloudConfig struct {
	BrokerURL string
	Username  string
	Password  string
	// ClientID names this process to the broker; each cloud process has
	// its own (a second connection with the same ID takes over the first).
	ClientID string
	TLS      *tls.Config

	Store  CloudStore
	Logger *slog.Logger // nil: slog.Default()

	// Filters are the shared subscriptions this process reads: by default
	// protocol.SharedFacts, SharedResync and SharedStatus. Narrower ones
	// (one mode, one organisation, or another share group) split the sites
	// between deployments; each filter must be a $share filter whose
	// topics are the protocol's.
	Filters []string

	// PollEvery is how often the change feeds are published when Notify
	// is not called. Default 100ms.
	PollEvery time.Duration
	// PublishEvery paces the publications of the change feeds: while
	// commits keep coming faster, they are published once per
	// PublishEvery (after a burst of publishBurst passes), Notify calls
	// meanwhile together, so a stream of commits costs a store pass and
	// a batch per PublishEvery rather than per commit. Commits that come
	// slower are published at once. Default 15ms.
	PublishEvery time.Duration
	// FactBatch bounds the facts applied in one ApplyFacts call.
	// Default 256.
	FactBatch int
	// FactLinger lets a batch of facts grow before it is applied: once a
	// fact is waiting, the facts worker waits while more keep arriving
	// (each within a quarter of FactLinger of the last), FactLinger at
	// most, unless FactBatch are waiting. A commit costs about as much
	// for one fact as for a hundred (its fsync above all), and the facts
	// an edge publishes together reach the cloud a few at a time: taken
	// at once, each burst was cut into a batch of one or two and the
	// rest, each paying its own commit. Negative: no waiting. Default
	// 2ms.
	FactLinger time.Duration
	// FeedLimit bounds the changes handed over by one PublishFeeds call.
	// Default 5000.
	FeedLimit int
	// AckEvery is how long acknowledgements may gather before they are
	// sent (at most protocol.MaxAcks in one reply). Zero, the default,
	// sends each commit's as soon as it returns: a commit is already a
	// batch, and acknowledgements that come while the last ones are
	// being sent go out together.
	AckEvery time.Duration
	// SnapshotAfter is how far behind an edge may be (in changes) and
	// still be sent changes rather than a snapshot. Default 5000.
	SnapshotAfter uint64
	// ResyncWorkers answer resync requests concurrently. Default 2.
	ResyncWorkers int
	// StoreTimeout bounds each store call. Default 30s.
	StoreTimeout time.Duration

	KeepAlive      time.Duration // default 30s
	ConnectTimeout time.Duration // default 10s
	WriteTimeout   time.Duration // one publication, default 10s
	MinBackoff     time.Duration // default 500ms
	MaxBackoff     time.Duration // default 30s
}

// Validate names the first unusable field, wrapping ErrConfig.
func (c *CloudConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if err := checkBrokerURL(c.BrokerURL); err != nil {
		return bad("BrokerURL %q: %v", c.BrokerURL, err)
	}
	switch {
	case c.ClientID == "" || len(c.ClientID) > 128:
		return bad("ClientID must hold 1 to 128 bytes")
	case c.Store == nil:
		return bad("Store is nil")
	case c.FeedLimit < 0:
		return bad("FeedLimit is negative")
	case c.FactBatch < 0:
		return bad("FactBatch is negative")
	case c.ResyncWorkers < 0 || c.ResyncWorkers > 64:
		return bad("ResyncWorkers %d is not between 1 and 64", c.ResyncWorkers)
	}
	for _, f := range c.Filters {
		if len(f) < 8 || f[:7] != "$share/" {
			return bad("Filters: %q is not a $share filter", f)
		}
	}
	for name, d := range map[string]time.Duration{
		"PollEvery": c.PollEvery, "PublishEvery": c.PublishEvery, "AckEvery": c.AckEvery, "StoreTimeout": c.StoreTimeout,
		"KeepAlive": c.KeepAlive, "ConnectTimeout": c.ConnectTimeout, "WriteTimeout": c.WriteTimeout,
		"MinBackoff": c.MinBackoff, "MaxBackoff": c.MaxBackoff,
	} {
		if d < 0 {
			return bad("%s is negative", name)
		}
	}
	return nil
}

func (c *CloudConfig) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.PollEvery, 100*time.Millisecond)
	def(&c.PublishEvery, 15*time.Millisecond)
	def(&c.StoreTimeout, 30*time.Second)
	def(&c.FactLinger, 2*time.Millisecond)
	def(&c.KeepAlive, defaultKeepAlive)
	def(&c.ConnectTimeout, defaultConnectTimeout)
	def(&c.WriteTimeout, defaultWriteTimeout)
	def(&c.MinBackoff, defaultMinBackoff)
	def(&c.MaxBackoff, defaultMaxBackoff)
	if c.FeedLimit == 0 {
		c.FeedLimit = 5000
	}
	if c.FactBatch == 0 {
		c.FactBatch = 256
	}
	if c.SnapshotAfter == 0 {
		c.SnapshotAfter = 5000
	}
	if c.ResyncWorkers == 0 {
		c.ResyncWorkers = 2
	}
	if len(c.Filters) == 0 {
		c.Filters = []string{protocol.SharedFacts, protocol.SharedResync, protocol.SharedStatus}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// CloudState is the cloud half's counters, for metrics.
type CloudState struct {
	Connected       bool
	FactsApplied    uint64 // applied now or before
	FactsRejected   uint64 // ErrRejected
	FactsFailed     uint64 // a transient error: not acknowledged
	FactBatches     uint64 // ApplyFacts calls
	FactsQueued     int    // received and waiting for the next batch
	AckReplies      uint64
	ResyncsAnswered uint64 // with changes
	Snapshots       uint64 // resyncs answered with a snapshot
	Statuses        uint64
	ChangesSent     uint64 // on the feeds
	Dropped         uint64 // malformed or foreign messages, and any the inboxes had no room for
}

// Cloud is the cloud's half of the sync: it applies the edges' facts,
// answers their resync requests, records their statuses and publishes the
// sites' change feeds.
type Cloud struct {
	cfg    CloudConfig
	log    *slog.Logger
	facts  *inbox
	resync *inbox
	status *inbox
	notify chan struct{}
	ran    atomic.Bool

	mu     sync.Mutex
	client paho.Client // nil while disconnected

	connected                                                     atomic.Bool
	applied, rejected, failed, batches, acks, answered, snapshots atomic.Uint64
	// rejectedSeen are the facts whose rejection was logged: the edge
	// publishes an unacknowledged fact again every 30 s, and its reason is
	// logged once.
	rejectedSeen            *seen
	statuses, sent, dropped atomic.Uint64
}

// NewCloud checks cfg and returns a cloud half; Run starts it.
func NewCloud(cfg CloudConfig) (*Cloud, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	return &Cloud{
		cfg: cfg,
		// Warnings are rate-limited per message: a flood of foreign or
		// malformed messages on a shared broker must not fill a disk.
		log:          slog.New(ratelog.New(cfg.Logger.Handler(), 0, 0, nil)).With("component", "mqttsync-cloud", "client_id", cfg.ClientID),
		rejectedSeen: newSeen(rejectedSeenMax),
		facts:        newInbox(inboxLimit, inboxBytes),
		resync:       newInbox(inboxLimit, inboxBytes),
		status:       newInbox(inboxLimit, inboxBytes),
		notify:       make(chan struct{}, 1),
	}, nil
}

// Notify tells the cloud half that a change was committed, so it publishes
// the feeds now rather than at the next poll. It never blocks.
func (c *Cloud) Notify() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// State returns the counters; safe from any goroutine.
func (c *Cloud) State() CloudState {
	return CloudState{
		Connected:    c.connected.Load(),
		FactsApplied: c.applied.Load(), FactsRejected: c.rejected.Load(), FactsFailed: c.failed.Load(), FactBatches: c.batches.Load(),
		FactsQueued: c.facts.len(),
		AckReplies:  c.acks.Load(), ResyncsAnswered: c.answered.Load(), Snapshots: c.snapshots.Load(),
		Statuses: c.statuses.Load(), ChangesSent: c.sent.Load(),
		Dropped: c.dropped.Load() + c.facts.droppedCount() + c.resync.droppedCount() + c.status.droppedCount(),
	}
}

// Run connects (retrying with backoff for as long as ctx lasts) and serves
// until ctx ends. It returns nil once ctx ends; it is called once.
func (c *Cloud) Run(ctx context.Context) error {
	if c.ran.Swap(true) {
		return errors.New("mqttsync: Cloud.Run called twice")
	}
	var wg sync.WaitGroup
	wctx, stop := context.WithCancel(ctx)
	wg.Go(func() { c.factsWorker(wctx) })
	for range c.cfg.ResyncWorkers {
		wg.Go(func() { c.resyncWorker(wctx) })
	}
	wg.Go(func() { c.statusWorker(wctx) })
	wg.Go(func() { c.publisher(wctx) })

	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for ctx.Err() == nil {
		cl, lost, err := c.connect(ctx)
		if err == nil {
			bo.reset()
			c.setClient(cl)
			c.log.Info("connected to the broker")
			select {
			case <-ctx.Done():
				stop()
				wg.Wait()
				c.setClient(nil)
				cl.Disconnect(250)
				return nil
			case err = <-lost:
				err = fmt.Errorf("connection lost: %w", err)
			}
			c.setClient(nil)
			cl.Disconnect(0)
		}
		if ctx.Err() != nil {
			break
		}
		d := bo.next()
		c.log.Warn("no connection to the broker; retrying", "error", err, "retry_in", d)
		sleep(ctx, d)
	}
	stop()
	wg.Wait()
	return nil
}

func (c *Cloud) connect(ctx context.Context) (paho.Client, <-chan error, error) {
	lost := make(chan error, 1)
	cl, err := dial(ctx, dialConfig{
		url: c.cfg.BrokerURL, username: c.cfg.Username, password: c.cfg.Password,
		clientID: c.cfg.ClientID, tls: c.cfg.TLS,
		// A clean session: a persistent one would keep the process's
		// share of the $share subscriptions after it stops, and brokers go
		// on handing it messages that nobody reads (mochi picks a group
		// member without regard to whether it is connected). What a
		// stopped process misses is recovered by the protocol: edges
		// republish unacknowledged facts and ask again for resyncs.
		cleanSession: true,
		keepAlive:    c.cfg.KeepAlive, connectTimeout: c.cfg.ConnectTimeout, writeTimeout: c.cfg.WriteTimeout,
		onMessage: c.route,
		onLost: func(err error) {
			select {
			case lost <- err:
			default:
			}
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	if err := subscribe(cl, c.cfg.Filters, c.cfg.ConnectTimeout); err != nil {
		cl.Disconnect(0)
		return nil, nil, err
	}
	return cl, lost, nil
}

// route is the paho callback: it sorts a message into its worker's inbox
// by topic, and never blocks.
func (c *Cloud) route(m message) {
	_, kind, _, err := protocol.ParseTopic(m.topic)
	switch {
	case err != nil:
		c.drop(m, "not a topic of the protocol")
	case kind == protocol.KindFacts:
		c.facts.push(m)
	case kind == protocol.KindResync:
		c.resync.push(m)
	case kind == protocol.KindStatus:
		c.status.push(m)
	default:
		c.drop(m, "not a topic the cloud reads")
	}
}

func (c *Cloud) drop(m message, why string) {
	c.log.Warn("message dropped", "topic", m.topic, "bytes", len(m.payload), "reason", why)
	c.dropped.Add(1)
}

func (c *Cloud) setClient(cl paho.Client) {
	c.mu.Lock()
	c.client = cl
	c.mu.Unlock()
	c.connected.Store(cl != nil)
}

// publish publishes at QoS 1 on the current connection.
func (c *Cloud) publish(topic string, payload []byte) paho.Token {
	c.mu.Lock()
	cl := c.client
	c.mu.Unlock()
	if cl == nil {
		return failedToken{errNotConnected}
	}
	return cl.Publish(topic, 1, false, payload)
}

func (c *Cloud) storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.StoreTimeout)
}

// ackKey names the replies topic that acknowledgements go to.
type ackKey struct {
	site   protocol.Site
	edgeID string
}

// factsWorker applies facts in the order they arrive, up to FactBatch of
// them at once: the facts that arrive while a batch is being applied wait
// in the inbox and go into the next batch together (group commit). Their
// acknowledgements are queued once the batch's ApplyFacts has returned,
// that is once it is committed, never before, and another goroutine
// sends them, so the next batch is not held up by the broker.
func (c *Cloud) factsWorker(ctx context.Context) {
	q := newAckQueue()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { c.ackSender(ctx, q) })
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.facts.ready:
			c.linger(ctx, linger)
			// What remains signals ready again.
			c.applyFacts(ctx, c.facts.take(c.cfg.FactBatch), q.add)
			q.signal()
		}
	}
}

// linger waits while facts keep arriving (FactLinger), so that the
// batch the worker takes next holds what came together.
func (c *Cloud) linger(ctx context.Context, timer *time.Timer) {
	if c.cfg.FactLinger <= 0 {
		return
	}
	until := time.Now().Add(c.cfg.FactLinger)
	gap := c.cfg.FactLinger / 4
	n := c.facts.len()
	for n < c.cfg.FactBatch {
		wait := min(gap, time.Until(until))
		if wait <= 0 {
			return
		}
		if !waitTimer(ctx, timer, wait) {
			return
		}
		m := c.facts.len()
		if m == n {
			return // none came: the burst is over
		}
		n = m
	}
}

// waitTimer waits d on t, a timer stopped with its channel empty, and
// leaves it so; false when ctx ended first.
func waitTimer(ctx context.Context, t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-t.C:
		return true
	}
}

// ackQueue holds the acknowledgements of committed facts until the
// sender takes them, per edge in the order they came.
type ackQueue struct {
	ready chan struct{}

	mu      sync.Mutex
	pending map[ackKey][]string
	seq     map[ackKey]uint64 // the largest feed head of a key's pending ones, 0 when none asked for it
	order   []ackKey          // the keys of pending, first waiting first
	since   time.Time         // when the oldest waiting one came
}

func newAckQueue() *ackQueue {
	return &ackQueue{ready: make(chan struct{}, 1), pending: make(map[ackKey][]string), seq: make(map[ackKey]uint64)}
}

// add queues the acknowledgement of a committed fact, with the site's feed
// head after its commit when the fact asked for it (else 0). A reply
// carries the largest head of the facts it acknowledges: each fact's
// changes are at or before it.
func (q *ackQueue) add(k ackKey, id string, seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		q.since = time.Now()
	}
	if _, ok := q.pending[k]; !ok {
		q.order = append(q.order, k)
	}
	q.pending[k] = append(q.pending[k], id)
	q.seq[k] = max(q.seq[k], seq)
}

func (q *ackQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// ackReply is one reply's acknowledgements.
type ackReply struct {
	k   ackKey
	ids []string
	seq uint64
}

// take removes what is due at now: everything when every is zero or the
// oldest has waited every, else only full replies (protocol.MaxAcks). It
// returns how long until the rest is due; zero when nothing waits.
func (q *ackQueue) take(now time.Time, every time.Duration) ([]ackReply, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	all := every <= 0 || now.Sub(q.since) >= every
	var out []ackReply
	keep := q.order[:0]
	for _, k := range q.order {
		ids := q.pending[k]
		for len(ids) >= protocol.MaxAcks || all && len(ids) > 0 {
			n := min(len(ids), protocol.MaxAcks)
			out = append(out, ackReply{k, ids[:n:n], q.seq[k]})
			ids = ids[n:]
		}
		if len(ids) == 0 {
			delete(q.pending, k)
			delete(q.seq, k)
			continue
		}
		q.pending[k] = ids
		keep = append(keep, k)
	}
	q.order = keep
	if len(keep) == 0 {
		return out, 0
	}
	return out, max(time.Millisecond, every-now.Sub(q.since))
}

// ackSender sends the queued acknowledgements: each commit's at once, or
// per AckEvery when it is set (full replies at once). While it sends,
// more gather, and go out together next.
func (c *Cloud) ackSender(ctx context.Context, q *ackQueue) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.ready:
		case <-timer.C:
		}
		replies, wait := q.take(time.Now(), c.cfg.AckEvery)
		for _, r := range replies {
			c.sendAcks(r.k, r.ids, r.seq)
		}
		if wait > 0 {
			timer.Reset(wait)
		}
	}
}

// siteFacts are the facts of one site among the messages taken.
type siteFacts struct {
	site  protocol.Site
	facts []protocol.Fact
	seq   []bool // facts[i] asked for its acknowledgement with the feed's Seq
}

// applyFacts decodes msgs and applies their facts, site by site (in the
// order each site's first fact came, each site's in arrival order), each
// site's as one batch, and hands ack where each applied fact's
// acknowledgement goes, with the site's feed head read after the commit
// when the fact asked for it (protocol.Fact.AckSeq).
func (c *Cloud) applyFacts(ctx context.Context, msgs []message, ack func(ackKey, string, uint64)) {
	var sites []siteFacts
	for _, m := range msgs {
		site, f, ok := c.decodeFact(m)
		if !ok {
			continue
		}
		i := slices.IndexFunc(sites, func(s siteFacts) bool { return s.site == site })
		if i < 0 {
			i = len(sites)
			sites = append(sites, siteFacts{site: site})
		}
		// What the publication asked for is not the fact's: the store
		// keeps the fact without it.
		sites[i].seq = append(sites[i].seq, f.AckSeq)
		f.AckSeq = false
		sites[i].facts = append(sites[i].facts, f)
	}
	for _, sf := range sites {
		errs, err := c.storeApply(ctx, sf.site, sf.facts)
		if err == nil {
			head := c.ackHead(ctx, sf.site, sf.seq)
			for i, f := range sf.facts {
				c.factDone(ctx, sf.site, f, sf.seq[i], head, errs[i], ack)
			}
			continue
		}
		if len(sf.facts) == 1 || ctx.Err() != nil {
			for i, f := range sf.facts {
				c.factDone(ctx, sf.site, f, sf.seq[i], feedHead{}, err, ack)
			}
			continue
		}
		// The batch failed as a whole. Each fact is tried alone, so one
		// that cannot be applied does not hold up the others; with the
		// store down, this costs what applying one at a time always did.
		c.log.Warn("apply a batch of facts; trying them one by one", "site_id", sf.site.SiteID, "facts", len(sf.facts), "error", err)
		for i, f := range sf.facts {
			if ctx.Err() != nil {
				c.factDone(ctx, sf.site, f, sf.seq[i], feedHead{}, ctx.Err(), ack)
				continue
			}
			errs, err := c.storeApply(ctx, sf.site, []protocol.Fact{f})
			var head feedHead
			if err == nil {
				err = errs[0]
				head = c.ackHead(ctx, sf.site, sf.seq[i:i+1])
			}
			c.factDone(ctx, sf.site, f, sf.seq[i], head, err, ack)
		}
	}
}

// feedHead is a site's feed head read after a commit, for the
// acknowledgements that carry it; err when it could not be read.
type feedHead struct {
	seq uint64
	err error
}

// ackHead reads the site's feed head when one of the facts asked for it
// (seq), after their commit: every change they made is at or before it,
// since each fact's changes are appended in the transaction that applies
// it. It is the head after the commit, not the commit's own last
// sequence, so it may be later than needed: the edge then waits for a
// few more changes it was going to apply anyway.
func (c *Cloud) ackHead(ctx context.Context, site protocol.Site, seq []bool) feedHead {
	if !slices.Contains(seq, true) {
		return feedHead{}
	}
	sctx, cancel := c.storeCtx(ctx)
	defer cancel()
	head, err := c.cfg.Store.FeedHead(sctx, site)
	return feedHead{seq: head, err: err}
}

// storeApply is one ApplyFacts call, bounded by StoreTimeout.
func (c *Cloud) storeApply(ctx context.Context, site protocol.Site, facts []protocol.Fact) ([]error, error) {
	sctx, cancel := c.storeCtx(ctx)
	defer cancel()
	c.batches.Add(1)
	errs, err := c.cfg.Store.ApplyFacts(sctx, site, facts)
	if err == nil && len(errs) != len(facts) {
		err = fmt.Errorf("mqttsync: ApplyFacts returned %d outcomes for %d facts", len(errs), len(facts))
	}
	return errs, err
}

// decodeFact decodes one fact and names its site.
func (c *Cloud) decodeFact(m message) (protocol.Site, protocol.Fact, bool) {
	site, kind, edgeID, err := protocol.ParseTopic(m.topic)
	if err != nil || kind != protocol.KindFacts {
		c.drop(m, "not a facts topic")
		return protocol.Site{}, protocol.Fact{}, false
	}
	var f protocol.Fact
	if err := protocol.Decode(m.payload, &f); err != nil {
		c.drop(m, err.Error())
		return protocol.Site{}, protocol.Fact{}, false
	}
	if f.EdgeID != edgeID {
		// The broker lets an edge publish only on its own facts topic,
		// so a fact naming another edge is forged or misrouted.
		c.drop(m, "the fact names edge "+f.EdgeID+", not its topic's")
		return protocol.Site{}, protocol.Fact{}, false
	}
	return site, f, true
}

// factDone counts and logs a fact's outcome and hands an applied fact's
// acknowledgement to ack.
func (c *Cloud) factDone(ctx context.Context, site protocol.Site, f protocol.Fact, wantSeq bool, head feedHead, err error, ack func(ackKey, string, uint64)) {
	switch {
	case err == nil && wantSeq && head.err != nil:
		// Applied, but an acknowledgement without the head would let the
		// edge take an older version of a visit than this fact made: it is
		// not acknowledged, and its next publication is (applying is
		// idempotent).
		c.applied.Add(1)
		if ctx.Err() == nil {
			c.log.Error("read the site's feed head to acknowledge a fact; the edge will publish it again", "site_id", site.SiteID, "edge_id", f.EdgeID, "fact_id", f.ID, "error", head.err)
		}
	case err == nil:
		c.applied.Add(1)
		var seq uint64
		if wantSeq {
			seq = head.seq
		}
		ack(ackKey{site, f.EdgeID}, f.ID, seq)
	case errors.Is(err, ErrRejected):
		c.rejected.Add(1)
		if c.rejectedSeen.add(f.ID) {
			c.log.Warn("fact rejected; not acknowledged", "site_id", site.SiteID, "edge_id", f.EdgeID, "fact_id", f.ID, "error", err)
		}
	default:
		c.failed.Add(1)
		if ctx.Err() == nil {
			c.log.Error("apply fact; the edge will publish it again", "site_id", site.SiteID, "edge_id", f.EdgeID, "fact_id", f.ID, "error", err)
		}
	}
}

func (c *Cloud) sendAcks(k ackKey, ids []string, seq uint64) {
	b, err := protocol.Encode(&protocol.Reply{Kind: protocol.ReplyAck, Acks: ids, Seq: seq})
	if err == nil {
		err = wait(c.publish(k.site.Replies(k.edgeID), b), c.cfg.WriteTimeout)
	}
	if err != nil {
		// The edge publishes the facts again and they are acknowledged
		// again: applying is idempotent.
		c.log.Warn("acknowledge facts", "site_id", k.site.SiteID, "edge_id", k.edgeID, "facts", len(ids), "error", err)
		return
	}
	c.acks.Add(1)
}

func (c *Cloud) resyncWorker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.resync.ready:
			for _, m := range c.resync.take(1) {
				c.answerResync(ctx, m)
			}
		}
	}
}

// answerResync sends the changes after the request's sequence, or a
// snapshot when the edge is new (after 0), too far behind, ahead of the
// feed (the cloud's store was restored), or behind what the feed still
// keeps.
func (c *Cloud) answerResync(ctx context.Context, m message) {
	site, kind, edgeID, err := protocol.ParseTopic(m.topic)
	if err != nil || kind != protocol.KindResync {
		c.drop(m, "not a resync topic")
		return
	}
	var req protocol.ResyncRequest
	if err := protocol.Decode(m.payload, &req); err != nil {
		c.drop(m, err.Error())
		return
	}
	log := c.log.With("site_id", site.SiteID, "edge_id", edgeID, "request_id", req.RequestID, "after", req.After)
	sctx, cancel := c.storeCtx(ctx)
	defer cancel()
	switch err := c.cfg.Store.SiteEdge(sctx, site, edgeID); {
	case errors.Is(err, ErrRejected):
		c.drop(m, "resync from an edge that may not read the site: "+err.Error())
		return
	case err != nil:
		log.Error("check the edge of a resync; the edge will ask again", "error", err)
		return
	}
	changes, head, err := c.cfg.Store.Changes(sctx, site, req.After, protocol.MaxChanges)
	cancel()
	if err != nil {
		log.Error("read changes for a resync; the edge will ask again", "error", err)
		return
	}
	snapshot := req.After == 0 || head < req.After || head-req.After > c.cfg.SnapshotAfter ||
		head > req.After && (len(changes) == 0 || changes[0].Seq != req.After+1)
	if snapshot {
		c.sendSnapshot(ctx, log, site, edgeID, req.RequestID)
		return
	}
	r := protocol.Reply{Kind: protocol.ReplyChanges, RequestID: req.RequestID}
	if len(changes) > 0 {
		runs, err := splitChanges(changes)
		if err != nil {
			log.Error("split changes", "error", err)
			return
		}
		r.Changes = runs[0]
		r.More = r.Changes[len(r.Changes)-1].Seq < head
	}
	b, err := protocol.Encode(&r)
	if err == nil {
		err = wait(c.publish(site.Replies(edgeID), b), c.cfg.WriteTimeout)
	}
	if err != nil {
		log.Error("answer a resync; the edge will ask again", "error", err)
		return
	}
	c.answered.Add(1)
}

func (c *Cloud) sendSnapshot(ctx context.Context, log *slog.Logger, site protocol.Site, edgeID, requestID string) {
	sctx, cancel := c.storeCtx(ctx)
	snap, err := c.cfg.Store.Snapshot(sctx, site)
	cancel()
	if err != nil {
		log.Error("read a snapshot; the edge will ask again", "error", err)
		return
	}
	parts, err := splitSnapshot(snap)
	if err != nil {
		log.Error("split a snapshot", "error", err)
		return
	}
	topic := site.Replies(edgeID)
	toks := make([]paho.Token, 0, len(parts))
	for i := range parts {
		b, err := protocol.Encode(&protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: requestID, Snapshot: &parts[i]})
		if err != nil {
			log.Error("encode a snapshot part", "part", i+1, "error", err)
			return
		}
		toks = append(toks, c.publish(topic, b))
	}
	for _, t := range toks {
		if err := wait(t, c.cfg.WriteTimeout); err != nil {
			log.Error("publish a snapshot; the edge will ask again", "error", err)
			return
		}
	}
	log.Info("snapshot sent", "seq", snap.Seq, "parts", len(parts), "visits", len(snap.Visits))
	c.snapshots.Add(1)
}

func (c *Cloud) statusWorker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.status.ready:
			for _, m := range c.status.take(0) {
				c.recordStatus(ctx, m)
			}
		}
	}
}

func (c *Cloud) recordStatus(ctx context.Context, m message) {
	site, kind, edgeID, err := protocol.ParseTopic(m.topic)
	if err != nil || kind != protocol.KindStatus {
		c.drop(m, "not a status topic")
		return
	}
	if len(m.payload) == 0 {
		return // a retained status being cleared
	}
	var st protocol.Status
	if err := protocol.Decode(m.payload, &st); err != nil {
		c.drop(m, err.Error())
		return
	}
	if st.EdgeID != edgeID {
		c.drop(m, "the status names another edge than its topic")
		return
	}
	sctx, cancel := c.storeCtx(ctx)
	err = c.cfg.Store.EdgeStatus(sctx, site, st)
	cancel()
	if err != nil {
		if ctx.Err() == nil { // shutting down is not a failure to record
			c.log.Error("record an edge's status", "site_id", site.SiteID, "edge_id", edgeID, "error", err)
		}
		return
	}
	c.statuses.Add(1)
}

// publisher publishes the change feeds on Notify and every PollEvery,
// while connected, paced by a pacer: Notify calls that come while it waits
// are published together by the next pass.
func (c *Cloud) publisher(ctx context.Context) {
	t := time.NewTicker(c.cfg.PollEvery)
	defer t.Stop()
	gap := time.NewTimer(time.Hour)
	gap.Stop()
	pace := pacer{every: c.cfg.PublishEvery}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.notify:
		case <-t.C:
		}
		if wait := pace.take(time.Now()); wait > 0 && !waitTimer(ctx, gap, wait) {
			return
		}
		// This pass reads after every commit notified so far.
		select {
		case <-c.notify:
		default:
		}
		for c.connected.Load() && ctx.Err() == nil {
			n, err := c.cfg.Store.PublishFeeds(ctx, c.cfg.FeedLimit, c.publishFeed)
			if err != nil {
				if ctx.Err() == nil {
					c.log.Warn("publish the change feeds; trying again", "error", err)
				}
				break
			}
			if n < c.cfg.FeedLimit {
				break
			}
		}
	}
}

// publishBurst is how many passes the publisher may make at once before
// PublishEvery spaces them.
const publishBurst = 4

// pacer spaces the publisher's passes: a bucket of publishBurst passes,
// refilled one every every. A stream of commits faster than that is
// published once per every; commits about every apart, or slower, go out
// at once, their jitter taken up by the bucket. (A plain least gap between
// passes made each of a stream of commits about that gap apart wait for
// the next slot: the passes settle on a grid whose phase the poll and late
// commits set.)
type pacer struct {
	every  time.Duration
	tokens float64   // passes that may start now
	at     time.Time // when tokens was counted; zero before the first pass
}

// take counts a pass wanted at now and returns how long it must wait.
func (p *pacer) take(now time.Time) time.Duration {
	if p.at.IsZero() || p.every <= 0 {
		p.tokens = publishBurst
	} else {
		p.tokens = min(publishBurst, p.tokens+float64(now.Sub(p.at))/float64(p.every))
	}
	p.at = now
	var wait time.Duration
	if p.tokens < 1 {
		wait = time.Duration((1 - p.tokens) * float64(p.every))
		p.tokens, p.at = 1, now.Add(wait)
	}
	p.tokens--
	return wait
}

// publishFeed publishes one site's run of changes as Batches and returns
// nil only when the broker took them all, so the store's cursor advances.
func (c *Cloud) publishFeed(site protocol.Site, changes []protocol.Change) error {
	var toks []paho.Token
	// A run that one Batch holds, as the publisher's usually is, goes out
	// encoded once; only a longer one is measured change by change and
	// cut (splitChanges), which encodes each change twice.
	if len(changes) <= protocol.MaxChanges {
		if b, err := protocol.Encode(&protocol.Batch{Changes: changes}); err == nil {
			toks = append(toks, c.publish(site.Changes(), b))
		}
	}
	if toks == nil {
		runs, err := splitChanges(changes)
		if err != nil {
			return err
		}
		for _, run := range runs {
			b, err := protocol.Encode(&protocol.Batch{Changes: run})
			if err != nil {
				return fmt.Errorf("encode a batch of %s: %w", site.Prefix(), err)
			}
			toks = append(toks, c.publish(site.Changes(), b))
		}
	}
	for _, t := range toks {
		if err := wait(t, c.cfg.WriteTimeout); err != nil {
			return fmt.Errorf("publish the feed of %s: %w", site.Prefix(), err)
		}
	}
	c.sent.Add(uint64(len(changes)))
	return nil
}

// failedToken is a paho.Token that failed before it was sent.
type failedToken struct{ err error }

func (t failedToken) Wait() bool                     { return true }
func (t failedToken) WaitTimeout(time.Duration) bool { return true }
func (t failedToken) Done() <-chan struct{}          { return closedChan }
func (t failedToken) Error() error                   { return t.err }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// rejectedSeenMax bounds the rejected facts remembered as logged.
const rejectedSeenMax = 4096

// seen is a bounded set of strings: past its size the oldest are
// forgotten (and would be logged again).
type seen struct {
	mu    sync.Mutex
	set   map[string]struct{}
	order []string
	next  int
}

func newSeen(n int) *seen { return &seen{set: make(map[string]struct{}, n), order: make([]string, n)} }

// add reports whether s is new, and remembers it.
func (s *seen) add(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[k]; ok {
		return false
	}
	if old := s.order[s.next]; old != "" {
		delete(s.set, old)
	}
	s.order[s.next] = k
	s.next = (s.next + 1) % len(s.order)
	s.set[k] = struct{}{}
	return true
}
