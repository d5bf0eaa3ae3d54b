package mqttsync

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// EdgeStore is what the edge half needs of the appliance's cache
// (edge/cache.Cache satisfies it with a Seq method returning View().Seq()).
// The edge half calls it from one goroutine.
type EdgeStore interface {
	// Seq is the last change sequence applied.
	Seq() uint64
	// Apply applies a run of consecutive changes in one transaction,
	// skipping those at or below Seq. It returns an error, applying
	// nothing, when the run starts past Seq()+1 or fails the protocol's
	// checks, and the store's own errors.
	Apply(changes []protocol.Change) (applied int, err error)
	// ReplaceSnapshot replaces the cache with the union of all parts of
	// one snapshot and sets Seq to its Seq; it returns an error, changing
	// nothing, for parts that do not make one whole, and the store's
	// errors.
	ReplaceSnapshot(parts []protocol.Snapshot) error
	// OutboxAfter returns up to limit facts waiting for acknowledgement
	// whose counter is past after (all when after is 0), lowest counter
	// first; it returns the store's errors.
	OutboxAfter(after uint64, limit int) ([]protocol.Fact, error)
	// Ack removes acknowledged facts; unknown IDs are ignored. It returns
	// the store's errors.
	Ack(ids []string) (removed int, err error)
	// MarkSynced durably records t as the time up to which the cache
	// holds everything the cloud had; it returns the store's errors.
	MarkSynced(t time.Time) error
	// OutboxStats returns how many facts wait and when the oldest
	// happened; it returns the store's errors.
	OutboxStats() (depth int, oldest time.Time, err error)
}

// EdgeConfig configures the edge half. Zero durations and sizes take the
// defaults given.
type EdgeConfig struct {
	BrokerURL string      // tcp://host:1883, ssl://host:8883, ...
	Username  string      // the edge's broker credentials
	Password  string      //
	TLS       *tls.Config // for ssl:// brokers; nil uses paho's default

	Site   protocol.Site
	EdgeID string // also the MQTT client ID, so the broker keeps its session
	Store  EdgeStore
	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now

	Software string // reported in the status, e.g. "svc-edge 1.4.2"
	// BadgeKey is the public half of the appliance's walk-in badge key
	// (edge/badgekey), sent in every online status for the cloud to
	// certify for the site; nil sends none.
	BadgeKey ed25519.PublicKey
	// Health, when set, says what an online status tells the cloud's
	// fleet of the appliance beside the sync's own figures: its cache's
	// counts and the bytes free on its data partition (issue 17). Its
	// error leaves them out of that status.
	Health func() (protocol.CacheCounts, uint64, error)
	// HardwareError, when set, says why the appliance could not drive
	// the hardware the cloud sent it, for an online status to carry (""
	// when nothing went wrong); a longer text is cut to what the status
	// holds. When what it says changes, a status goes out at the next
	// tick rather than at StatusEvery, so the cloud learns it at once.
	HardwareError func() string

	// ResyncEvery is how often the edge asks "anything after my
	// sequence?" when nothing else happens: the answer refreshes the sync
	// time that the offline limit is measured from. Default 30s.
	ResyncEvery time.Duration
	// ResyncTimeout is how long a resync request may go without an answer
	// (or a snapshot without its next part) before it is asked again.
	// Default 15s.
	ResyncTimeout time.Duration
	// AckTimeout is how long a published fact may go unacknowledged
	// before it is published again. Default 30s. A fact that goes
	// unacknowledged parkAfter times while the cloud answers other
	// messages is parked: left out of the window for a while (parkFor), so
	// that facts the cloud rejects (it never acknowledges them) cannot
	// hold the window against every later fact.
	AckTimeout time.Duration
	// Window bounds the facts published and not yet acknowledged.
	// Default DefaultWindow.
	Window int
	// StatusEvery is how often the retained online status is refreshed.
	// Default 60s.
	StatusEvery time.Duration
	// SyncedEvery is the least time between two MarkSynced writes.
	// Default 10s.
	SyncedEvery time.Duration

	KeepAlive      time.Duration // MQTT keep-alive, default 30s
	ConnectTimeout time.Duration // one connection attempt, default 10s
	WriteTimeout   time.Duration // one publication handed to the socket, default 10s
	MinBackoff     time.Duration // first delay between attempts, default 500ms
	MaxBackoff     time.Duration // largest delay, default 30s
}

// DefaultWindow is EdgeConfig.Window's default: the facts an edge keeps
// published and unacknowledged. A fact's acknowledgement comes back once
// the cloud has committed it, so the window is what keeps the cloud busy
// while a batch commits and its acknowledgements travel back: at 256 the
// cloud waited for facts about half the time of a drain, at 768 it
// drains 28–57% faster (both stores) (docs/performance.md, "The drain's
// window (issue 20)"). It stays under Mosquitto's default queue of 1,000
// messages a client, past which the broker drops QoS 1 messages (and the
// edge publishes them again only after AckTimeout).
const DefaultWindow = 768

// Validate names the first unusable field, wrapping ErrConfig.
func (c *EdgeConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if err := checkBrokerURL(c.BrokerURL); err != nil {
		return bad("BrokerURL %q: %v", c.BrokerURL, err)
	}
	switch {
	case !c.Site.Valid():
		return bad("Site %+v is not a valid site", c.Site)
	case !ids.Valid(ids.Edge, c.EdgeID):
		return bad("EdgeID %q is not an edge ID", c.EdgeID)
	case c.Store == nil:
		return bad("Store is nil")
	case c.Window < 0 || c.Window > 10_000:
		return bad("Window %d is not between 1 and 10000", c.Window)
	case len(c.Software) > 64:
		return bad("Software is longer than 64 bytes")
	case c.BadgeKey != nil && len(c.BadgeKey) != ed25519.PublicKeySize:
		return bad("BadgeKey has %d bytes, not an Ed25519 public key's %d", len(c.BadgeKey), ed25519.PublicKeySize)
	}
	for name, d := range map[string]time.Duration{
		"ResyncEvery": c.ResyncEvery, "ResyncTimeout": c.ResyncTimeout, "AckTimeout": c.AckTimeout,
		"StatusEvery": c.StatusEvery, "SyncedEvery": c.SyncedEvery, "KeepAlive": c.KeepAlive,
		"ConnectTimeout": c.ConnectTimeout, "WriteTimeout": c.WriteTimeout,
		"MinBackoff": c.MinBackoff, "MaxBackoff": c.MaxBackoff,
	} {
		if d < 0 {
			return bad("%s is negative", name)
		}
	}
	return nil
}

func (c *EdgeConfig) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ResyncEvery, 30*time.Second)
	def(&c.ResyncTimeout, 15*time.Second)
	def(&c.AckTimeout, 30*time.Second)
	def(&c.StatusEvery, 60*time.Second)
	def(&c.SyncedEvery, 10*time.Second)
	def(&c.KeepAlive, defaultKeepAlive)
	def(&c.ConnectTimeout, defaultConnectTimeout)
	def(&c.WriteTimeout, defaultWriteTimeout)
	def(&c.MinBackoff, defaultMinBackoff)
	def(&c.MaxBackoff, defaultMaxBackoff)
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// EdgeState is the edge half's view of its link to the cloud, for status
// commands and metrics.
type EdgeState struct {
	Connected bool // to the broker, subscribed
	// LastContact is when the last valid message from the cloud arrived
	// (a feed batch or a reply); zero before the first.
	LastContact time.Time
	// SyncedAt is when the last completed resync was asked: the cache then
	// held everything the cloud had sent until that moment. Zero before
	// the first since Run started; the store keeps the durable value.
	SyncedAt     time.Time
	Seq          uint64
	OutboxDepth  int
	OutboxOldest time.Time // zero when the outbox is empty
	InFlight     int       // facts published and not yet acknowledged
	Resyncing    bool      // a resync request is outstanding
	Counters     EdgeCounters
}

// TakingFacts reports whether the cloud takes the site's facts at now: the
// broker is connected and no fact has waited longer than wait for its
// acknowledgement. The reception kiosk says the site is offline when not.
func (s EdgeState) TakingFacts(now time.Time, wait time.Duration) bool {
	return s.Connected && (s.OutboxDepth == 0 || s.OutboxOldest.IsZero() || now.Sub(s.OutboxOldest) < wait)
}

// EdgeCounters count events since NewEdge.
type EdgeCounters struct {
	Connects       uint64
	ConnectErrors  uint64 // failed connection attempts
	ChangesApplied uint64
	ResyncRequests uint64
	Snapshots      uint64 // snapshots applied
	FactsPublished uint64 // including republications
	FactsAcked     uint64 // removed from the outbox on an acknowledgement
	Dropped        uint64 // malformed or foreign messages, and any the inbox had no room for
}

// Edge is the appliance's half of the sync: it keeps the cache's change
// feed current and delivers the outbox to the cloud.
type Edge struct {
	cfg    EdgeConfig
	log    *slog.Logger
	in     *inbox
	notify chan struct{}
	tick   time.Duration
	ran    atomic.Bool

	// Owned by Run's goroutine.
	inflight map[string]time.Time // fact ID → last published
	// published is the highest counter of the facts published on this
	// connection: every outbox fact at or below it is in flight, parked
	// or does not encode (a fact that leaves the window unacknowledged, or
	// its parking, sets it back to 0), so flush reads on past it.
	published uint64
	// held are the acknowledgements waiting for the feed to reach their
	// Seq (holdAck), in the order they came.
	held    []protocol.Reply
	rs      *resync // the outstanding request, if any
	highest uint64  // the highest sequence seen on the feed
	// seenSince is the highest sequence of the batches that arrived
	// since the outstanding resync request was sent: what the feed
	// reached while the request ran. When the answer is a snapshot behind
	// the request (the cloud's feed went back, a restored database),
	// highest becomes the snapshot's Seq or this, whichever is higher:
	// kept at the old feed's head, it had the edge ask again after every
	// answer until the new feed passed it.
	seenSince   uint64
	syncedAt    time.Time // see EdgeState.SyncedAt
	markedAt    time.Time // the syncedAt last given to MarkSynced
	markWritten time.Time // when it was written
	nextPoll    time.Time
	nextStatus  time.Time
	sentSeq     uint64          // the Seq of the last online status published
	caughtUp    bool            // a resync was answered on this connection (resynced)
	sentHWErr   string          // the HardwareError of the last online status published
	badFacts    map[string]bool // outbox facts that do not encode, logged once
	// unacked counts, by fact ID, the times a fact left the window
	// unacknowledged (AckTimeout) while the cloud answered other messages
	// (heard after the fact was published): the cloud works, and does not
	// acknowledge this fact. A cloud that answers nothing (its database
	// down) counts nothing: its facts are not parked, and go out again
	// every AckTimeout as before. parked holds the facts counted parkAfter
	// times or more, until when flush leaves them out.
	unacked map[string]int
	parked  map[string]time.Time
	heard   time.Time // the last message from the cloud (contact)

	mu    sync.Mutex
	state EdgeState
}

// resync is an outstanding ResyncRequest and the snapshot parts gathered
// for it.
type resync struct {
	id string
	// after is the request's After: the store's Seq when it was asked.
	after    uint64
	sentAt   time.Time
	progress time.Time // the request, or its last snapshot part
	parts    map[int]protocol.Snapshot
	total    int
	seq      uint64
}

// NewEdge checks cfg and returns an edge half; Run starts it.
func NewEdge(cfg EdgeConfig) (*Edge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	e := &Edge{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "mqttsync-edge", "edge_id", cfg.EdgeID, "site_id", cfg.Site.SiteID),
		in:       newInbox(inboxLimit, inboxBytes),
		notify:   make(chan struct{}, 1),
		inflight: make(map[string]time.Time),
		badFacts: make(map[string]bool),
		unacked:  make(map[string]int),
		parked:   make(map[string]time.Time),
	}
	e.tick = min(cfg.ResyncEvery, cfg.ResyncTimeout, cfg.AckTimeout, cfg.StatusEvery, cfg.SyncedEvery) / 4
	e.tick = max(10*time.Millisecond, min(e.tick, time.Second))
	return e, nil
}

// Notify tells the edge half that a fact was just recorded, so it
// publishes now rather than at its next tick. It never blocks.
func (e *Edge) Notify() {
	select {
	case e.notify <- struct{}{}:
	default:
	}
}

// State returns the current state; safe to call from any goroutine.
func (e *Edge) State() EdgeState {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.state
	s.Counters.Dropped += e.in.droppedCount()
	return s
}

func (e *Edge) count(f func(*EdgeCounters)) {
	e.mu.Lock()
	f(&e.state.Counters)
	e.mu.Unlock()
}

// Run connects to the broker (retrying with backoff for as long as ctx
// lasts), keeps the cache's feed current and delivers the outbox, until
// ctx ends. On the way out it publishes its offline status. It returns nil
// once ctx ends; it is called once.
func (e *Edge) Run(ctx context.Context) error {
	if e.ran.Swap(true) {
		return errors.New("mqttsync: Edge.Run called twice")
	}
	bo := backoff{min: e.cfg.MinBackoff, max: e.cfg.MaxBackoff}
	for ctx.Err() == nil {
		c, lost, err := e.connect(ctx)
		if err == nil {
			bo.reset()
			err = e.session(ctx, c, lost)
		}
		e.setConnected(false)
		if ctx.Err() != nil {
			break
		}
		d := bo.next()
		e.count(func(n *EdgeCounters) { n.ConnectErrors++ })
		e.log.Warn("no connection to the broker; retrying", "error", err, "retry_in", d)
		sleep(ctx, d)
	}
	return nil
}

// connect dials with a last will saying offline, and subscribes to the
// site's feed and the edge's replies.
func (e *Edge) connect(ctx context.Context) (paho.Client, <-chan error, error) {
	will, err := e.status("offline")
	if err != nil {
		return nil, nil, err
	}
	lost := make(chan error, 1)
	c, err := dial(ctx, dialConfig{
		url: e.cfg.BrokerURL, username: e.cfg.Username, password: e.cfg.Password,
		clientID: e.cfg.EdgeID, tls: e.cfg.TLS,
		cleanSession: false, // QoS 1 messages queued while offline are kept
		keepAlive:    e.cfg.KeepAlive, connectTimeout: e.cfg.ConnectTimeout, writeTimeout: e.cfg.WriteTimeout,
		willTopic: e.cfg.Site.Status(e.cfg.EdgeID), willPayload: will,
		onMessage: func(m message) { e.in.push(m) },
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
	if err := subscribe(c, []string{e.cfg.Site.Changes(), e.cfg.Site.Replies(e.cfg.EdgeID)}, e.cfg.ConnectTimeout); err != nil {
		c.Disconnect(0)
		return nil, nil, err
	}
	return c, lost, nil
}

// session runs one connection until it is lost or ctx ends.
func (e *Edge) session(ctx context.Context, c paho.Client, lost <-chan error) error {
	e.log.Info("connected to the broker")
	e.count(func(n *EdgeCounters) { n.Connects++ })
	e.setConnected(true)
	// Whatever was in flight on the last connection is published again,
	// and the edge asks for what it missed while away.
	clear(e.inflight)
	clear(e.parked) // tried at once on a new connection (a cloud upgraded meanwhile may take them)
	e.published = 0
	e.rs = nil
	e.caughtUp = false
	e.publishStatus(c)
	e.requestResync(c)
	e.flush(c)
	e.refresh()

	t := time.NewTicker(e.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			e.goOffline(c)
			return ctx.Err()
		case err := <-lost:
			c.Disconnect(0)
			return fmt.Errorf("connection lost: %w", err)
		case <-e.in.ready:
			if e.handleAll(c, e.in.take(0)) {
				e.flush(c)
			}
		case <-e.notify:
			e.flush(c)
		case <-t.C:
			e.onTick(c)
		}
		e.refresh()
	}
}

// goOffline says so in the retained status (a clean disconnect suppresses
// the last will) and disconnects.
func (e *Edge) goOffline(c paho.Client) {
	if b, err := e.status("offline"); err == nil {
		if err := wait(c.Publish(e.cfg.Site.Status(e.cfg.EdgeID), 1, true, b), 2*time.Second); err != nil {
			e.log.Warn("publish offline status", "error", err)
		}
	}
	c.Disconnect(250)
}

// handle decodes and applies one message, reporting whether it
// acknowledged facts (so the window has room).
func (e *Edge) handle(c paho.Client, m message) bool { return e.handleAll(c, []message{m}) }

// inMsg is a decoded message: a feed batch or a reply.
type inMsg struct {
	batch *protocol.Batch
	reply *protocol.Reply
}

// handleAll decodes and applies the messages taken at once, reporting
// whether they acknowledged facts (so the window has room). Each write is
// a durable transaction, so what came together is written together: the
// feed batches and replies in order, runs of batches that follow on from
// one another applied as one run, then the acknowledgements of every ack
// among them that the cache's feed has reached in one Ack (releaseAcks).
func (e *Edge) handleAll(c paho.Client, msgs []message) bool {
	rest := make([]inMsg, 0, len(msgs))
	for _, m := range msgs {
		site, kind, edgeID, err := protocol.ParseTopic(m.topic)
		switch {
		case err != nil || site != e.cfg.Site:
			e.drop(m, "not a topic of this site")
		case kind == protocol.KindChanges:
			var b protocol.Batch
			if err := protocol.Decode(m.payload, &b); err != nil {
				e.drop(m, err.Error())
				continue
			}
			e.contact()
			rest = append(rest, inMsg{batch: &b})
		case kind == protocol.KindReplies && edgeID == e.cfg.EdgeID:
			var r protocol.Reply
			if err := protocol.Decode(m.payload, &r); err != nil {
				e.drop(m, err.Error())
				continue
			}
			e.contact()
			if r.Kind == protocol.ReplyAck {
				e.holdAck(r)
				continue
			}
			rest = append(rest, inMsg{reply: &r})
		default:
			e.drop(m, "not a topic this edge reads")
		}
	}
	acked := false
	var run []protocol.Change
	for _, m := range rest {
		if m.batch != nil {
			cs := m.batch.Changes
			if len(run) > 0 && cs[0].Seq == run[len(run)-1].Seq+1 {
				run = append(run, cs...)
				continue
			}
			if len(run) > 0 {
				e.onBatch(c, protocol.Batch{Changes: run})
			}
			run = slices.Clip(cs)
			continue
		}
		if len(run) > 0 {
			e.onBatch(c, protocol.Batch{Changes: run})
			run = nil
		}
		acked = e.onReply(c, *m.reply) || acked
	}
	if len(run) > 0 {
		e.onBatch(c, protocol.Batch{Changes: run})
	}
	return e.releaseAcks(c) || acked
}

// maxHeld bounds the acknowledgements waiting for the feed. Their facts
// stay in flight, so the window bounds them, but for a fact published
// again (AckTimeout, a new connection) the cloud acknowledges again; past
// the bound the oldest are dropped, and their facts, still in the outbox,
// are published and acknowledged again.
const maxHeld = 1024

// holdAck keeps an acknowledgement until the cache's feed reaches its
// Seq (protocol.Reply.Seq; 0 from a cloud that sends none, released at
// once). Removing a fact from the outbox ends the cache's merge of the
// visit it names, which then takes the cloud's latest version of the
// visit received meanwhile: the acknowledgement can arrive before the
// feed change the fact made (the cloud sends each from its own loop), and
// taken then, that version is an earlier one. A check-out acknowledged
// before its change arrived would put the visitor back inside.
func (e *Edge) holdAck(r protocol.Reply) {
	if len(e.held) == maxHeld {
		e.log.Warn("acknowledgements waiting for the feed dropped; their facts will be published again", "facts", len(e.held[0].Acks), "seq", e.held[0].Seq, "cache_seq", e.cfg.Store.Seq())
		e.held = slices.Delete(e.held, 0, 1)
	}
	e.held = append(e.held, r)
}

// releaseAcks removes from the outbox, in one Ack, the facts of the held
// acknowledgements the cache's feed has reached, reporting whether it
// did. The window's room goes to the next facts first: they are read past
// the last one published, so the acknowledged ones, still in the outbox
// until Ack commits, are not published again, and the cloud works on the
// next facts while the edge writes the Ack. (A flush that reads from the
// oldest, published 0, would send them again: it waits for the Ack.)
func (e *Edge) releaseAcks(c paho.Client) bool {
	if len(e.held) == 0 {
		return false
	}
	seq := e.cfg.Store.Seq()
	var ids []string
	keep := e.held[:0]
	for _, r := range e.held {
		if r.Seq > seq {
			keep = append(keep, r)
			continue
		}
		ids = append(ids, r.Acks...)
	}
	clear(e.held[len(keep):])
	e.held = keep
	if len(ids) == 0 {
		return false
	}
	if e.published > 0 {
		for _, id := range ids {
			delete(e.inflight, id)
		}
		e.flush(c)
	}
	return e.onAcks(ids)
}

func (e *Edge) drop(m message, why string) {
	e.log.Warn("message dropped", "topic", m.topic, "bytes", len(m.payload), "reason", why)
	e.count(func(n *EdgeCounters) { n.Dropped++ })
}

func (e *Edge) contact() {
	now := e.cfg.Now()
	e.heard = now
	e.mu.Lock()
	e.state.LastContact = now
	e.mu.Unlock()
}

func (e *Edge) onBatch(c paho.Client, b protocol.Batch) {
	last := b.Changes[len(b.Changes)-1].Seq
	e.highest, e.seenSince = max(e.highest, last), max(e.seenSince, last)
	if e.rs != nil && e.rs.parts != nil {
		// A snapshot is arriving and will reset the sequence; what
		// follows it is asked for once it is applied.
		return
	}
	if !e.applyRun(b.Changes) && e.rs == nil {
		e.requestResync(c)
	}
}

// applyRun applies the part of a run past Seq, reporting false when it
// does not follow on (a gap) or the store refused it.
func (e *Edge) applyRun(cs []protocol.Change) bool {
	seq := e.cfg.Store.Seq()
	i := sort.Search(len(cs), func(i int) bool { return cs[i].Seq > seq })
	if i == len(cs) {
		return true // seen before
	}
	if cs[i].Seq != seq+1 {
		e.log.Info("gap in the change feed", "seq", seq, "next", cs[i].Seq)
		return false
	}
	n, err := e.cfg.Store.Apply(cs[i:])
	if err != nil {
		e.log.Error("apply changes", "seq", seq, "from", cs[i].Seq, "to", cs[len(cs)-1].Seq, "error", err)
		return false
	}
	e.count(func(c *EdgeCounters) { c.ChangesApplied += uint64(n) })
	return true
}

// onAcks removes acknowledged facts from the outbox, in one transaction,
// reporting whether it did.
func (e *Edge) onAcks(acks []string) bool {
	removed, err := e.cfg.Store.Ack(acks)
	if err != nil {
		// The facts stay in the outbox; the next flush reads from the
		// oldest and publishes them again (they are out of the window),
		// and the cloud acknowledges them again.
		e.log.Error("remove acknowledged facts", "error", err)
		for _, id := range acks {
			delete(e.inflight, id)
		}
		e.published = 0
		return false
	}
	for _, id := range acks {
		delete(e.inflight, id)
		delete(e.unacked, id)
		delete(e.parked, id)
	}
	e.count(func(n *EdgeCounters) { n.FactsAcked += uint64(removed) })
	return true
}

func (e *Edge) onReply(c paho.Client, r protocol.Reply) bool {
	if e.rs == nil || r.RequestID != e.rs.id {
		e.log.Debug("reply to an earlier request ignored", "request_id", r.RequestID)
		return false
	}
	now := e.cfg.Now()
	switch r.Kind {
	case protocol.ReplyChanges:
		if !e.applyRun(r.Changes) {
			return false // asked again when the request times out
		}
		if r.More {
			e.rs = nil
			e.requestResync(c)
			return false
		}
		e.resynced()
	case protocol.ReplySnapshot:
		p := *r.Snapshot
		rs := e.rs
		if rs.parts == nil {
			rs.parts, rs.total, rs.seq = make(map[int]protocol.Snapshot), p.Parts, p.Seq
		}
		if p.Parts != rs.total || p.Seq != rs.seq {
			e.log.Warn("snapshot part does not match the others", "request_id", r.RequestID, "part", p.Part, "parts", p.Parts, "seq", p.Seq)
			return false
		}
		rs.parts[p.Part] = p
		rs.progress = now
		if len(rs.parts) < rs.total {
			return false
		}
		if seq := e.cfg.Store.Seq(); rs.seq >= rs.after && rs.seq < seq {
			// Batches that followed on from the request's Seq were applied
			// while the snapshot was made and sent (before its first part
			// arrived): the cache is past it, and replacing the cache would
			// take the changes since back out until the next resync. (A
			// snapshot behind the request itself is the cloud's feed gone
			// back, a restored database: that one replaces the cache.)
			e.log.Info("snapshot dropped: the cache is past it", "seq", rs.seq, "cache_seq", seq)
			e.resynced()
			break
		}
		parts := make([]protocol.Snapshot, 0, rs.total)
		for i := 1; i <= rs.total; i++ {
			parts = append(parts, rs.parts[i])
		}
		if err := e.cfg.Store.ReplaceSnapshot(parts); err != nil {
			e.log.Error("replace the cache with a snapshot", "seq", rs.seq, "parts", rs.total, "error", err)
			rs.parts = nil // asked again when the request times out
			return false
		}
		if rs.seq < rs.after {
			// The cloud's feed went back (a restored database): what the
			// edge saw of the old one claims nothing any more. Only the
			// batches that arrived since the request are still ahead.
			e.highest = max(rs.seq, e.seenSince)
		}
		e.log.Info("snapshot applied", "seq", rs.seq, "parts", rs.total)
		e.count(func(n *EdgeCounters) { n.Snapshots++ })
		// The status sent as the edge connected said what it held before
		// the snapshot: the fleet hears the new figures at the next tick,
		// not a status period later.
		e.nextStatus = time.Time{}
		e.resynced()
	}
	if e.highest > e.cfg.Store.Seq() {
		e.requestResync(c) // the feed went on while the resync ran
	}
	return false
}

// resynced closes the outstanding request: the cache now holds everything
// the cloud had when it was sent.
//
// The first one on a connection also says so: when the cache moved since
// the last status (the one sent as the edge connected, which said what it
// held then), the status goes out at the next tick rather than a status
// period later. However the cache caught up (the reply's changes, or the
// feed's batches that a cloud publishes as it connects, which leave the
// reply empty), the fleet sees the figures of a synced cache at once; and
// a cloud that subscribed after the edge connected, which may not have
// heard even the first status, hears this one.
func (e *Edge) resynced() {
	if !e.caughtUp && e.cfg.Store.Seq() != e.sentSeq {
		e.nextStatus = time.Time{}
	}
	e.caughtUp = true
	e.syncedAt = e.rs.sentAt
	e.rs = nil
	e.mu.Lock()
	e.state.SyncedAt = e.syncedAt
	e.mu.Unlock()
	e.markSynced()
}

// requestResync asks for the changes after Seq, unless a request is
// outstanding. A failed publication is retried when the request times out.
func (e *Edge) requestResync(c paho.Client) {
	if e.rs != nil {
		return
	}
	now := e.cfg.Now()
	req := protocol.ResyncRequest{RequestID: newRequestID(), After: e.cfg.Store.Seq()}
	e.rs = &resync{id: req.RequestID, after: req.After, sentAt: now, progress: now}
	e.seenSince = 0
	e.nextPoll = now.Add(e.cfg.ResyncEvery)
	e.count(func(n *EdgeCounters) { n.ResyncRequests++ })
	b, err := protocol.Encode(&req)
	if err != nil {
		e.log.Error("encode resync request", "error", err)
		return
	}
	c.Publish(e.cfg.Site.Resync(e.cfg.EdgeID), 1, false, b)
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// flush publishes outbox facts not yet in flight, oldest first, while the
// window has room. Publications are not waited for: the cloud's
// acknowledgement is what counts, and AckTimeout republishes what was lost.
// Facts in flight, parked or that do not encode are passed over, reading on
// page by page: however many of them sit at the outbox's head, the facts
// after them are published.
func (e *Edge) flush(c paho.Client) {
	if len(e.inflight) >= e.cfg.Window {
		return
	}
	now := e.cfg.Now()
	topic := e.cfg.Site.Facts(e.cfg.EdgeID)
	published := 0
	for after, more := e.published, true; more && len(e.inflight) < e.cfg.Window; {
		n := e.cfg.Window - len(e.inflight) // past what was published: k facts read for k acknowledged
		if after == 0 {
			n = e.cfg.Window // from the oldest, past those in flight
		}
		facts, err := e.cfg.Store.OutboxAfter(after, n)
		if err != nil {
			e.log.Error("read the outbox", "error", err)
			break
		}
		more = len(facts) == n
		for i := range facts {
			f := &facts[i]
			after = f.Counter
			_, flying := e.inflight[f.ID]
			_, parked := e.parked[f.ID]
			if flying || parked || e.badFacts[f.ID] {
				e.published = max(e.published, f.Counter)
				continue
			}
			if len(e.inflight) >= e.cfg.Window {
				more = false
				break
			}
			f.AckSeq = true // this edge holds acknowledgements for the feed
			b, err := protocol.Encode(f)
			if err != nil {
				e.badFacts[f.ID] = true
				e.log.Error("an outbox fact does not encode; it stays in the outbox", "fact_id", f.ID, "error", err)
				e.published = max(e.published, f.Counter)
				continue
			}
			c.Publish(topic, 1, false, b)
			e.inflight[f.ID] = now
			e.published = max(e.published, f.Counter)
			published++
		}
	}
	if published > 0 {
		e.count(func(n *EdgeCounters) { n.FactsPublished += uint64(published) })
	}
}

// parkAfter is how many times in a row a fact may go unacknowledged before
// it is parked.
const parkAfter = 3

// parkFor is how long a fact is parked after its n-th time unacknowledged
// (n >= parkAfter): twice AckTimeout, doubling each time, at most 8 times
// (4 minutes at the default).
func (e *Edge) parkFor(n int) time.Duration {
	return e.cfg.AckTimeout << min(n-parkAfter+1, 3)
}

func (e *Edge) onTick(c paho.Client) {
	now := e.cfg.Now()
	if e.rs != nil && now.Sub(e.rs.progress) >= e.cfg.ResyncTimeout {
		e.log.Info("resync request unanswered; asking again", "request_id", e.rs.id)
		e.rs = nil
		e.requestResync(c)
	}
	if e.rs == nil && !now.Before(e.nextPoll) {
		e.requestResync(c)
	}
	for id, at := range e.inflight {
		if now.Sub(at) >= e.cfg.AckTimeout {
			delete(e.inflight, id) // published again by flush,
			e.published = 0        // which reads from the oldest
			if !e.heard.After(at) {
				continue // the cloud said nothing since: an outage, not this fact
			}
			e.unacked[id]++
			if n := e.unacked[id]; n >= parkAfter {
				e.parked[id] = now.Add(e.parkFor(n))
				if n == parkAfter {
					e.log.Warn("a fact goes unacknowledged; it is parked and tried less often, and the facts after it go on",
						"fact_id", id, "times", n)
				}
			}
		}
	}
	for id, until := range e.parked {
		if !now.Before(until) {
			delete(e.parked, id) // published again by flush,
			e.published = 0      // which reads from the oldest
		}
	}
	if !now.Before(e.nextStatus) || e.hardwareError() != e.sentHWErr {
		e.publishStatus(c) // and at once when the hardware's error changes
	}
	e.markSynced()
	e.flush(c)
}

// markSynced writes the sync time when it advanced: the first time at
// once, then at most once per SyncedEvery (each write is a durable one).
func (e *Edge) markSynced() {
	if !e.syncedAt.After(e.markedAt) {
		return
	}
	now := e.cfg.Now()
	if !e.markWritten.IsZero() && now.Sub(e.markWritten) < e.cfg.SyncedEvery {
		return
	}
	if err := e.cfg.Store.MarkSynced(e.syncedAt); err != nil {
		e.log.Error("record the sync time", "error", err)
		return
	}
	e.markedAt, e.markWritten = e.syncedAt, now
}

// status encodes the edge's status in state.
func (e *Edge) status(state string) ([]byte, error) {
	depth, oldest, err := e.cfg.Store.OutboxStats()
	if err != nil {
		e.log.Error("read outbox stats", "error", err)
	}
	st := protocol.Status{
		EdgeID: e.cfg.EdgeID, State: state, At: e.cfg.Now().UTC().Truncate(time.Microsecond),
		Seq: e.cfg.Store.Seq(), Outbox: depth, Software: e.cfg.Software,
	}
	if state == "online" {
		st.BadgeKey = e.cfg.BadgeKey
		if depth > 0 && !oldest.IsZero() {
			at := oldest.UTC().Truncate(time.Microsecond)
			st.OutboxOldest = &at
		}
		if e.cfg.Health != nil {
			if counts, free, err := e.cfg.Health(); err != nil {
				e.log.Warn("read the appliance's health for its status", "error", err)
			} else {
				st.Cache, st.DiskFree = &counts, &free
			}
		}
		st.HardwareError = e.hardwareError()
	}
	b, err := protocol.Encode(&st)
	if err != nil {
		return nil, fmt.Errorf("encode status: %w", err)
	}
	return b, nil
}

// hardwareError is what an online status says of the hardware now.
func (e *Edge) hardwareError() string {
	if e.cfg.HardwareError == nil {
		return ""
	}
	return clipText(e.cfg.HardwareError(), protocol.MaxHardwareError)
}

// publishStatus publishes the retained online status.
func (e *Edge) publishStatus(c paho.Client) {
	e.nextStatus = e.cfg.Now().Add(e.cfg.StatusEvery)
	e.sentSeq = e.cfg.Store.Seq()
	b, err := e.status("online")
	if err != nil {
		e.log.Error("status", "error", err)
		return
	}
	e.sentHWErr = e.hardwareError()
	c.Publish(e.cfg.Site.Status(e.cfg.EdgeID), 1, true, b)
}

func (e *Edge) setConnected(v bool) {
	e.mu.Lock()
	e.state.Connected = v
	e.mu.Unlock()
}

// refresh copies the loop's view into the state State returns.
func (e *Edge) refresh() {
	depth, oldest, err := e.cfg.Store.OutboxStats()
	if err != nil {
		e.log.Error("read outbox stats", "error", err)
	}
	seq := e.cfg.Store.Seq()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state.Seq = seq
	if err == nil {
		e.state.OutboxDepth, e.state.OutboxOldest = depth, oldest
	}
	e.state.InFlight = len(e.inflight)
	e.state.Resyncing = e.rs != nil
}

// clipText cuts s to at most n bytes, dropping a character cut in two.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
