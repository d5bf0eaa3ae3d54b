package cache

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// View is the cache's state as of one committed write. It never changes:
// each write builds a new View and swaps it in, so the gate path reads it
// without locks and a decision sees one consistent state. Its methods are
// safe for concurrent use.
type View struct {
	visits   trie[visitEntry] // like every trie of the View, never written once published
	extras   trie[visitExtra] // by visit: what few visits have (flagExtra)
	shared   []visitShared    // what visitEntry.shared names; the interner's, only ever appended to
	text     [][]byte         // the chunks of the visitors' packed text (textRef)
	gates    map[string]protocol.Gate
	keys     map[string]protocol.Key     // retired ones included
	keySet   passtoken.KeySet            // the organisation's keys not retired
	badges   map[string]passtoken.KeySet // by site: the badge keys not retired
	retireAt int64                       // the earliest RetireAt of keySet's keys; 0 when none has one
	settings *protocol.Settings
	loc      *time.Location
	seq      uint64
	syncedAt time.Time
	outbox   int
	people   trie[protocol.Person]
	punches  trie[protocol.Fact] // by person: the last punch recorded here

	// The reception kiosk's (kiosk.go).
	teams  map[string]protocol.Team
	types  map[string]protocol.VisitType
	search *peopleIndex // rebuilt when people change

	// hardware is the hardware the cloud sent for this edge (issue 17);
	// nil when it sent none, or cleared it.
	hardware *hardware.Document
}

// Hardware returns the hardware the cloud sent for this edge, which the
// appliance drives in place of its configuration file's gates; false when
// the cloud sent none (or cleared it). The document is the caller's.
func (v *View) Hardware() (hardware.Document, bool) {
	if v.hardware == nil {
		return hardware.Document{}, false
	}
	return v.hardware.Clone(), true
}

// Counts are how many objects a View holds and how many facts wait in the
// outbox, for status reports. Keys counts retired keys too.
type Counts struct {
	Visits, Gates, Keys, People, Outbox int
}

// Visit returns the visit with this ID as the edge now knows it.
func (v *View) Visit(id string) (protocol.Visit, bool) {
	u, ok := visitUID(id)
	if !ok {
		return protocol.Visit{}, false
	}
	e, ok := v.visits.get(u)
	if !ok {
		return protocol.Visit{}, false
	}
	return v.visitOf(&e, id, u), true
}

// Person returns the person with this ID as the edge now knows them:
// every person of the organisation the cloud has sent, active or not.
func (v *View) Person(id string) (protocol.Person, bool) {
	u, ok := personUID(id)
	if !ok {
		return protocol.Person{}, false
	}
	return v.people.get(u)
}

// LastPunch returns the last punch this edge recorded for the person (at
// any of its gates), the fact as it went into the outbox, acknowledged
// since or not; false when it has recorded none. A snapshot keeps it: it
// is what happened here, which the cloud does not send back.
func (v *View) LastPunch(personID string) (protocol.Fact, bool) {
	u, ok := personUID(personID)
	if !ok {
		return protocol.Fact{}, false
	}
	return v.punches.get(u)
}

// Gate returns one of the site's gates.
func (v *View) Gate(id string) (protocol.Gate, bool) {
	g, ok := v.gates[id]
	return g, ok
}

// Settings returns the site's settings; false until the cloud has sent
// them.
func (v *View) Settings() (protocol.Settings, bool) {
	if v.settings == nil {
		return protocol.Settings{}, false
	}
	return *v.settings, true
}

// Location is the site's time zone for daily hours, UTC until the cloud
// has sent the settings.
func (v *View) Location() *time.Location {
	if v.loc == nil {
		return time.UTC
	}
	return v.loc
}

// Keys returns the pass-verification keys the cloud has not retired,
// whatever their retire time, ready for passtoken.Verify. The set is shared
// by every caller of this View: do not modify it.
func (v *View) Keys() passtoken.KeySet { return v.keySet }

// KeysAt returns the keys that verify at the time at: Keys without those
// whose retire time (protocol.Key.RetireAt, set by a rotation) has come.
// Until a key retires it is Keys itself, shared: do not modify it.
func (v *View) KeysAt(at time.Time) passtoken.KeySet {
	if v.retireAt == 0 || at.Unix() < v.retireAt {
		return v.keySet
	}
	set := make(passtoken.KeySet, len(v.keySet))
	for id, pub := range v.keySet {
		if k := v.keys[id]; k.Verifies(at) {
			set[id] = pub
		}
	}
	return set
}

// BadgeKeysAt returns the walk-in badge keys (protocol.KeyBadge) certified
// for the site siteID that verify at the time at, for
// passtoken.VerifyBadge; none for another site. They are never among Keys
// or KeysAt: a badge key verifies badges only. The set may be shared: do
// not modify it.
func (v *View) BadgeKeysAt(siteID string, at time.Time) passtoken.KeySet {
	set := v.badges[siteID]
	for id := range set {
		if k := v.keys[id]; !k.Verifies(at) {
			out := make(passtoken.KeySet, len(set))
			for id, pub := range set {
				if k := v.keys[id]; k.Verifies(at) {
					out[id] = pub
				}
			}
			return out
		}
	}
	return set
}

// Seq is the last change of the site's feed applied.
func (v *View) Seq() uint64 { return v.seq }

// SyncedAt is the last contact with the cloud that MarkSynced recorded;
// zero if none.
func (v *View) SyncedAt() time.Time { return v.syncedAt }

// Counts returns the sizes of the View and of the outbox.
func (v *View) Counts() Counts {
	return Counts{Visits: v.visits.len(), Gates: len(v.gates), Keys: len(v.keys), People: v.people.len(), Outbox: v.outbox}
}

// noTime stands for a nil time in a visitEntry.
const noTime = math.MinInt64

const (
	flagSingleUse = 1 << iota
	flagRevoked
	flagDaily
	flagReentered
	flagNeedsSomeone
	flagAtDesk
	// flagPending marks a visit a waiting fact names (View.Pending): a
	// bit of the entry a Record writes anyway, where a set of its own
	// was a second trie to copy on every scan. The edit keeps it across
	// the visit's writes (putVisit); markPending sets and clears it.
	flagPending
	// flagExtra marks a visit with an entry in View.extras.
	flagExtra
)

// statuses numbers the visit statuses for visitEntry.status.
var statuses = []passrule.Status{
	passrule.Expected, passrule.AwaitingApproval, passrule.CheckedIn, passrule.CheckedOut,
	passrule.Denied, passrule.Cancelled, passrule.NoShow,
}

// visitGates are a visit's gates, interned together: its pass's gate_ids
// and the gate it came in through (gate_id). A site has few gates, so
// visits share few pairs, and one pointer holds both.
type visitGates struct {
	rules   []string // pass_rules.gate_ids; empty: every gate
	entered string   // gate_id; empty while unknown
}

// visitEntry is a protocol.Visit packed for the View: 64 bytes, and no
// pointers, against about 450 bytes and five allocations for a decoded
// protocol.Visit. What many visits share (gates, type, host, team) is
// interned as one and named by its index in View.shared; what few visits
// have (another visit's pass, a re-entry, a receiver, a waiting time) is
// in View.extras; the visitor, whose record few visits share, is packed
// into the View's text (packVisitor). Without pointers a leaf of the
// visits' trie is memory the garbage collector marks and never reads,
// where a leaf of entries holding strings and pointers was read whole on
// every cycle (docs/performance.md, "Edge memory, fifth pass").
type visitEntry struct {
	expectedAt, expectedUntil int64 // Unix microseconds, or noTime
	checkedInAt, checkedOutAt int64
	visitor                   textRef // packVisitor's
	shared                    uint32  // 1 + its index in View.shared; 0: none of its parts
	uses                      int32
	nameHash                  uint32 // of the visitor's name, for VisitsByVisitorName
	before, after             int16  // window, minutes
	dailyFrom, dailyUntil     int16  // when flagDaily
	status                    uint8  // index in statuses
	flags                     uint8
	source, audience          uint8 // indexes in storedSources, storedAudiences
}

// textRef is where a visitor's packed text starts in a View's text: the
// chunk (1 + its index in View.text; 0: no visitor) and the offset in it.
// The text says where it ends.
type textRef struct{ chunk, off uint32 }

// visitShared is what the visits of one host, team, type and gates
// share, interned as one: a site has few of each, so it has few of them.
type visitShared struct {
	gates   *visitGates // nil: every gate, and gate_id unknown
	typeKey string      // interned
	host    *hostRef    // nil: neither host_id nor host_name
	team    *teamRef
}

// hostRef is a visit's host, interned: the visits of a host share one.
type hostRef struct {
	id    uid // when hasID
	hasID bool
	name  string
}

// visitExtra holds what few visits have; it has no pointers either.
type visitExtra struct {
	forVisit     uid // the visit holding the pass, when hasFor
	reenteredAs  uid // when flagReentered
	waitingSince int64
	receiver     receiverRef // when hasReceiver
	hasFor       bool
	hasReceiver  bool
}

// noExtra is the extra of a visit that has none.
var noExtra = visitExtra{waitingSince: noTime}

// teamRef is a visit's team, interned: the visits of a team share one.
type teamRef struct {
	id   uid
	name string
}

// receiverRef is whom a visit nobody has taken waits with after a
// hand-over (protocol.Visit.Receiver): rare, so in visitExtra.
type receiverRef struct {
	kind uint8 // an index in storedReceivers
	id   uid   // the person or team; zero for reception
}

// visitorOf is a visit's visitor record as the kiosk shows it.
type visitorOf struct {
	name, email, phone, company string
	id                          uid // when hasID
	hasID                       bool
}

// packVisitor packs a visitor into the View's text: the name, email,
// phone, company and visitor ID (16 bytes, or none), each after its
// length (uvarint). Visitor records are nearly as many as visits, so
// interning them would hold a map entry for each besides.
func (e *edit) packVisitor(r visitorOf) textRef {
	if r == (visitorOf{}) {
		return textRef{}
	}
	n := 5*binary.MaxVarintLen64 + len(r.name) + len(r.email) + len(r.phone) + len(r.company) + 16
	b, ref := e.textRoom(n)
	for _, s := range [...]string{r.name, r.email, r.phone, r.company} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if r.hasID {
		b = append(b, 16)
		b = binary.BigEndian.AppendUint64(b, r.id.hi)
		b = binary.BigEndian.AppendUint64(b, r.id.lo)
	} else {
		b = append(b, 0)
	}
	e.in.text = e.in.text[:len(e.in.text)+len(b)]
	return ref
}

// textChunk is the size of the chunks the visitors' packed text is
// carved from: about 900 visitors each.
const textChunk = 64 << 10

// textRoom returns an empty slice with room for n bytes at the end of
// the interner's chunk, in a new chunk of the edit's text when the
// current one lacks it or is not the edit's, and where it starts; the
// caller appends at most n bytes and then extends in.text by them. Text
// once handed out is never written again (what follows it is), so a
// visitor's text never changes. Carved from chunks, 100,000 visitors are
// some 110 objects without pointers where they were 100,000 strings
// rounded up to their size classes (docs/performance.md, "A scan's
// garbage and the edge's memory, fourth pass"). A chunk lives while a
// View's text holds it; sweepText lets go of those no visit uses.
func (e *edit) textRoom(n int) ([]byte, textRef) {
	in := e.in
	if in.at >= len(e.v.text) || cap(in.text)-len(in.text) < n ||
		unsafe.SliceData(e.v.text[in.at]) != unsafe.SliceData(in.text) {
		in.text = make([]byte, 0, max(textChunk, n))
		e.ownText()
		e.v.text = append(e.v.text, in.text[:cap(in.text)])
		in.at, in.made = len(e.v.text)-1, in.made+1
	}
	return in.text[len(in.text):len(in.text)], textRef{chunk: uint32(in.at + 1), off: uint32(len(in.text))}
}

// ownText makes the edit's text table its own, so that it can change it:
// published Views share theirs.
func (e *edit) ownText() {
	if !e.textCopy {
		e.v.text = append(make([][]byte, 0, len(e.v.text)+16), e.v.text...)
		e.textCopy = true
	}
}

// sweepText drops from the edit's text the chunks no visit uses any
// more, once the chunks made since the last sweep are a quarter of those
// it kept (at least 8, half a MB): a visit's text changes seldom (a
// scan's write keeps it), and chunks are made in the order of visits,
// which are pruned by age. The Views that still hold a dropped chunk
// keep it until they go.
func (e *edit) sweepText() {
	in := e.in
	if e.full {
		in.made, in.kept = 0, len(e.v.text)
		return
	}
	if in.made < max(8, in.kept/4) {
		return
	}
	used := make([]bool, len(e.v.text))
	if in.at < len(used) {
		used[in.at] = true
	}
	e.v.visits.all(func(_ uid, x visitEntry) bool {
		if x.visitor.chunk != 0 {
			used[x.visitor.chunk-1] = true
		}
		return true
	})
	e.ownText()
	in.made, in.kept = 0, 0
	for i := range e.v.text {
		switch {
		case used[i]:
			in.kept++
		case e.v.text[i] != nil:
			e.v.text[i] = nil
		}
	}
}

// visitorRecord unpacks the visitor; its strings share the View's text.
func (v *View) visitorRecord(x *visitEntry) visitorOf {
	if x.visitor.chunk == 0 {
		return visitorOf{}
	}
	s := v.visitorText(x.visitor)
	var r visitorOf
	r.name, s = nextField(s)
	r.email, s = nextField(s)
	r.phone, s = nextField(s)
	r.company, s = nextField(s)
	if id, _ := nextField(s); len(id) == 16 {
		r.id, r.hasID = uid{bigEndian(id[:8]), bigEndian(id[8:])}, true
	}
	return r
}

// visitorText is the View's text from where r starts to the end of its
// chunk: r's fields, and after them text the View may not hold, which is
// not to be read (the writer may be writing it).
func (v *View) visitorText(r textRef) string {
	c := v.text[r.chunk-1][r.off:]
	return unsafe.String(unsafe.SliceData(c), len(c))
}

// visitorName is the visitor's name, the first of packVisitor's fields.
func (v *View) visitorName(x *visitEntry) string {
	if x.visitor.chunk == 0 {
		return ""
	}
	name, _ := nextField(v.visitorText(x.visitor))
	return name
}

// nextField splits packVisitor's next field off s.
func nextField(s string) (field, rest string) {
	var n, shift int
	for i := 0; i < len(s); i++ {
		n |= int(s[i]&0x7f) << shift
		if s[i] < 0x80 {
			return s[i+1 : i+1+n], s[i+1+n:]
		}
		shift += 7
	}
	return "", ""
}

func bigEndian(s string) uint64 {
	var x uint64
	for i := range 8 {
		x = x<<8 | uint64(s[i])
	}
	return x
}

// visitOf is the visit of entry e, whose ID is id and u.
func (v *View) visitOf(e *visitEntry, id string, u uid) protocol.Visit {
	vis := protocol.Visit{
		ID:     id,
		Status: string(statuses[e.status]),
		Rules: protocol.Rules{
			Window:    protocol.Window{Before: int(e.before), After: int(e.after)},
			SingleUse: e.flags&flagSingleUse != 0,
			GateIDs:   []string{},
		},
		Uses:       int(e.uses),
		Revoked:    e.flags&flagRevoked != 0,
		ForVisitID: id,
	}
	// The four times share one allocation: a decision reads a visit or
	// two a scan, and each time apart was one.
	var ts *[4]time.Time
	for i, p := range [...]struct {
		m   int64
		dst **time.Time
	}{{e.expectedAt, &vis.ExpectedAt}, {e.expectedUntil, &vis.ExpectedUntil}, {e.checkedInAt, &vis.CheckedInAt}, {e.checkedOutAt, &vis.CheckedOutAt}} {
		if p.m == noTime {
			continue
		}
		if ts == nil {
			ts = new([4]time.Time)
		}
		ts[i] = time.UnixMicro(p.m).UTC()
		*p.dst = &ts[i]
	}
	if e.flags&flagExtra != 0 {
		x, _ := v.extras.get(u)
		if x.hasFor {
			vis.ForVisitID = visitID(x.forVisit)
		}
		if e.flags&flagReentered != 0 {
			vis.ReenteredAs = visitID(x.reenteredAs)
		}
		vis.WaitingSince = fromMicros(x.waitingSince)
		if x.hasReceiver {
			r := x.receiver
			vis.Receiver = storedReceivers[r.kind]
			switch vis.Receiver {
			case protocol.ToPerson:
				vis.ReceiverID = personID(r.id)
			case protocol.ToTeam:
				vis.ReceiverID = formatUID(ids.Team, r.id)
			}
		}
	}
	if e.flags&flagDaily != 0 {
		vis.Rules.Daily = &protocol.Daily{From: passrule.Clock(e.dailyFrom), Until: passrule.Clock(e.dailyUntil)}
	}
	if e.shared != 0 {
		sh := &v.shared[e.shared-1]
		if g := sh.gates; g != nil {
			if len(g.rules) > 0 {
				vis.Rules.GateIDs = slices.Clone(g.rules)
			}
			vis.GateID = g.entered
		}
		vis.Type = sh.typeKey
		if h := sh.host; h != nil {
			vis.HostName = h.name
			if h.hasID {
				vis.HostID = personID(h.id)
			}
		}
		if t := sh.team; t != nil {
			vis.TeamID, vis.TeamName = formatUID(ids.Team, t.id), t.name
		}
	}
	vis.AtDesk = e.flags&flagAtDesk != 0
	vis.Source, vis.Audience = storedSources[e.source], storedAudiences[e.audience]
	vis.NeedsSomeone = e.flags&flagNeedsSomeone != 0
	r := v.visitorRecord(e)
	vis.VisitorName, vis.VisitorEmail, vis.VisitorPhone, vis.VisitorCompany = r.name, r.email, r.phone, r.company
	if r.hasID {
		vis.VisitorID = formatUID(ids.Visitor, r.id)
	}
	return vis
}

func fromMicros(m int64) *time.Time {
	if m == noTime {
		return nil
	}
	t := time.UnixMicro(m).UTC()
	return &t
}

func toMicros(t *time.Time) int64 {
	if t == nil {
		return noTime
	}
	return t.UnixMicro()
}

// normalize gives v the form the cache stores and the View gives back:
// times in UTC to the microsecond (the protocol's precision), gate_ids
// never nil. So a visit read from the View equals the one stored.
func normalize(v protocol.Visit) protocol.Visit {
	for _, p := range []**time.Time{&v.ExpectedAt, &v.ExpectedUntil, &v.CheckedInAt, &v.CheckedOutAt} {
		if *p == nil {
			continue
		}
		// A time in that form already (a scan's are, read from the View)
		// is kept: the caller's pointer, which the cache only reads.
		if t := (*p).UTC().Truncate(time.Microsecond); t != **p {
			*p = new(time.Time)
			**p = t
		}
	}
	if v.Rules.GateIDs == nil {
		v.Rules.GateIDs = []string{}
	}
	if v.Rules.Daily != nil {
		d := *v.Rules.Daily
		v.Rules.Daily = &d
	}
	return v
}

// interner shares names, gates, hosts and teams between visits. The
// writer owns it (under Cache.mu); it only grows, by as many distinct
// names, lists and combinations of them as the site's visits have, and a
// snapshot starts a new one.
type interner struct {
	names  map[string]string
	gates  map[string]*visitGates
	teams  map[teamRef]*teamRef
	hosts  map[hostRef]*hostRef
	shared map[visitShared]uint32 // visitEntry.shared
	// sharedAll is every visitShared interned, in order; each View's
	// shared is a prefix of it.
	sharedAll []visitShared

	text []byte // the chunk packVisitor carves from (textRoom)
	at   int    // text's index in the text of the edit that made it
	// made counts the chunks made since the last sweep, kept those it
	// kept (sweepText).
	made, kept int
}

func newInterner() *interner {
	return &interner{names: map[string]string{}, gates: map[string]*visitGates{}, teams: map[teamRef]*teamRef{},
		hosts: map[hostRef]*hostRef{}, shared: map[visitShared]uint32{}}
}

// share returns what names k in visitEntry.shared: its index in the
// edit's shared, plus one.
func (e *edit) share(k visitShared) uint32 {
	if k == (visitShared{}) {
		return 0
	}
	in := e.in
	if i, ok := in.shared[k]; ok {
		return i
	}
	// Appended where no View reads: each holds a prefix of sharedAll.
	in.sharedAll = append(in.sharedAll, k)
	i := uint32(len(in.sharedAll))
	in.shared[k] = i
	e.v.shared = in.sharedAll
	return i
}

func (in *interner) team(id uid, name string) *teamRef {
	k := teamRef{id: id, name: name}
	if r, ok := in.teams[k]; ok {
		return r
	}
	r := &teamRef{id: id, name: in.name(name)}
	in.teams[*r] = r
	return r
}

func (in *interner) host(k hostRef) *hostRef {
	if k == (hostRef{}) {
		return nil
	}
	if r, ok := in.hosts[k]; ok {
		return r
	}
	r := &hostRef{id: k.id, hasID: k.hasID, name: in.name(k.name)}
	in.hosts[*r] = r
	return r
}

func (in *interner) name(s string) string {
	if s == "" {
		return ""
	}
	if x, ok := in.names[s]; ok {
		return x
	}
	s = strings.Clone(s)
	in.names[s] = s
	return s
}

func (in *interner) visitGates(rules []string, entered string) *visitGates {
	if len(rules) == 0 && entered == "" {
		return nil
	}
	// The key is made on the stack: a lookup by string(k) does not
	// allocate, and a known pair is what a scan's write meets.
	var buf [128]byte
	k := buf[:0]
	for i, id := range rules {
		if i > 0 {
			k = append(k, ',')
		}
		k = append(k, id...)
	}
	k = append(append(k, '|'), entered...) // gate IDs hold neither separator
	if g, ok := in.gates[string(k)]; ok {
		return g
	}
	g := &visitGates{entered: in.name(entered)}
	if len(rules) > 0 {
		g.rules = make([]string, len(rules))
		for i, id := range rules {
			g.rules[i] = in.name(id)
		}
	}
	in.gates[string(k)] = g
	return g
}

// pack packs a validated visit for the edit: its entry and its extra
// (noExtra when it has none). was is the entry it replaces, if any, whose
// visitor's text is taken as it is when the visitor is the same (a gate's
// write changes the visit, not its visitor).
func (e *edit) pack(v *protocol.Visit, was *visitEntry) (uid, visitEntry, visitExtra, error) {
	var p packed
	if err := e.in.entry(v, &p); err != nil {
		return uid{}, visitEntry{}, visitExtra{}, err
	}
	p.x.shared = e.share(p.shared)
	if was != nil && e.v.visitorRecord(was) == p.visitor {
		p.x.visitor = was.visitor // nameHash is putVisit's
	} else {
		p.x.visitor = e.packVisitor(p.visitor)
	}
	if p.extra != noExtra {
		p.x.flags |= flagExtra
	}
	return p.u, p.x, p.extra, nil
}

// packed is a visit as interner.entry packs it, before the edit puts
// what it shares and its visitor's text in the View (edit.pack).
type packed struct {
	u       uid
	x       visitEntry
	extra   visitExtra
	shared  visitShared
	visitor visitorOf
}

// entry packs a validated visit into p.
func (in *interner) entry(v *protocol.Visit, p *packed) error {
	u, ok := visitUID(v.ID)
	if !ok {
		return fmt.Errorf("id %q is not a visit ID", v.ID)
	}
	p.u = u
	e, x := &p.x, &p.extra
	*e = visitEntry{
		expectedAt:    toMicros(v.ExpectedAt),
		expectedUntil: toMicros(v.ExpectedUntil),
		checkedInAt:   toMicros(v.CheckedInAt),
		checkedOutAt:  toMicros(v.CheckedOutAt),
		before:        int16(v.Rules.Window.Before),
		after:         int16(v.Rules.Window.After),
	}
	*x = noExtra
	holder, ok := visitUID(v.ForVisitID)
	if !ok {
		return fmt.Errorf("for_visit_id %q is not a visit ID", v.ForVisitID)
	}
	if holder != u {
		x.forVisit, x.hasFor = holder, true
	}
	if v.ReenteredAs != "" {
		if x.reenteredAs, ok = visitUID(v.ReenteredAs); !ok {
			return fmt.Errorf("reentered_as %q is not a visit ID", v.ReenteredAs)
		}
		e.flags |= flagReentered
	}
	if i := slices.Index(statuses, passrule.Status(v.Status)); i >= 0 {
		e.status = uint8(i)
	} else {
		return fmt.Errorf("status %q is not a visit status", v.Status)
	}
	if v.Uses < 0 || v.Uses > math.MaxInt32 {
		return fmt.Errorf("uses %d is out of range", v.Uses)
	}
	e.uses = int32(v.Uses)
	if w := v.Rules.Window; w.Before < 0 || w.Before > passrule.MaxWindowMinutes || w.After < 0 || w.After > passrule.MaxWindowMinutes {
		return fmt.Errorf("window %+v is out of range", w)
	}
	if d := v.Rules.Daily; d != nil {
		if !d.From.Valid() || !d.Until.Valid() {
			return fmt.Errorf("daily %+v is out of range", *d)
		}
		e.dailyFrom, e.dailyUntil = int16(d.From), int16(d.Until)
		e.flags |= flagDaily
	}
	if v.Rules.SingleUse {
		e.flags |= flagSingleUse
	}
	if v.Revoked {
		e.flags |= flagRevoked
	}
	if v.AtDesk {
		e.flags |= flagAtDesk
	}
	return in.kiosk(v, p)
}

// kiosk packs the fields the reception kiosk shows.
func (in *interner) kiosk(v *protocol.Visit, p *packed) error {
	e, x := &p.x, &p.extra
	src, aud := slices.Index(storedSources[:], v.Source), slices.Index(storedAudiences[:], v.Audience)
	if src < 0 || aud < 0 {
		return fmt.Errorf("source %q or audience %q unknown", v.Source, v.Audience)
	}
	e.source, e.audience = uint8(src), uint8(aud)
	sh := visitShared{gates: in.visitGates(v.Rules.GateIDs, v.GateID), typeKey: in.name(v.Type)}
	if v.NeedsSomeone {
		e.flags |= flagNeedsSomeone
	}
	x.waitingSince = toMicros(v.WaitingSince)
	var ok bool
	h := hostRef{name: v.HostName}
	if v.HostID != "" {
		if h.id, ok = personUID(v.HostID); !ok {
			return fmt.Errorf("host_id %q is not a person ID", v.HostID)
		}
		h.hasID = true
	}
	sh.host = in.host(h)
	if v.TeamID != "" {
		t, ok := parseUID(ids.Team, v.TeamID)
		if !ok {
			return fmt.Errorf("team_id %q is not a team ID", v.TeamID)
		}
		sh.team = in.team(t, v.TeamName)
	}
	p.shared = sh
	r := &p.visitor
	*r = visitorOf{name: v.VisitorName, email: v.VisitorEmail, phone: v.VisitorPhone, company: v.VisitorCompany}
	if v.VisitorID != "" {
		if r.id, ok = parseUID(ids.Visitor, v.VisitorID); !ok {
			return fmt.Errorf("visitor_id %q is not a visitor ID", v.VisitorID)
		}
		r.hasID = true
	}
	if v.Receiver != "" {
		k := slices.Index(storedReceivers[:], v.Receiver)
		if k < 0 {
			return fmt.Errorf("receiver %q unknown", v.Receiver)
		}
		x.receiver, x.hasReceiver = receiverRef{kind: uint8(k)}, true
		if v.ReceiverID != "" {
			prefix := ids.Person
			if v.Receiver == protocol.ToTeam {
				prefix = ids.Team
			}
			if x.receiver.id, ok = parseUID(prefix, v.ReceiverID); !ok {
				return fmt.Errorf("receiver_id %q is not a %s ID", v.ReceiverID, prefix)
			}
		}
	}
	return nil
}

// edit builds the next View from the current one. What is reachable from
// a published View is never written: the tries copy the nodes the edit
// changes the first time (gen names the edit's own), and the gates, keys,
// teams and types maps are copied whole the first time they change (a
// site has few of each).
type edit struct {
	v          View
	gen        uint64
	gatesCopy  bool
	keysCopy   bool
	keysChange bool
	in         *interner

	teamsCopy, typesCopy bool
	peopleChange         bool
	full                 bool // a View from nothing: compacted when done
	textCopy             bool // v.text is the edit's own (ownText)
}

func newEdit(cur *View, in *interner) *edit {
	e := &edit{v: *cur, in: in, gen: newGen()}
	// The interner's, of which cur's is a prefix: an edit that did not
	// publish may have interned more, which this one may meet.
	e.v.shared = in.sharedAll
	return e
}

func (e *edit) visit(u uid) (visitEntry, bool) { return e.v.visits.get(u) }

// entry packs a validated visit to put in the edit (pack), sharing the
// visitor's text of the entry it replaces when it is the same.
func (e *edit) entry(v *protocol.Visit) (uid, visitEntry, visitExtra, error) {
	if u, ok := visitUID(v.ID); ok {
		if old, ok := e.visit(u); ok {
			return e.pack(v, &old)
		}
	}
	return e.pack(v, nil)
}

// putVisit puts a visit packed by entry or pack in the edit.
func (e *edit) putVisit(u uid, x visitEntry, extra visitExtra) {
	old, had := e.v.visits.get(u)
	x.flags |= old.flags & flagPending // the zero entry when !had
	switch {
	case had && x.visitor == old.visitor:
		x.nameHash = old.nameHash // a scan's write: no folding
	case had && e.v.visitorName(&x) == e.v.visitorName(&old):
		x.nameHash = old.nameHash
	default:
		x.nameHash = nameHash(e.v.visitorName(&x))
	}
	hadExtra := had && old.flags&flagExtra != 0
	switch {
	case x.flags&flagExtra != 0:
		if was, _ := e.v.extras.get(u); !hadExtra || was != extra {
			e.v.extras.put(e.gen, u, extra)
		}
	case hadExtra:
		e.v.extras.del(e.gen, u)
	}
	e.v.visits.put(e.gen, u, x)
}

// deleteVisit removes a visit from the edit.
func (e *edit) deleteVisit(u uid) {
	old, ok := e.v.visits.get(u)
	if !ok {
		return
	}
	e.v.visits.del(e.gen, u)
	if old.flags&flagExtra != 0 {
		e.v.extras.del(e.gen, u)
	}
}

// putPerson puts a valid person in the edit.
func (e *edit) putPerson(p protocol.Person) error {
	u, ok := personUID(p.ID)
	if !ok {
		return fmt.Errorf("id %q is not a person ID", p.ID)
	}
	e.v.people.put(e.gen, u, p)
	e.peopleChange = true
	return nil
}

// putPunch makes a valid punch fact its person's last.
func (e *edit) putPunch(f protocol.Fact) error {
	u, ok := personUID(f.PersonID)
	if !ok {
		return fmt.Errorf("person_id %q is not a person ID", f.PersonID)
	}
	e.v.punches.put(e.gen, u, f)
	return nil
}

// restorePunch makes last the person's last punch again, or forgets the
// person's last punch when last is nil.
func (e *edit) restorePunch(personID string, last *protocol.Fact) error {
	if last != nil {
		return e.putPunch(*last)
	}
	u, ok := personUID(personID)
	if !ok {
		return fmt.Errorf("person_id %q is not a person ID", personID)
	}
	e.v.punches.del(e.gen, u)
	return nil
}

func (e *edit) putGate(g protocol.Gate) {
	if !e.gatesCopy {
		e.v.gates = maps.Clone(e.v.gates)
		if e.v.gates == nil {
			e.v.gates = map[string]protocol.Gate{}
		}
		e.gatesCopy = true
	}
	if g.Removed {
		delete(e.v.gates, g.ID)
		return
	}
	e.v.gates[g.ID] = g
}

func (e *edit) putKey(k protocol.Key) {
	if !e.keysCopy {
		e.v.keys = maps.Clone(e.v.keys)
		if e.v.keys == nil {
			e.v.keys = map[string]protocol.Key{}
		}
		e.keysCopy = true
	}
	k.Public = slices.Clone(k.Public)
	e.v.keys[k.ID] = k
	e.keysChange = true
}

func (e *edit) setSettings(s protocol.Settings) error {
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	e.v.settings, e.v.loc = &s, loc
	return nil
}

// done returns the new View.
func (e *edit) done() (*View, error) {
	if e.full {
		v := &e.v
		v.visits.build(e.gen)
		v.visits.compact(e.gen)
		v.extras.compact(e.gen)
		v.people.compact(e.gen)
		v.punches.compact(e.gen)
	}
	e.sweepText()
	if e.peopleChange || e.v.search == nil {
		e.v.search = buildPeopleIndex(e.v.people)
	}
	if e.keysChange || e.v.keySet == nil {
		set, err := keySet(e.v.keys)
		if err != nil {
			return nil, err
		}
		e.v.keySet, e.v.retireAt = set, 0
		if e.v.badges, err = badgeSets(e.v.keys); err != nil {
			return nil, err
		}
		for id := range set {
			if at := e.v.keys[id].RetireAt; at != 0 && (e.v.retireAt == 0 || at < e.v.retireAt) {
				e.v.retireAt = at
			}
		}
	}
	v := e.v
	return &v, nil
}

func keySet(keys map[string]protocol.Key) (passtoken.KeySet, error) {
	pub := make([]passtoken.PublicKey, 0, len(keys))
	for _, k := range keys {
		if !k.Retired && k.Kind == protocol.KeyPass {
			pub = append(pub, passtoken.PublicKey{ID: k.ID, Key: k.Public})
		}
	}
	set, err := passtoken.NewKeySet(pub...)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	return set, nil
}

// badgeSets are the badge keys not retired, by the site each is
// certified for.
func badgeSets(keys map[string]protocol.Key) (map[string]passtoken.KeySet, error) {
	var out map[string]passtoken.KeySet
	for _, k := range keys {
		if k.Retired || k.Kind != protocol.KeyBadge {
			continue
		}
		set, err := passtoken.NewKeySet(passtoken.PublicKey{ID: k.ID, Key: k.Public})
		if err != nil {
			return nil, fmt.Errorf("badge keys: %w", err)
		}
		if out == nil {
			out = map[string]passtoken.KeySet{}
		}
		if out[k.SiteID] == nil {
			out[k.SiteID] = set
			continue
		}
		out[k.SiteID][k.ID] = k.Public
	}
	return out, nil
}

// newFullEdit starts a View from nothing, for Open and ReplaceSnapshot.
func newFullEdit(in *interner) *edit {
	e := &edit{in: in, gen: newGen(), full: true, gatesCopy: true, keysCopy: true, keysChange: true, textCopy: true}
	e.v.shared = in.sharedAll
	e.v.visits.startBulk() // the View's bulk: its leaves made once, at their size
	e.v.gates = map[string]protocol.Gate{}
	e.v.keys = map[string]protocol.Key{}
	e.v.teams, e.v.types, e.teamsCopy, e.typesCopy = map[string]protocol.Team{}, map[string]protocol.VisitType{}, true, true
	return e
}
