package mqttsync

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func newSite() protocol.Site {
	return protocol.Site{Mode: "test", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}
}

func newVisit(name string) protocol.Visit {
	id := ids.New(ids.Visit)
	return protocol.Visit{
		ID: id, Status: string(passrule.Expected), ForVisitID: id,
		ExpectedAt: ptr(t0), ExpectedUntil: ptr(t0.Add(8 * time.Hour)),
		Rules:       protocol.Rules{Window: protocol.Window{Before: 30, After: 15}, GateIDs: []string{}},
		VisitorName: name, HostName: "Ada Lovelace",
	}
}

var errGap = errors.New("fake edge store: gap")

// fakeEdge is an in-memory EdgeStore that checks what the edge half asks
// of it as the bbolt cache does: runs consecutive, no gaps, snapshots
// whole.
type fakeEdge struct {
	mu        sync.Mutex
	seq       uint64
	applied   []uint64 // every sequence applied, in the order applied
	visits    map[string]protocol.Visit
	snapshots [][]protocol.Snapshot // each ReplaceSnapshot's parts
	outbox    []protocol.Fact       // by counter
	counter   uint64
	acked     []string
	synced    []time.Time
	edgeID    string
	onAck     func(ids []string) // called before facts are removed
	applies   int                // Apply calls
	acks      int                // Ack calls
	read      int                // facts OutboxAfter returned
	ackErr    error              // Ack fails with it when set
}

func newFakeEdge(edgeID string) *fakeEdge {
	return &fakeEdge{edgeID: edgeID, visits: make(map[string]protocol.Visit)}
}

func (s *fakeEdge) Seq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

func (s *fakeEdge) Apply(cs []protocol.Change) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applies++
	for i := 1; i < len(cs); i++ {
		if cs[i].Seq != cs[i-1].Seq+1 {
			return 0, fmt.Errorf("%w: run not consecutive", protocol.ErrInvalid)
		}
	}
	n := 0
	for _, c := range cs {
		if c.Seq <= s.seq {
			continue
		}
		if c.Seq != s.seq+1 {
			return n, errGap
		}
		s.seq = c.Seq
		s.applied = append(s.applied, c.Seq)
		if c.Visit != nil {
			s.visits[c.Visit.ID] = *c.Visit
		}
		n++
	}
	return n, nil
}

func (s *fakeEdge) ReplaceSnapshot(parts []protocol.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(parts) == 0 {
		return errors.New("no parts")
	}
	visits := make(map[string]protocol.Visit)
	for i, p := range parts {
		if p.Part != i+1 || p.Parts != len(parts) || p.Seq != parts[0].Seq {
			return fmt.Errorf("%w: part %d of %d at %d", protocol.ErrInvalid, p.Part, p.Parts, p.Seq)
		}
		for _, v := range p.Visits {
			if _, dup := visits[v.ID]; dup {
				return fmt.Errorf("%w: visit %s twice", protocol.ErrInvalid, v.ID)
			}
			visits[v.ID] = v
		}
	}
	s.visits = visits
	s.seq = parts[0].Seq
	s.snapshots = append(s.snapshots, slices.Clone(parts))
	return nil
}

func (s *fakeEdge) OutboxAfter(after uint64, limit int) ([]protocol.Fact, error) {
	s.mu.Lock()
	i := 0
	for i < len(s.outbox) && s.outbox[i].Counter <= after {
		i++
	}
	out := slices.Clone(s.outbox[i:])
	s.mu.Unlock()
	if limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	s.mu.Lock()
	s.read += len(out)
	s.mu.Unlock()
	return out, nil
}

func (s *fakeEdge) Outbox(limit int) ([]protocol.Fact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.outbox)
	if limit > 0 && limit < n {
		n = limit
	}
	return slices.Clone(s.outbox[:n]), nil
}

func (s *fakeEdge) Ack(ids []string) (int, error) {
	if s.onAck != nil {
		s.onAck(ids)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ackErr != nil {
		return 0, s.ackErr
	}
	s.acks++
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	before := len(s.outbox)
	s.outbox = slices.DeleteFunc(s.outbox, func(f protocol.Fact) bool { return gone[f.ID] })
	s.acked = append(s.acked, ids...)
	return before - len(s.outbox), nil
}

func (s *fakeEdge) MarkSynced(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.synced = append(s.synced, t)
	return nil
}

func (s *fakeEdge) OutboxStats() (int, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.outbox) == 0 {
		return 0, time.Time{}, nil
	}
	return len(s.outbox), s.outbox[0].At, nil
}

// record appends n check-in facts to the outbox and returns their IDs.
func (s *fakeEdge) record(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, n)
	gate := ids.New(ids.Gate)
	for i := range n {
		s.counter++
		f := protocol.Fact{
			V: protocol.Version, ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, EdgeID: s.edgeID,
			Counter: s.counter, At: t0.Add(time.Duration(s.counter) * time.Millisecond), GateID: gate,
			VisitID: ids.New(ids.Visit),
		}
		s.outbox = append(s.outbox, f)
		out[i] = f.ID
	}
	return out
}

func (s *fakeEdge) outboxLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.outbox)
}

func (s *fakeEdge) appliedSeqs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.applied)
}

func (s *fakeEdge) snapshotParts() [][]protocol.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.snapshots)
}

func (s *fakeEdge) visitCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.visits)
}

// fakeCloud is an in-memory CloudStore: per-site change feeds with a
// publication cursor, a snapshot built from the feed, and facts applied
// once by ID however often they arrive.
type fakeCloud struct {
	mu       sync.Mutex
	sites    map[protocol.Site]*fakeSite
	edges    map[string]protocol.Site // known edges
	calls    map[string]int           // facts handed to ApplyFacts, per fact ID
	applied  map[string]protocol.Fact // facts applied, once each
	statuses []statusRecord
	resyncs  []uint64 // the after of every Changes call
	failNext int      // ApplyFacts calls to fail transiently, as a whole
	batches  []int    // the number of facts of each ApplyFacts call
}

type fakeSite struct {
	changes   []protocol.Change // seq i+1 at i
	published int               // changes handed to PublishFeeds' fn
	pruned    uint64            // changes at or below are no longer kept
}

type statusRecord struct {
	site protocol.Site
	st   protocol.Status
}

func newFakeCloud() *fakeCloud {
	return &fakeCloud{
		sites: make(map[protocol.Site]*fakeSite), edges: make(map[string]protocol.Site),
		calls: make(map[string]int), applied: make(map[string]protocol.Fact),
	}
}

func (s *fakeCloud) site(site protocol.Site) *fakeSite {
	fs := s.sites[site]
	if fs == nil {
		fs = &fakeSite{}
		s.sites[site] = fs
	}
	return fs
}

// addEdge makes an edge known at site.
func (s *fakeCloud) addEdge(site protocol.Site, edgeID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.edges[edgeID] = site
	s.site(site)
}

// addVisits commits n visit changes to site's feed and returns the head.
func (s *fakeCloud) addVisits(site protocol.Site, n int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.site(site)
	for i := range n {
		v := newVisit(fmt.Sprintf("Visitor %d", len(fs.changes)+i))
		fs.changes = append(fs.changes, protocol.Change{Seq: uint64(len(fs.changes) + 1), At: t0, Visit: &v})
	}
	return uint64(len(fs.changes))
}

// addLost commits n visit changes of which the first lost are marked
// published without being published, as if their messages were lost. The
// feed must be fully published before (wait for the edge to catch up).
func (s *fakeCloud) addLost(site protocol.Site, n, lost int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.site(site)
	if fs.published != len(fs.changes) {
		panic("addLost: the feed has unpublished changes")
	}
	for i := range n {
		v := newVisit(fmt.Sprintf("Visitor %d", len(fs.changes)+i))
		fs.changes = append(fs.changes, protocol.Change{Seq: uint64(len(fs.changes) + 1), At: t0, Visit: &v})
	}
	fs.published += lost
}

// unpublished is how many of site's changes the feed has not handed over.
func (s *fakeCloud) unpublished(site protocol.Site) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.site(site)
	return len(fs.changes) - fs.published
}

func (s *fakeCloud) prune(site protocol.Site, upTo uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.site(site).pruned = upTo
}

func (s *fakeCloud) Changes(_ context.Context, site protocol.Site, after uint64, limit int) ([]protocol.Change, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resyncs = append(s.resyncs, after)
	fs := s.site(site)
	head := uint64(len(fs.changes))
	from := max(after, fs.pruned)
	if from >= head {
		return nil, head, nil
	}
	to := min(head, from+uint64(limit))
	return slices.Clone(fs.changes[from:to]), head, nil
}

func (s *fakeCloud) FeedHead(_ context.Context, site protocol.Site) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return uint64(len(s.site(site).changes)), nil
}

func (s *fakeCloud) Snapshot(_ context.Context, site protocol.Site) (protocol.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.site(site)
	snap := protocol.Snapshot{
		Seq:      uint64(len(fs.changes)),
		Settings: &protocol.Settings{Timezone: "Europe/Berlin", OfflineLimitMinutes: 60},
		Gates:    []protocol.Gate{{ID: ids.New(ids.Gate), Name: "Main", Direction: "both"}},
		Keys:     []protocol.Key{{ID: "0a1b2c3d", Public: make([]byte, ed25519.PublicKeySize)}},
	}
	seen := make(map[string]int)
	for _, c := range fs.changes {
		if c.Visit == nil {
			continue
		}
		if i, ok := seen[c.Visit.ID]; ok {
			snap.Visits[i] = *c.Visit
			continue
		}
		seen[c.Visit.ID] = len(snap.Visits)
		snap.Visits = append(snap.Visits, *c.Visit)
	}
	return snap, nil
}

func (s *fakeCloud) ApplyFacts(_ context.Context, site protocol.Site, facts []protocol.Fact) ([]error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, len(facts))
	errs := make([]error, len(facts))
	for i, f := range facts {
		s.calls[f.ID]++
		if es, ok := s.edges[f.EdgeID]; !ok || es != site {
			errs[i] = fmt.Errorf("fake cloud: edge %s of %s: %w", f.EdgeID, site.SiteID, ErrRejected)
		}
	}
	if s.failNext > 0 {
		s.failNext--
		return nil, errors.New("fake cloud: database unavailable")
	}
	for i, f := range facts {
		if _, ok := s.applied[f.ID]; !ok && errs[i] == nil {
			s.applied[f.ID] = f
		}
	}
	return errs, nil
}

// batchSizes returns the number of facts of each ApplyFacts call.
func (s *fakeCloud) batchSizes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

func (s *fakeCloud) SiteEdge(_ context.Context, site protocol.Site, edgeID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if es, ok := s.edges[edgeID]; !ok || es != site {
		return fmt.Errorf("fake cloud: edge %s of %s: %w", edgeID, site.SiteID, ErrRejected)
	}
	return nil
}

func (s *fakeCloud) EdgeStatus(_ context.Context, site protocol.Site, st protocol.Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, statusRecord{site, st})
	return nil
}

func (s *fakeCloud) PublishFeeds(ctx context.Context, limit int, fn func(protocol.Site, []protocol.Change) error) (int, error) {
	// fn publishes and waits for the broker: the lock is not held across
	// it, as a real store would not hold a transaction open.
	type run struct {
		site protocol.Site
		cs   []protocol.Change
		from int
	}
	s.mu.Lock()
	var runs []run
	total := 0
	for site, fs := range s.sites {
		if total >= limit {
			break
		}
		to := min(len(fs.changes), fs.published+limit-total)
		if to > fs.published {
			runs = append(runs, run{site, slices.Clone(fs.changes[fs.published:to]), fs.published})
			total += to - fs.published
		}
	}
	s.mu.Unlock()
	n := 0
	for _, r := range runs {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if err := fn(r.site, r.cs); err != nil {
			return n, err
		}
		s.mu.Lock()
		if fs := s.sites[r.site]; fs.published == r.from {
			fs.published += len(r.cs)
		}
		s.mu.Unlock()
		n += len(r.cs)
	}
	return n, nil
}

func (s *fakeCloud) appliedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.applied)
}

func (s *fakeCloud) isApplied(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.applied[id]
	return ok
}

func (s *fakeCloud) callTotal() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

func (s *fakeCloud) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func (s *fakeCloud) callsFor(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

func (s *fakeCloud) resyncAfters() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.resyncs)
}

// lastStatus is the last status recorded for edgeID.
func (s *fakeCloud) lastStatus(edgeID string) (protocol.Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.statuses) - 1; i >= 0; i-- {
		if s.statuses[i].st.EdgeID == edgeID {
			return s.statuses[i].st, true
		}
	}
	return protocol.Status{}, false
}

// sharedCloud is a CloudStore view over one fakeCloud that counts the
// facts it was handed: one per cloud process in the shared-subscription
// test.
type sharedCloud struct {
	*fakeCloud
	mu    sync.Mutex
	facts map[string]bool
}

func (s *sharedCloud) ApplyFacts(ctx context.Context, site protocol.Site, facts []protocol.Fact) ([]error, error) {
	s.mu.Lock()
	if s.facts == nil {
		s.facts = make(map[string]bool)
	}
	for _, f := range facts {
		s.facts[f.ID] = true
	}
	s.mu.Unlock()
	return s.fakeCloud.ApplyFacts(ctx, site, facts)
}

func (s *sharedCloud) seen() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.facts)
}
