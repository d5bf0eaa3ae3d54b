package protocol

// These tests keep asyncapi.yaml equal to this package's code: real
// messages, encoded by Encode, are what the document says; every struct
// field is in the document and every property of the document is a field;
// every topic, message type and enumerated value of the code is in it and
// nothing else; its bounds are the code's; and what the code refuses, the
// document refuses too.

import (
	"encoding"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/gosource"
	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol/asyncapitest"
)

var asyncAPIDoc = sync.OnceValues(func() (*asyncapitest.Document, error) { return asyncapitest.Parse(AsyncAPI) })

func loadAsyncAPI(t testing.TB) *asyncapitest.Document {
	t.Helper()
	d, err := asyncAPIDoc()
	require.NoError(t, err, "asyncapi.yaml must parse and its payload schemas compile")
	return d
}

// messageTopics names the topic kind that carries each of the protocol's
// message types (the type set of Message). A new message type must be
// added here and to the document.
var messageTopics = map[string]Kind{
	"Batch":         KindChanges,
	"Fact":          KindFacts,
	"ResyncRequest": KindResync,
	"Reply":         KindReplies,
	"Status":        KindStatus,
}

// Fixed identifiers, so that failures read the same from run to run.
var (
	apiSite = Site{Mode: "live", OrgID: "org_01m8c0behhe199qec869b0z4fj", SiteID: "site_01m8c0behhe19t80xnqq2q1kg1"}
	apiEdge = "edge_01m8c0behhe1a8eb764ms86wv8"
	gate1   = "gate_01m8c0behhe1ardgb8e7zaaq4a"
	gate2   = "gate_01m8c0behje1astxb9vdc921zt"
	visit1  = "visit_01m8c0behje1b847bkf289cc57"
	visit2  = "visit_01m8c0behje1bvzyepb95csav5"
	visit3  = "visit_01m8c0behje1cavywndmn953gk"
	person1 = "person_01m8c0behje1crt88m7hxcg7v1"
	person2 = "person_01m8c0behje1dbmdkq4rw0ncn5"
	team1   = "team_01m8c0behje1dtktn5db7zfqpn"
	visitr1 = "visitor_01m8c0behje1e9w73p5v1js18d"
	fact1   = "fact_01m8c0behje1eswvzndx5mf69z"
	fact2   = "fact_01m8c0behje1f8zmqswvyqpc8c"
	pubKey  = []byte("0123456789abcdef0123456789abcdef") // 32 bytes: an Ed25519 public key's size
	t0      = time.Date(2026, 11, 21, 9, 0, 0, 123456000, time.UTC)
)

func tp(d time.Duration) *time.Time { t := t0.Add(d); return &t }

// topicOf is the topic of kind for the test edge.
func topicOf(k Kind) string {
	switch k {
	case KindChanges:
		return apiSite.Changes()
	case KindFacts:
		return apiSite.Facts(apiEdge)
	case KindResync:
		return apiSite.Resync(apiEdge)
	case KindReplies:
		return apiSite.Replies(apiEdge)
	case KindStatus:
		return apiSite.Status(apiEdge)
	}
	panic("topicOf: unknown kind " + k)
}

// decodeAs decodes b strictly as the message type kind's topic carries.
func decodeAs(k Kind, b []byte) error {
	switch k {
	case KindChanges:
		return Decode(b, &Batch{})
	case KindFacts:
		return Decode(b, &Fact{})
	case KindResync:
		return Decode(b, &ResyncRequest{})
	case KindReplies:
		return Decode(b, &Reply{})
	case KindStatus:
		return Decode(b, &Status{})
	}
	return fmt.Errorf("decodeAs: unknown kind %s", k)
}

// Sample objects, each with every field set that its kind allows.

func visitAtGate() Visit {
	return Visit{
		ID: visit1, Status: string(passrule.CheckedIn),
		ExpectedAt: tp(0), ExpectedUntil: tp(8 * time.Hour), CheckedInAt: tp(time.Minute), CheckedOutAt: tp(2 * time.Hour),
		Rules: FromRules(passrule.Rules{Daily: &passrule.Daily{From: 22 * 60, Until: 6 * 60},
			Window: passrule.Window{Before: 30, After: 15}, SingleUse: true, GateIDs: []string{gate1, gate2}}),
		Uses: 1, Revoked: true, ForVisitID: visit2, ReenteredAs: visit3,
		VisitorName: "Grace Hopper", HostName: "Ada Lovelace",
		Type: "contractor", Source: "invitation", Audience: "person", HostID: person1,
		TeamID: team1, TeamName: "Facilities", NeedsSomeone: true, WaitingSince: tp(time.Minute),
		VisitorID: visitr1, VisitorEmail: "grace@example.com", VisitorPhone: "+33612345678", VisitorCompany: "Navy",
		GateID: gate1, Receiver: ToPerson, ReceiverID: person2,
	}
}

func visitAtDesk() Visit {
	return Visit{
		ID: visit2, Status: string(passrule.CheckedIn), CheckedInAt: tp(0),
		Rules: FromRules(passrule.Rules{}), ForVisitID: visit2,
		Source: "walk_in", Audience: "team", TeamID: team1, AtDesk: true, Receiver: ToTeam, ReceiverID: team1,
	}
}

func visitBare() Visit {
	return Visit{ID: visit3, Status: string(passrule.Expected), Rules: FromRules(passrule.Rules{}), ForVisitID: visit3,
		Audience: "desk", Receiver: ToReception}
}

func settingsFull() Settings {
	return Settings{Timezone: "Europe/Paris", OfflineLimitMinutes: 1440, SiteName: "Head office", WaitLimitMinutes: 15}
}

func orgKey() Key {
	return Key{ID: "0a1b2c3d", Public: pubKey, Retired: true, RetireAt: t0.Unix()}
}

func badgeKey() Key {
	return Key{ID: "9f8e7d6c", Public: pubKey, Kind: KeyBadge, SiteID: apiSite.SiteID}
}

func personFull() Person {
	return Person{ID: person1, Name: "Ada Lovelace", Active: true, PassIssuedAt: t0.Unix(), JobTitle: "Engineer"}
}

func teamFull() Team {
	return Team{ID: team1, Name: "Facilities", SiteID: apiSite.SiteID, VisitorsCanChoose: true, Archived: true}
}

func visitTypeFull() VisitType {
	return VisitType{Key: "contractor", Name: "Contractor", Position: 2, Enabled: true,
		Form: json.RawMessage(`{"type":"object","properties":{"badge_colour":{"type":"string"}}}`)}
}

func hardwareFull() *EdgeHardware {
	d := &hardware.Document{
		Gates: []hardware.Gate{{
			ID: gate1,
			Readers: []hardware.Reader{
				{Kind: hardware.Serial, Device: "/dev/ttyACM0", Baud: 115200},
				{Kind: hardware.TCP, Listen: "0.0.0.0:9001"},
				{Kind: hardware.Camera},
			},
			Relay:     hardware.Relay{Pin: "GPIO17", ActiveLow: true, Pulse: 750 * time.Millisecond},
			Door:      &hardware.Door{Pin: "GPIO27", ActiveLow: true, Pull: "up", Poll: 50 * time.Millisecond},
			WhenStale: hardware.FailOpen,
		}, {
			ID:      gate2,
			Readers: []hardware.Reader{{Kind: hardware.Serial, Device: "/dev/ttyUSB0"}},
			Relay:   hardware.Relay{Pin: "GPIO22"},
		}},
		Kiosk: &hardware.Kiosk{Label: "62", Printer: "192.168.1.50:9100"},
	}
	d.Defaults()
	return &EdgeHardware{EdgeID: apiEdge, Hardware: d}
}

// changesOfEveryKind are consecutive changes holding each kind of object.
func changesOfEveryKind() []Change {
	ob, ob2, ob3, set, ok, bk, pe, te, vt, hw, hw0 :=
		visitAtGate(), visitAtDesk(), visitBare(), settingsFull(), orgKey(), badgeKey(), personFull(), teamFull(), visitTypeFull(), hardwareFull(), &EdgeHardware{EdgeID: apiEdge}
	removed := VisitType{Key: "old", Name: "", Position: 0}
	cs := []Change{
		{Visit: &ob}, {Visit: &ob2}, {Visit: &ob3},
		{Gate: &Gate{ID: gate1, Name: "Main entrance", Direction: "both"}},
		{Gate: &Gate{ID: gate2, Name: "", Direction: "exit", Removed: true}},
		{Settings: &set}, {Settings: &Settings{Timezone: "UTC"}},
		{Key: &ok}, {Key: &bk}, {Person: &pe}, {Person: &Person{ID: person2, PassIssuedAt: 0}},
		{Team: &te}, {VisitType: &vt}, {VisitType: &removed}, {Hardware: hw}, {Hardware: hw0},
	}
	for i := range cs {
		cs[i].Seq, cs[i].At = uint64(41+i), t0.Add(time.Duration(i)*time.Second)
	}
	return cs
}

// factsOfEveryKind are facts of each kind, in their variants.
func factsOfEveryKind() []Fact {
	walkIn := &WalkIn{Type: "contractor", HostID: person1, VisitorID: visitr1,
		Visitor:      WalkInVisitor{Name: "Katherine Johnson", Email: "kj@example.com", Phone: "+15555550100", Company: "NASA"},
		CustomFields: map[string]json.RawMessage{"badge_colour": json.RawMessage(`"blue"`), "count": json.RawMessage(`3`)}}
	fs := []Fact{
		{Kind: FactCheckIn, GateID: gate1, VisitID: visit1, PassVisitID: visit1},
		{Kind: FactCheckOut, GateID: gate1, VisitID: visit1},
		{Kind: FactReEntry, GateID: gate1, VisitID: visit3, PassVisitID: visit1},
		{Kind: FactEntered, GateID: gate1, VisitID: visit2, PassVisitID: visit2},
		{Kind: FactRefused, GateID: gate1, VisitID: visit1, PassVisitID: visit1, Reason: string(passrule.Expired)},
		{Kind: FactRefused, GateID: gate1, Reason: ReasonInvalidToken},
		{Kind: FactRefused, GateID: gate1, PersonID: person1, Reason: ReasonPassReplaced},
		{Kind: FactRefused, GateID: gate1, VisitID: visit1, Reason: ReasonRelayFailed, Voids: fact2},
		{Kind: FactPunch, GateID: gate1, PersonID: person1, Direction: DirectionIn},
		{Kind: FactPassage, GateID: gate1, PersonID: person1, Direction: DirectionOut},
		{Kind: FactWalkIn, VisitID: visit3, DeviceID: "kiosk-lobby", WalkIn: walkIn},
		{Kind: FactWalkIn, VisitID: visit3, DeviceID: "k", WalkIn: &WalkIn{Type: "delivery", TeamID: team1, Visitor: WalkInVisitor{Name: "Bo"}}},
		{Kind: FactDeskCheckIn, VisitID: visit1, PassVisitID: visit2, DeviceID: "kiosk-lobby"},
		{Kind: FactDeskCheckOut, VisitID: visit1, DeviceID: "kiosk-lobby"},
		{Kind: FactTake, VisitID: visit1, PersonID: person1, DeviceID: "kiosk-lobby"},
		{Kind: FactHandOver, VisitID: visit1, To: ToReception, DeviceID: "kiosk-lobby"},
		{Kind: FactHandOver, VisitID: visit1, To: ToPerson, PersonID: person2, DeviceID: "kiosk-lobby"},
		{Kind: FactHandOver, VisitID: visit1, To: ToTeam, TeamID: team1, DeviceID: "kiosk-lobby"},
	}
	for i := range fs {
		fs[i].ID, fs[i].EdgeID, fs[i].Counter, fs[i].At = fact1, apiEdge, uint64(i+1), t0.Add(time.Duration(i)*time.Millisecond)
	}
	return fs
}

func snapshotFull() *Snapshot {
	set, hw := settingsFull(), hardwareFull()
	return &Snapshot{Seq: 56, Part: 1, Parts: 2, Settings: &set,
		Gates:  []Gate{{ID: gate1, Name: "Main entrance", Direction: "entry"}},
		Keys:   []Key{orgKey(), badgeKey()},
		Visits: []Visit{visitAtGate(), visitAtDesk(), visitBare()},
		People: []Person{personFull()}, Teams: []Team{teamFull()}, VisitTypes: []VisitType{visitTypeFull()},
		Hardware: hw}
}

func statusOnline() Status {
	cc, free := CacheCounts{Visits: 120, People: 35, Gates: 2, Keys: 3}, uint64(1<<30)
	return Status{EdgeID: apiEdge, State: "online", At: t0, Seq: 56, Outbox: 2, Software: "svc-edge 1.4.2",
		BadgeKey: pubKey, OutboxOldest: tp(-time.Hour), Cache: &cc, DiskFree: &free, HardwareError: "gate_01…: relay GPIO17: busy"}
}

// sample is one real message: its topic kind, a name, and its payload as
// Encode wrote it.
type sample struct {
	kind Kind
	name string
	b    []byte
}

// samples encodes a message of every type, fact kind, reply kind and
// change object with Encode, as the halves do.
func samples(t testing.TB) []sample {
	t.Helper()
	var out []sample
	add := func(k Kind, name string, b []byte, err error) {
		t.Helper()
		require.NoError(t, err, "encode %s", name)
		out = append(out, sample{k, name, b})
	}
	{
		b, err := Encode(&Batch{Changes: changesOfEveryKind()})
		add(KindChanges, "batch of every object", b, err)
	}
	for _, f := range factsOfEveryKind() {
		b, err := Encode(&f)
		add(KindFacts, "fact "+string(f.Kind), b, err)
	}
	{
		b, err := Encode(&ResyncRequest{RequestID: "9f86d081884c7d659a2feaa0", After: 42})
		add(KindResync, "resync request", b, err)
		b, err = Encode(&ResyncRequest{RequestID: "r", After: 0})
		add(KindResync, "resync request after 0", b, err)
	}
	{
		b, err := Encode(&Reply{Kind: ReplyAck, Acks: []string{fact1, fact2}})
		add(KindReplies, "reply ack", b, err)
		b, err = Encode(&Reply{Kind: ReplyChanges, RequestID: "r1", Changes: changesOfEveryKind(), More: true})
		add(KindReplies, "reply changes", b, err)
		b, err = Encode(&Reply{Kind: ReplyChanges, RequestID: "r1"})
		add(KindReplies, "reply changes, none", b, err)
		b, err = Encode(&Reply{Kind: ReplySnapshot, RequestID: "r1", Snapshot: snapshotFull()})
		add(KindReplies, "reply snapshot", b, err)
		b, err = Encode(&Reply{Kind: ReplySnapshot, RequestID: "r1", Snapshot: &Snapshot{Seq: 0, Part: 2, Parts: 2,
			Gates: []Gate{}, Keys: []Key{}, Visits: []Visit{}, People: []Person{}}})
		add(KindReplies, "reply snapshot, empty part", b, err)
	}
	{
		on := statusOnline()
		b, err := Encode(&on)
		add(KindStatus, "status online", b, err)
		b, err = Encode(&Status{EdgeID: apiEdge, State: "online", At: t0, Seq: 0, Outbox: 0})
		add(KindStatus, "status online, bare", b, err)
		b, err = Encode(&Status{EdgeID: apiEdge, State: "offline", At: t0, Seq: 56, Outbox: 2, Software: "svc-edge 1.4.2"})
		add(KindStatus, "status offline (last will)", b, err)
	}
	return out
}

// Every message the code encodes is valid on its topic's channel, and
// every message type, fact kind and reply kind of the code is among the
// samples (so that one added to the code is checked against the document).
func TestAsyncAPI_MessagesMatchDocument(t *testing.T) {
	doc := loadAsyncAPI(t)
	ss := samples(t)
	for _, s := range ss {
		t.Run(s.name, func(t *testing.T) {
			ch, msg, err := doc.Check(topicOf(s.kind), s.b)
			require.NoError(t, err, "%s", s.b)
			require.Equal(t, string(s.kind), ch.Name)
			if s.kind == KindReplies {
				var r Reply
				require.NoError(t, json.Unmarshal(s.b, &r))
				require.Equal(t, string(r.Kind)+"Reply", msg.Name, "a %s reply is the document's %sReply", r.Kind, r.Kind)
			}
		})
	}

	seen := map[string]bool{}
	for _, s := range ss {
		var head struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(s.b, &head))
		seen[string(s.kind)+"/"+head.Kind] = true
	}
	for _, k := range constsOfType(t, ".", "FactKind") {
		require.True(t, seen["facts/"+k], "fact kind %s has no sample: add one to factsOfEveryKind", k)
	}
	for _, k := range constsOfType(t, ".", "ReplyKind") {
		require.True(t, seen["replies/"+k], "reply kind %s has no sample: add one to samples", k)
	}
	types := messageTypes(t)
	require.NotEmpty(t, types)
	for _, name := range types {
		k, ok := messageTopics[name]
		require.True(t, ok, "message type %s carries on no topic: add it to messageTopics and to asyncapi.yaml", name)
		require.True(t, slices.ContainsFunc(ss, func(s sample) bool { return s.kind == k }), "no sample of %s", name)
	}
	require.Len(t, messageTopics, len(types), "messageTopics names a type that is no longer a Message")
}

// Every field of every message struct is a property of the document's
// schema and the other way round, with a JSON type that fits the Go
// type; a field the encoder always writes (no omitempty) is required.
// This catches a field added with omitempty, which the samples may not
// set.
func TestAsyncAPI_FieldsMatchStructs(t *testing.T) {
	doc := loadAsyncAPI(t)
	for name, k := range messageTopics {
		ch := channelNamed(t, doc, string(k))
		var schemas []map[string]any
		for _, m := range ch.Messages {
			s, _, err := doc.Resolve(asMap(asMap(doc.Root["components"])["messages"])[strings.TrimPrefix(m.Pointer, "/components/messages/")])
			require.NoError(t, err)
			schemas = append(schemas, asMap(s["payload"]))
		}
		typ := reflect.TypeFor[Batch]()
		switch name {
		case "Fact":
			typ = reflect.TypeFor[Fact]()
		case "ResyncRequest":
			typ = reflect.TypeFor[ResyncRequest]()
		case "Reply":
			typ = reflect.TypeFor[Reply]()
		case "Status":
			typ = reflect.TypeFor[Status]()
		}
		w := &fieldWalker{t: t, doc: doc}
		w.walk(typ, schemas, name)
	}
}

// fieldWalker compares a Go type with the schemas that describe it.
type fieldWalker struct {
	t   require.TestingT
	doc *asyncapitest.Document
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	rawType      = reflect.TypeFor[json.RawMessage]()
	bytesType    = reflect.TypeFor[[]byte]()
	marshaler    = reflect.TypeFor[json.Marshaler]()
	textMarshal  = reflect.TypeFor[encoding.TextMarshaler]()
	hardwareDocT = reflect.TypeFor[hardware.Document]()
)

// leaves resolves node's $ref and, for a schema that is a choice (oneOf or
// anyOf without properties or items of its own), its branches, leaving out
// the null branch.
func (w *fieldWalker) leaves(node any) []map[string]any {
	s, _, err := w.doc.Resolve(node)
	require.NoError(w.t, err)
	if s == nil || s["type"] == "null" {
		return nil
	}
	_, props := s["properties"]
	_, items := s["items"]
	if !props && !items {
		for _, key := range []string{"oneOf", "anyOf"} {
			if alts, ok := s[key].([]any); ok {
				var out []map[string]any
				for _, a := range alts {
					out = append(out, w.leaves(a)...)
				}
				return out
			}
		}
	}
	return []map[string]any{s}
}

// jsonTypes are the JSON types a schema allows, from its type or, when it
// has none, its const or enum.
func jsonTypes(s map[string]any) []string {
	switch ty := s["type"].(type) {
	case string:
		return []string{ty}
	case []any:
		var out []string
		for _, x := range ty {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	var vals []any
	if c, ok := s["const"]; ok {
		vals = append(vals, c)
	}
	vals = append(vals, asSlice(s["enum"])...)
	var out []string
	for _, v := range vals {
		switch v.(type) {
		case string:
			out = append(out, "string")
		case json.Number:
			out = append(out, "integer")
		case bool:
			out = append(out, "boolean")
		}
	}
	return out
}

func (w *fieldWalker) expect(path string, schemas []map[string]any, jsonType string) {
	require.NotEmpty(w.t, schemas, "%s: no schema", path)
	for _, s := range schemas {
		require.Contains(w.t, jsonTypes(s), jsonType, "%s: the document's type is not %s", path, jsonType)
	}
}

func (w *fieldWalker) walk(typ reflect.Type, nodes []map[string]any, path string) {
	var schemas []map[string]any
	for _, n := range nodes {
		schemas = append(schemas, w.leaves(n)...)
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ == timeType:
		w.expect(path, schemas, "string")
		for _, s := range schemas {
			require.Equal(w.t, "date-time", s["format"], "%s: a time.Time is a date-time", path)
		}
		return
	case typ == rawType:
		return // any JSON; the samples check the form's
	case typ == bytesType:
		w.expect(path, schemas, "string")
		for _, s := range schemas {
			require.Equal(w.t, "base64", s["contentEncoding"], "%s: []byte is base64", path)
		}
		return
	case typ != hardwareDocT && (typ.Implements(marshaler) || reflect.PointerTo(typ).Implements(marshaler)):
		// Written by its own MarshalJSON (hardware's relay and door): the
		// samples check them.
		w.expect(path, schemas, "object")
		return
	case typ.Implements(textMarshal) || reflect.PointerTo(typ).Implements(textMarshal):
		w.expect(path, schemas, "string")
		return
	}
	switch typ.Kind() {
	case reflect.String:
		w.expect(path, schemas, "string")
	case reflect.Bool:
		w.expect(path, schemas, "boolean")
	case reflect.Int, reflect.Int64, reflect.Int32:
		w.expect(path, schemas, "integer")
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		w.expect(path, schemas, "integer")
		for _, s := range schemas {
			minimum, ok := s["minimum"].(json.Number)
			require.True(w.t, ok, "%s: an unsigned integer has a minimum", path)
			n, err := minimum.Int64()
			require.NoError(w.t, err)
			require.GreaterOrEqual(w.t, n, int64(0), "%s: an unsigned integer's minimum", path)
		}
	case reflect.Slice:
		w.expect(path, schemas, "array")
		var items []map[string]any
		for _, s := range schemas {
			items = append(items, asMap(s["items"]))
		}
		w.walk(typ.Elem(), items, path+"[]")
	case reflect.Map:
		w.expect(path, schemas, "object") // custom_fields: any JSON values
	case reflect.Struct:
		w.walkStruct(typ, schemas, path)
	default:
		require.Failf(w.t, "unknown type", "%s: the walker does not know %s", path, typ)
	}
}

func (w *fieldWalker) walkStruct(typ reflect.Type, schemas []map[string]any, path string) {
	w.expect(path, schemas, "object")
	documented := map[string]bool{}
	for _, s := range schemas {
		require.Equal(w.t, false, s["additionalProperties"], "%s: an object of the protocol has additionalProperties: false (decoding refuses unknown fields)", path)
		for p := range asMap(s["properties"]) {
			documented[p] = true
		}
	}
	fields := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		require.NotEmpty(w.t, name, "%s.%s has no JSON name", path, f.Name)
		fields[name] = true
		fp := path + "." + name
		require.True(w.t, documented[name], "%s: the field %s (%s.%s) is not in asyncapi.yaml", fp, name, typ, f.Name)
		var sub []map[string]any
		for _, s := range schemas {
			p, ok := asMap(s["properties"])[name]
			if !ok {
				continue
			}
			sub = append(sub, asMap(p))
			if !strings.Contains(opts, "omitempty") {
				require.Contains(w.t, asSlice(s["required"]), name, "%s: the encoder always writes it (no omitempty), so the document requires it", fp)
			}
		}
		w.walk(f.Type, sub, fp)
	}
	for p := range documented {
		require.True(w.t, fields[p], "%s: asyncapi.yaml documents %s, which %s does not have", path, p, typ)
	}
}

// Every topic the code builds is a channel of the document, and every
// channel a topic of the code; the cloud's shared subscriptions read
// exactly the channels edges send on, and an edge's access filter covers
// every channel.
func TestAsyncAPI_TopicsMatchChannels(t *testing.T) {
	doc := loadAsyncAPI(t)
	params := map[string]string{"mode": apiSite.Mode, "org_id": apiSite.OrgID, "site_id": apiSite.SiteID, "edge_id": apiEdge}
	var kinds []string
	for _, ch := range doc.Channels {
		topic := ch.Topic(params)
		site, kind, edge, err := ParseTopic(topic)
		require.NoError(t, err, "channel %s's address %s is not a topic of the code", ch.Name, ch.Address)
		require.Equal(t, apiSite, site)
		require.Equal(t, ch.Name, string(kind), "channel %s is the code's %s topic", ch.Name, kind)
		require.Equal(t, topicOf(kind), topic)
		require.Equal(t, slices.Contains(ch.Params, "edge_id"), edge != "", "channel %s names an edge exactly when the code's topic does", ch.Name)
		require.True(t, strings.HasPrefix(topic, strings.TrimSuffix(apiSite.EdgeFilter(), "#")), "the edge's access filter covers %s", topic)
		kinds = append(kinds, string(kind))
		require.NotEmpty(t, ch.Messages, "channel %s has messages", ch.Name)
		require.Len(t, ch.Operations, 1, "channel %s has one operation (the edge's)", ch.Name)
	}
	codeKinds := constsOfType(t, ".", "Kind")
	require.ElementsMatch(t, codeKinds, kinds, "the document's channels are the code's topic kinds")
	for _, k := range codeKinds {
		ch, got, err := doc.Match(topicOf(Kind(k)))
		require.NoError(t, err)
		require.Equal(t, k, ch.Name)
		require.Equal(t, params["site_id"], got["site_id"])
	}

	// The cloud's shared subscriptions: the channels edges send on, with
	// every parameter a wildcard.
	var shared []string
	for _, ch := range doc.Channels {
		if _, ok := ch.Operation("send"); !ok {
			continue
		}
		wild := map[string]string{}
		for _, p := range ch.Params {
			wild[p] = "+"
		}
		shared = append(shared, "$share/svc-cloud/"+ch.Topic(wild))
	}
	require.ElementsMatch(t, []string{SharedFacts, SharedResync, SharedStatus}, shared)

	_, _, err := doc.Match(apiSite.Prefix() + "/edges/" + apiEdge + "/nonsense")
	require.Error(t, err, "a topic of no channel does not match")
	_, _, err = doc.Match(strings.Replace(apiSite.Changes(), "/live/", "/staging/", 1))
	require.Error(t, err, "a mode outside the enum does not match")
}

// The document's enumerations are the code's: fact kinds, refusal
// reasons, visit statuses, sources and audiences, hand-over receivers,
// directions, key kinds and the hardware document's choices.
func TestAsyncAPI_EnumsMatchCode(t *testing.T) {
	doc := loadAsyncAPI(t)
	prop := func(schema, name string) map[string]any {
		s := doc.Schema(schema)
		require.NotNil(t, s, "schema %s", schema)
		p := asMap(asMap(s["properties"])[name])
		require.NotNil(t, p, "%s.%s", schema, name)
		return p
	}
	enum := func(schema, name string) []string {
		var out []string
		for _, v := range asSlice(prop(schema, name)["enum"]) {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	var reasons []string
	reasons = append(reasons, GateReasons()...)
	for _, r := range passrule.Reasons() {
		reasons = append(reasons, string(r))
	}
	var bauds []string
	for _, b := range hardware.Bauds {
		bauds = append(bauds, strconv.Itoa(b))
	}
	for _, tc := range []struct {
		schema, prop string
		want         []string
	}{
		{"Fact", "kind", constsOfType(t, ".", "FactKind")},
		{"Fact", "reason", reasons},
		{"Fact", "direction", []string{DirectionIn, DirectionOut}},
		{"Fact", "to", []string{ToReception, ToPerson, ToTeam}},
		{"Visit", "status", constsOfType(t, "../../shared/passrule", "Status")},
		{"Visit", "source", visitSources},
		{"Visit", "audience", visitAudiences},
		{"Visit", "receiver", []string{ToReception, ToPerson, ToTeam}},
		{"Status", "state", []string{"online", "offline"}},
		{"Gate", "direction", []string{"entry", "exit", "both"}},
		{"HardwareGate", "when_stale", []string{string(hardware.FailSecure), string(hardware.FailOpen)}},
		{"HardwareReader", "kind", []string{hardware.Serial, hardware.TCP, hardware.Camera}},
		{"HardwareReader", "baud", bauds},
		{"HardwareKiosk", "label", hardware.Labels},
		{"HardwareDoor", "pull", slices.DeleteFunc(slices.Clone(hardware.Pulls), func(s string) bool { return s == "" })},
	} {
		require.ElementsMatch(t, tc.want, enum(tc.schema, tc.prop), "%s.%s", tc.schema, tc.prop)
	}
	require.Equal(t, KeyBadge, prop("Key", "kind")["const"])
	var replyKinds []string
	for _, name := range []string{"AckReply", "ChangesReply", "SnapshotReply"} {
		replyKinds = append(replyKinds, fmt.Sprint(prop(name, "kind")["const"]))
	}
	require.ElementsMatch(t, constsOfType(t, ".", "ReplyKind"), replyKinds)
	require.ElementsMatch(t, []string{"live", "test"}, channelNamed(t, doc, "changes").Enums["mode"])
	require.Equal(t, json.Number(strconv.Itoa(Version)), doc.Schema("Version")["const"])
	require.Equal(t, json.Number(strconv.Itoa(MaxMessage)), asMap(doc.Root["info"])["x-max-message-bytes"])
}

// The document's bounds are the code's: at each bound both accept a
// message, one past it both refuse it.
func TestAsyncAPI_BoundsMatchCode(t *testing.T) {
	doc := loadAsyncAPI(t)
	text := func(n int) string { return strings.Repeat("a", n) }
	factIDs := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fact1
		}
		return out
	}
	changes := func(n int) []Change {
		cs := make([]Change, n)
		for i := range cs {
			cs[i] = Change{Seq: uint64(i + 1), At: t0, Gate: &Gate{ID: gate1, Direction: "both"}}
		}
		return cs
	}
	// withGateIDs returns n distinct gate IDs (a pass refuses repeats).
	withGateIDs := func(n int) []string {
		const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
		out := make([]string, n)
		for i := range out {
			out[i] = gate1[:len(gate1)-2] + string(alphabet[i/32]) + string(alphabet[i%32])
		}
		return out
	}
	fact := func(mod func(*Fact)) any {
		f := Fact{V: 1, ID: fact1, Kind: FactWalkIn, EdgeID: apiEdge, Counter: 1, At: t0, VisitID: visit1, DeviceID: "k",
			WalkIn: &WalkIn{Type: "t", Visitor: WalkInVisitor{Name: "n"}}}
		mod(&f)
		return f
	}
	batchOf := func(c Change) any { c.Seq, c.At = 1, t0; return Batch{V: 1, Changes: []Change{c}} }
	for _, tc := range []struct {
		name  string
		kind  Kind
		bound int
		make  func(n int) any
	}{
		{"a name", KindChanges, maxText, func(n int) any { return batchOf(Change{Gate: &Gate{ID: gate1, Name: text(n), Direction: "both"}}) }},
		{"a request ID", KindResync, maxRequestID, func(n int) any { return ResyncRequest{V: 1, RequestID: text(n)} }},
		{"the software", KindStatus, maxSoftwareVer, func(n int) any {
			return Status{V: 1, EdgeID: apiEdge, State: "online", At: t0, Software: text(n)}
		}},
		{"the hardware error", KindStatus, MaxHardwareError, func(n int) any {
			return Status{V: 1, EdgeID: apiEdge, State: "online", At: t0, HardwareError: text(n)}
		}},
		{"a device ID", KindFacts, maxDeviceID, func(n int) any { return fact(func(f *Fact) { f.DeviceID = text(n) }) }},
		{"a walk-in's custom fields", KindFacts, MaxCustomFields, func(n int) any {
			return fact(func(f *Fact) {
				f.WalkIn.CustomFields = map[string]json.RawMessage{}
				for i := range n {
					f.WalkIn.CustomFields[strconv.Itoa(i)] = json.RawMessage(`1`)
				}
			})
		}},
		{"a custom field's key", KindFacts, maxText, func(n int) any {
			return fact(func(f *Fact) { f.WalkIn.CustomFields = map[string]json.RawMessage{text(n): json.RawMessage(`1`)} })
		}},
		{"acknowledgements", KindReplies, MaxAcks, func(n int) any { return Reply{V: 1, Kind: ReplyAck, Acks: factIDs(n)} }},
		{"changes in a batch", KindChanges, MaxChanges, func(n int) any { return Batch{V: 1, Changes: changes(n)} }},
		{"changes in a reply", KindReplies, MaxChanges, func(n int) any {
			return Reply{V: 1, Kind: ReplyChanges, RequestID: "r", Changes: changes(n)}
		}},
		{"objects in a snapshot part", KindReplies, MaxSnapshot, func(n int) any {
			gs := make([]Gate, n)
			for i := range gs {
				gs[i] = Gate{ID: gate1, Direction: "both"}
			}
			return Reply{V: 1, Kind: ReplySnapshot, RequestID: "r", Snapshot: &Snapshot{Part: 1, Parts: 1, Gates: gs, Keys: []Key{}, Visits: []Visit{}, People: []Person{}}}
		}},
		{"a pass's gates", KindChanges, passrule.MaxGateIDs, func(n int) any {
			v := visitBare()
			v.Rules.GateIDs = withGateIDs(n)
			return batchOf(Change{Visit: &v})
		}},
		{"a pass's window", KindChanges, passrule.MaxWindowMinutes, func(n int) any {
			v := visitBare()
			v.Rules.Window.After = n
			return batchOf(Change{Visit: &v})
		}},
		{"the wait limit", KindChanges, 24 * 60, func(n int) any {
			return batchOf(Change{Settings: &Settings{Timezone: "UTC", WaitLimitMinutes: n}})
		}},
		{"a hardware document's gates", KindChanges, hardware.MaxGates, func(n int) any {
			d := &hardware.Document{Gates: make([]hardware.Gate, n)}
			gateIDs := withGateIDs(n)
			for i := range d.Gates {
				d.Gates[i] = hardware.Gate{ID: gateIDs[i], Readers: []hardware.Reader{{Kind: hardware.Camera}},
					Relay: hardware.Relay{Pin: "GPIO" + strconv.Itoa(i), Pulse: hardware.DefaultPulse}, WhenStale: hardware.FailSecure}
			}
			return batchOf(Change{Hardware: &EdgeHardware{EdgeID: apiEdge, Hardware: d}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []int{tc.bound, tc.bound + 1} {
				b, err := json.Marshal(tc.make(n))
				require.NoError(t, err)
				codeErr := decodeAs(tc.kind, b)
				_, _, docErr := doc.Check(topicOf(tc.kind), b)
				if n == tc.bound {
					require.NoError(t, codeErr, "the code accepts %d", n)
					require.NoError(t, docErr, "the document accepts %d", n)
				} else {
					require.Error(t, codeErr, "the code refuses %d", n)
					require.Error(t, docErr, "the document refuses %d, as the code does", n)
				}
			}
		})
	}
}

// What the code refuses, the document refuses too: one broken rule each.
func TestAsyncAPI_RefusesWhatCodeRefuses(t *testing.T) {
	doc := loadAsyncAPI(t)
	marshal := func(v any) map[string]any {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	fact := func(f Fact) map[string]any {
		f.V, f.ID, f.EdgeID, f.Counter, f.At = 1, fact1, apiEdge, 1, t0
		return marshal(f)
	}
	change := func(c Change) map[string]any {
		c.Seq, c.At = 1, t0
		return marshal(Batch{V: 1, Changes: []Change{c}})
	}
	visit := func(mod func(*Visit)) map[string]any {
		v := visitBare()
		v.Receiver = ""
		mod(&v)
		return change(Change{Visit: &v})
	}
	status := func(mod func(*Status)) map[string]any {
		s := Status{V: 1, EdgeID: apiEdge, State: "online", At: t0}
		mod(&s)
		return marshal(s)
	}
	checkIn := Fact{Kind: FactCheckIn, GateID: gate1, VisitID: visit1}
	// set sets (or, for nil, deletes) the value at a dotted path, taking
	// the first element of an array on the way.
	set := func(m map[string]any, path string, v any) map[string]any {
		keys := strings.Split(path, ".")
		cur := m
		for _, k := range keys[:len(keys)-1] {
			next, ok := cur[k].(map[string]any)
			if !ok { // an array: its first element
				next = asMap(asSlice(cur[k])[0])
			}
			require.NotNil(t, next, "set %s: no %s", path, k)
			cur = next
		}
		if v == nil {
			delete(cur, keys[len(keys)-1])
		} else {
			cur[keys[len(keys)-1]] = v
		}
		return m
	}
	hw := hardwareFull()
	for _, tc := range []struct {
		name string
		kind Kind
		msg  map[string]any
	}{
		{"an unknown field", KindFacts, set(fact(checkIn), "colour", "red")},
		{"an unknown nested field", KindChanges, set(change(Change{Gate: &Gate{ID: gate1, Direction: "both"}}), "changes.gate.colour", "red")},
		{"another version", KindFacts, set(fact(checkIn), "v", 2)},
		{"a fact ID of another type", KindFacts, set(fact(checkIn), "id", visit1)},
		{"counter 0", KindFacts, set(fact(checkIn), "counter", 0)},
		{"an unknown fact kind", KindFacts, fact(Fact{Kind: "teleported", GateID: gate1, VisitID: visit1})},
		{"a desk fact at a gate", KindFacts, fact(Fact{Kind: FactDeskCheckOut, GateID: gate1, VisitID: visit1, DeviceID: "k"})},
		{"a desk fact without its device", KindFacts, fact(Fact{Kind: FactDeskCheckOut, VisitID: visit1})},
		{"a device ID with a space", KindFacts, fact(Fact{Kind: FactDeskCheckOut, VisitID: visit1, DeviceID: "front desk"})},
		{"a gate fact with a device", KindFacts, fact(Fact{Kind: FactCheckIn, GateID: gate1, VisitID: visit1, DeviceID: "k"})},
		{"a gate fact without its gate", KindFacts, fact(Fact{Kind: FactCheckIn, VisitID: visit1})},
		{"a check-in without its visit", KindFacts, fact(Fact{Kind: FactCheckIn, GateID: gate1})},
		{"a check-in with a reason", KindFacts, fact(Fact{Kind: FactCheckIn, GateID: gate1, VisitID: visit1, Reason: "used"})},
		{"a check-in naming a person", KindFacts, fact(Fact{Kind: FactCheckIn, GateID: gate1, VisitID: visit1, PersonID: person1})},
		{"a check-in with a direction", KindFacts, fact(Fact{Kind: FactCheckIn, GateID: gate1, VisitID: visit1, Direction: "in"})},
		{"a re-entry without the pass's visit", KindFacts, fact(Fact{Kind: FactReEntry, GateID: gate1, VisitID: visit1})},
		{"an entered without the pass's visit", KindFacts, fact(Fact{Kind: FactEntered, GateID: gate1, VisitID: visit1})},
		{"a punch without direction", KindFacts, fact(Fact{Kind: FactPunch, GateID: gate1, PersonID: person1})},
		{"a punch sideways", KindFacts, fact(Fact{Kind: FactPunch, GateID: gate1, PersonID: person1, Direction: "up"})},
		{"a punch naming a visit", KindFacts, fact(Fact{Kind: FactPunch, GateID: gate1, PersonID: person1, Direction: "in", VisitID: visit1})},
		{"a passage without its person", KindFacts, fact(Fact{Kind: FactPassage, GateID: gate1, Direction: "in"})},
		{"a refusal without reason", KindFacts, fact(Fact{Kind: FactRefused, GateID: gate1})},
		{"a refusal for no reason of the code", KindFacts, fact(Fact{Kind: FactRefused, GateID: gate1, Reason: "record_failed"})},
		{"a refusal naming a person and a visit", KindFacts, fact(Fact{Kind: FactRefused, GateID: gate1, Reason: "used", PersonID: person1, VisitID: visit1})},
		{"voids on another refusal", KindFacts, fact(Fact{Kind: FactRefused, GateID: gate1, Reason: "used", Voids: fact2})},
		{"voids on a check-in", KindFacts, fact(Fact{Kind: FactCheckIn, GateID: gate1, VisitID: visit1, Voids: fact2})},
		{"a walk-in without its walk_in", KindFacts, fact(Fact{Kind: FactWalkIn, VisitID: visit1, DeviceID: "k"})},
		{"walk_in on a take", KindFacts, fact(Fact{Kind: FactTake, VisitID: visit1, DeviceID: "k", PersonID: person1, WalkIn: &WalkIn{Type: "t"}})},
		{"a walk-in for a host and a team", KindFacts, fact(Fact{Kind: FactWalkIn, VisitID: visit1, DeviceID: "k",
			WalkIn: &WalkIn{Type: "t", HostID: person1, TeamID: team1}})},
		{"a walk-in without its type", KindFacts, fact(Fact{Kind: FactWalkIn, VisitID: visit1, DeviceID: "k", WalkIn: &WalkIn{}})},
		{"a walk-in naming its host outside walk_in", KindFacts, fact(Fact{Kind: FactWalkIn, VisitID: visit1, DeviceID: "k", PersonID: person1, WalkIn: &WalkIn{Type: "t"}})},
		{"a take without its person", KindFacts, fact(Fact{Kind: FactTake, VisitID: visit1, DeviceID: "k"})},
		{"a hand-over to a team without it", KindFacts, fact(Fact{Kind: FactHandOver, VisitID: visit1, DeviceID: "k", To: ToTeam})},
		{"a hand-over to reception naming a person", KindFacts, fact(Fact{Kind: FactHandOver, VisitID: visit1, DeviceID: "k", To: ToReception, PersonID: person1})},
		{"a hand-over to a person naming a team too", KindFacts, fact(Fact{Kind: FactHandOver, VisitID: visit1, DeviceID: "k", To: ToPerson, PersonID: person1, TeamID: team1})},
		{"a hand-over to nobody", KindFacts, fact(Fact{Kind: FactHandOver, VisitID: visit1, DeviceID: "k"})},
		{"a desk check-out with a pass", KindFacts, fact(Fact{Kind: FactDeskCheckOut, VisitID: visit1, DeviceID: "k", PassVisitID: visit2})},
		{"a desk check-in naming a team", KindFacts, fact(Fact{Kind: FactDeskCheckIn, VisitID: visit1, DeviceID: "k", TeamID: team1})},
		{"a time that is not one", KindFacts, set(fact(checkIn), "at", "yesterday")},

		{"an empty batch", KindChanges, marshal(Batch{V: 1, Changes: []Change{}})},
		{"a change of no object", KindChanges, change(Change{})},
		{"a change of two objects", KindChanges, change(Change{Gate: &Gate{ID: gate1, Direction: "both"}, Settings: &Settings{Timezone: "UTC"}})},
		{"a change at sequence 0", KindChanges, set(change(Change{Gate: &Gate{ID: gate1, Direction: "both"}}), "changes.seq", 0)},
		{"a gate with no direction of the code", KindChanges, change(Change{Gate: &Gate{ID: gate1, Direction: "up"}})},
		{"settings without a time zone", KindChanges, change(Change{Settings: &Settings{}})},
		{"a negative offline limit", KindChanges, change(Change{Settings: &Settings{Timezone: "UTC", OfflineLimitMinutes: -1}})},
		{"a key ID that is not hex", KindChanges, change(Change{Key: &Key{ID: "0A1B2C3D", Public: pubKey}})},
		{"a key of 31 bytes", KindChanges, change(Change{Key: &Key{ID: "0a1b2c3d", Public: pubKey[:31]}})},
		{"a badge key bound to no site", KindChanges, change(Change{Key: &Key{ID: "0a1b2c3d", Public: pubKey, Kind: KeyBadge}})},
		{"an organisation key bound to a site", KindChanges, change(Change{Key: &Key{ID: "0a1b2c3d", Public: pubKey, SiteID: apiSite.SiteID}})},
		{"a key of another kind", KindChanges, change(Change{Key: &Key{ID: "0a1b2c3d", Public: pubKey, Kind: "door", SiteID: apiSite.SiteID}})},
		{"a negative retire_at", KindChanges, change(Change{Key: &Key{ID: "0a1b2c3d", Public: pubKey, RetireAt: -1}})},
		{"a negative pass_issued_at", KindChanges, change(Change{Person: &Person{ID: person1, PassIssuedAt: -1}})},
		{"a team at a site that is not one", KindChanges, change(Change{Team: &Team{ID: team1, Name: "T", SiteID: gate1}})},
		{"a visit type without a key", KindChanges, change(Change{VisitType: &VisitType{Name: "T"}})},
		{"a visit type at position -1", KindChanges, change(Change{VisitType: &VisitType{Key: "k", Position: -1}})},
		{"hardware of no edge", KindChanges, change(Change{Hardware: &EdgeHardware{EdgeID: gate1}})},
		{"a serial reader at no baud of the code", KindChanges, set(change(Change{Hardware: hw}), "changes.hardware.hardware.gates.readers.baud", 1000)},
		{"a relay without a pin", KindChanges, set(change(Change{Hardware: hw}), "changes.hardware.hardware.gates.relay.pin", "")},
		{"an unknown hardware field", KindChanges, set(change(Change{Hardware: hw}), "changes.hardware.hardware.gates.relay.colour", "red")},
		{"a visit of no status of the code", KindChanges, visit(func(v *Visit) { v.Status = "lost" })},
		{"a visit without its pass's visit", KindChanges, visit(func(v *Visit) { v.ForVisitID = "" })},
		{"a visit used -1 times", KindChanges, visit(func(v *Visit) { v.Uses = -1 })},
		{"a visit of no source of the code", KindChanges, visit(func(v *Visit) { v.Source = "kiosk" })},
		{"a team name without its team", KindChanges, visit(func(v *Visit) { v.TeamName = "Facilities" })},
		{"at the desk and through a gate", KindChanges, visit(func(v *Visit) { v.AtDesk, v.GateID = true, gate1 })},
		{"a receiver ID without a receiver", KindChanges, visit(func(v *Visit) { v.ReceiverID = person1 })},
		{"a person receiver naming a team", KindChanges, visit(func(v *Visit) { v.Receiver, v.ReceiverID = ToPerson, team1 })},
		{"a reception receiver with an ID", KindChanges, visit(func(v *Visit) { v.Receiver, v.ReceiverID = ToReception, person1 })},
		{"daily hours at 24:00", KindChanges, set(visit(func(v *Visit) {
			v.Rules = FromRules(passrule.Rules{Daily: &passrule.Daily{From: 0, Until: 60}})
		}), "changes.visit.rules.daily.until", "24:00")},
		{"a pass for a gate twice", KindChanges, visit(func(v *Visit) { v.Rules.GateIDs = []string{gate1, gate1} })},
		{"a negative window", KindChanges, visit(func(v *Visit) { v.Rules.Window.Before = -1 })},

		{"a resync without request ID", KindResync, marshal(ResyncRequest{V: 1, After: 3})},
		{"a resync after -1", KindResync, set(marshal(ResyncRequest{V: 1, RequestID: "r"}), "after", -1)},

		{"an ack of nothing", KindReplies, marshal(Reply{V: 1, Kind: ReplyAck})},
		{"an ack of a visit", KindReplies, marshal(Reply{V: 1, Kind: ReplyAck, Acks: []string{visit1}})},
		{"an ack with a request ID", KindReplies, marshal(Reply{V: 1, Kind: ReplyAck, Acks: []string{fact1}, RequestID: "r"})},
		{"an ack with more", KindReplies, marshal(Reply{V: 1, Kind: ReplyAck, Acks: []string{fact1}, More: true})},
		{"changes answering no request", KindReplies, marshal(Reply{V: 1, Kind: ReplyChanges})},
		{"changes with acks", KindReplies, marshal(Reply{V: 1, Kind: ReplyChanges, RequestID: "r", Acks: []string{fact1}})},
		{"a snapshot reply without its snapshot", KindReplies, marshal(Reply{V: 1, Kind: ReplySnapshot, RequestID: "r"})},
		{"a snapshot part 0", KindReplies, marshal(Reply{V: 1, Kind: ReplySnapshot, RequestID: "r",
			Snapshot: &Snapshot{Part: 0, Parts: 1, Gates: []Gate{}, Keys: []Key{}, Visits: []Visit{}, People: []Person{}}})},
		{"a snapshot reply with more", KindReplies, marshal(Reply{V: 1, Kind: ReplySnapshot, RequestID: "r", More: true,
			Snapshot: &Snapshot{Part: 1, Parts: 1, Gates: []Gate{}, Keys: []Key{}, Visits: []Visit{}, People: []Person{}}})},
		{"a reply of another kind", KindReplies, marshal(Reply{V: 1, Kind: "nack", Acks: []string{fact1}})},

		{"a status of another edge type", KindStatus, status(func(s *Status) { s.EdgeID = gate1 })},
		{"a status neither online nor offline", KindStatus, status(func(s *Status) { s.State = "asleep" })},
		{"an offline status with a badge key", KindStatus, status(func(s *Status) { s.State, s.BadgeKey = "offline", pubKey })},
		{"an offline status with a hardware error", KindStatus, status(func(s *Status) { s.State, s.HardwareError = "offline", "busy" })},
		{"a negative outbox", KindStatus, status(func(s *Status) { s.Outbox = -1 })},
		{"negative cache counts", KindStatus, status(func(s *Status) { s.Cache = &CacheCounts{Visits: -1} })},
		{"a badge key of 31 bytes", KindStatus, status(func(s *Status) { s.BadgeKey = pubKey[:31] })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.msg)
			require.NoError(t, err)
			require.ErrorIs(t, decodeAs(tc.kind, b), ErrInvalid, "the code refuses %s", b)
			_, _, err = doc.Check(topicOf(tc.kind), b)
			require.Error(t, err, "the document refuses %s, as the code does", b)
		})
	}
}

// Every example in the document is a message the code decodes, and valid
// against its own message's schema.
func TestAsyncAPI_ExamplesDecode(t *testing.T) {
	doc := loadAsyncAPI(t)
	n := 0
	for _, ch := range doc.Channels {
		for _, m := range ch.Messages {
			require.NotEmpty(t, m.Examples, "message %s has an example", m.Name)
			for _, ex := range m.Examples {
				n++
				got, err := ch.CheckValue(ex.Payload)
				require.NoError(t, err, "example %s of %s", ex.Name, m.Name)
				require.Equal(t, m.Name, got.Name, "example %s of %s", ex.Name, m.Name)
				b, err := json.Marshal(ex.Payload)
				require.NoError(t, err)
				require.NoError(t, decodeAs(Kind(ch.Name), b), "the code decodes example %s of %s", ex.Name, m.Name)
			}
		}
	}
	require.Positive(t, n)
}

// The checks above can fail: a payload with a field the document lacks is
// refused, and a struct with one fails the field walk, with omitempty too.
func TestAsyncAPI_DetectsDrift(t *testing.T) {
	doc := loadAsyncAPI(t)
	b, err := Encode(&ResyncRequest{RequestID: "r", After: 1})
	require.NoError(t, err)
	drifted := strings.Replace(string(b), `"after":1`, `"after":1,"since":"2026-11-21T09:00:00Z"`, 1)
	require.NotEqual(t, string(b), drifted)
	_, _, err = doc.Check(topicOf(KindResync), []byte(drifted))
	require.Error(t, err, "a field the document lacks is refused")

	type resyncSince struct {
		V         int    `json:"v"`
		RequestID string `json:"request_id"`
		After     uint64 `json:"after"`
		Since     string `json:"since,omitempty"`
	}
	type resyncUnsigned struct {
		V         int    `json:"v"`
		RequestID string `json:"request_id"`
		After     string `json:"after"`
	}
	require.False(t, walkFails(doc, reflect.TypeFor[ResyncRequest](), "ResyncRequest"), "ResyncRequest is what the document says")
	require.True(t, walkFails(doc, reflect.TypeFor[resyncSince](), "ResyncRequest"), "a field the document lacks fails the walk")
	require.True(t, walkFails(doc, reflect.TypeFor[resyncUnsigned](), "ResyncRequest"), "a field of another type fails the walk")
}

// recordingT is a require.TestingT that records a failure and stops its
// goroutine, as testing.T's FailNow does.
type recordingT struct{ failed bool }

func (r *recordingT) Errorf(string, ...any) { r.failed = true }
func (r *recordingT) FailNow()              { r.failed = true; runtime.Goexit() }

// walkFails runs the field walk of typ against components.schemas[schema]
// in a goroutine of its own, which a failure ends, and reports whether it
// failed.
func walkFails(doc *asyncapitest.Document, typ reflect.Type, schema string) bool {
	rec := &recordingT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &fieldWalker{t: rec, doc: doc}
		w.walk(typ, []map[string]any{doc.Schema(schema)}, schema)
	}()
	<-done
	return rec.failed
}

func channelNamed(t testing.TB, doc *asyncapitest.Document, name string) *asyncapitest.Channel {
	t.Helper()
	for _, ch := range doc.Channels {
		if ch.Name == name {
			return ch
		}
	}
	t.Fatalf("asyncapi.yaml has no channel %s", name)
	return nil
}

// constsOfType returns the values of the string constants of type
// typeName declared in the Go package in dir (its non-test files).
func constsOfType(t testing.TB, dir, typeName string) []string {
	t.Helper()
	consts, err := gosource.Consts(dir)
	require.NoError(t, err)
	var out []string
	for _, c := range consts {
		if c.Type != typeName {
			continue
		}
		require.True(t, c.String, "the %s constant %s in %s is not a string literal", typeName, c.Name, c.File)
		out = append(out, c.Value)
	}
	require.NotEmpty(t, out, "no constants of type %s in %s", typeName, dir)
	return out
}

// messageTypes returns the type set of the Message constraint, read from
// this package's source.
func messageTypes(t testing.TB) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "messages.go", nil, 0)
	require.NoError(t, err)
	var out []string
	var collect func(e ast.Expr)
	collect = func(e ast.Expr) {
		switch e := e.(type) {
		case *ast.BinaryExpr:
			collect(e.X)
			collect(e.Y)
		case *ast.StarExpr:
			collect(e.X)
		case *ast.Ident:
			out = append(out, e.Name)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Message" {
			return true
		}
		for _, m := range ts.Type.(*ast.InterfaceType).Methods.List {
			if len(m.Names) == 0 {
				collect(m.Type)
			}
		}
		return false
	})
	return out
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
