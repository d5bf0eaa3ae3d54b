package protocol_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

var (
	site   = protocol.Site{Mode: "test", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}
	edgeID = ids.New(ids.Edge)
	gateID = ids.New(ids.Gate)
	at     = time.Date(2026, 11, 21, 9, 30, 0, 123000, time.UTC)
)

func visit() protocol.Visit {
	id := ids.New(ids.Visit)
	until := at.Add(8 * time.Hour)
	return protocol.Visit{ID: id, Status: "expected", ExpectedAt: &at, ExpectedUntil: &until, ForVisitID: id,
		Rules: protocol.FromRules(passrule.Rules{Daily: &passrule.Daily{From: 8 * 60, Until: 18 * 60},
			Window: passrule.Window{Before: 30, After: 15}, SingleUse: true, GateIDs: []string{gateID}}),
		VisitorName: "Vera Visitor", HostName: "Ada Lovelace"}
}

func person() protocol.Person {
	return protocol.Person{ID: ids.New(ids.Person), Name: "Ada Lovelace", Active: true, PassIssuedAt: at.Unix()}
}

func key() protocol.Key {
	pub, _, _ := ed25519.GenerateKey(nil)
	return protocol.Key{ID: "5eed0001", Public: pub}
}

func TestTopics_RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		topic string
		kind  protocol.Kind
		edge  string
	}{
		{site.Changes(), protocol.KindChanges, ""},
		{site.Facts(edgeID), protocol.KindFacts, edgeID},
		{site.Resync(edgeID), protocol.KindResync, edgeID},
		{site.Replies(edgeID), protocol.KindReplies, edgeID},
		{site.Status(edgeID), protocol.KindStatus, edgeID},
	} {
		s, kind, edge, err := protocol.ParseTopic(tc.topic)
		require.NoError(t, err, tc.topic)
		require.Equal(t, site, s)
		require.Equal(t, tc.kind, kind)
		require.Equal(t, tc.edge, edge)
		require.True(t, strings.HasPrefix(tc.topic, "svc/v1/test/"+site.OrgID+"/sites/"+site.SiteID+"/"))
	}
	require.Equal(t, site.Prefix()+"/#", site.EdgeFilter())
}

func TestTopics_ForeignTopicsAreRefused(t *testing.T) {
	for _, topic := range []string{
		"", "svc", "svc/v1", "other/v1/test/x/sites/y/changes",
		"svc/v2/test/" + site.OrgID + "/sites/" + site.SiteID + "/changes",
		"svc/v1/prod/" + site.OrgID + "/sites/" + site.SiteID + "/changes",
		"svc/v1/test/org_123/sites/" + site.SiteID + "/changes",
		"svc/v1/test/" + site.OrgID + "/sites/" + site.SiteID + "/gossip",
		"svc/v1/test/" + site.OrgID + "/sites/" + site.SiteID + "/changes/extra",
		"svc/v1/test/" + site.OrgID + "/sites/" + site.SiteID + "/edges/edge_123/status",
		"svc/v1/test/" + site.OrgID + "/sites/" + site.SiteID + "/facts", // the site-wide facts topic before edges had their own
		"svc/v1/test/" + site.OrgID + "/sites/" + site.SiteID + "/edges/" + edgeID + "/gossip",
		"svc/v1/test/" + site.OrgID + "/gates/" + site.SiteID + "/changes",
	} {
		_, _, _, err := protocol.ParseTopic(topic)
		require.ErrorIs(t, err, protocol.ErrTopic, topic)
	}
}

// roundTrip encodes m and decodes it into fresh, requiring equality.
func roundTrip[M protocol.Message](t *testing.T, m M, fresh M) {
	t.Helper()
	b, err := protocol.Encode(m)
	require.NoError(t, err)
	require.NoError(t, protocol.Decode(b, fresh))
	require.Equal(t, m, fresh)
}

func TestMessages_RoundTrip(t *testing.T) {
	v, k, p := visit(), key(), person()
	changes := []protocol.Change{
		{Seq: 41, At: at, Visit: &v},
		{Seq: 42, At: at, Gate: &protocol.Gate{ID: gateID, Name: "Main entrance", Direction: "entry"}},
		{Seq: 43, At: at, Settings: &protocol.Settings{Timezone: "Europe/London", OfflineLimitMinutes: 1440}},
		{Seq: 44, At: at, Key: &k},
		{Seq: 45, At: at, Person: &p},
	}
	roundTrip(t, &protocol.Batch{Changes: changes}, &protocol.Batch{})
	roundTrip(t, &protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, EdgeID: edgeID, Counter: 7, At: at,
		GateID: gateID, VisitID: v.ID, PassVisitID: v.ID}, &protocol.Fact{})
	roundTrip(t, &protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, EdgeID: edgeID, Counter: 8, At: at,
		GateID: gateID, Reason: protocol.ReasonInvalidToken}, &protocol.Fact{})
	roundTrip(t, &protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactPunch, EdgeID: edgeID, Counter: 9, At: at,
		GateID: gateID, PersonID: p.ID, Direction: protocol.DirectionOut}, &protocol.Fact{})
	roundTrip(t, &protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, EdgeID: edgeID, Counter: 10, At: at,
		GateID: gateID, PersonID: p.ID, Reason: protocol.ReasonPassReplaced}, &protocol.Fact{})
	roundTrip(t, &protocol.ResyncRequest{RequestID: "r-1", After: 40}, &protocol.ResyncRequest{})
	roundTrip(t, &protocol.Reply{Kind: protocol.ReplyAck, Acks: []string{ids.New(ids.Fact), ids.New(ids.Fact)}}, &protocol.Reply{})
	roundTrip(t, &protocol.Reply{Kind: protocol.ReplyChanges, RequestID: "r-1", Changes: changes, More: true}, &protocol.Reply{})
	roundTrip(t, &protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: "r-1", Snapshot: &protocol.Snapshot{Seq: 44, Part: 1, Parts: 2,
		Settings: changes[2].Settings, Gates: []protocol.Gate{*changes[1].Gate}, Keys: []protocol.Key{k}, Visits: []protocol.Visit{v}, People: []protocol.Person{p}}}, &protocol.Reply{})
	roundTrip(t, &protocol.Status{EdgeID: edgeID, State: "online", At: at, Seq: 44, Outbox: 3, Software: "svc-edge 0.1"}, &protocol.Status{})

	got := changes[0].Visit.Rules.Rules()
	require.Equal(t, passrule.Clock(8*60), got.Daily.From)
	require.Equal(t, []string{gateID}, got.GateIDs)
}

// EncodeWith writes what Encode does, byte for byte (HTML escaped, no
// newline), into its encoder's buffer, and refuses what Encode refuses.
func TestEncodeWith_AsEncode(t *testing.T) {
	var enc protocol.Encoder
	for _, f := range []protocol.Fact{
		{ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, EdgeID: edgeID, Counter: 7, At: at, GateID: gateID, VisitID: ids.New(ids.Visit)},
		{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, EdgeID: edgeID, Counter: 8, At: at, GateID: gateID,
			Reason: protocol.ReasonInvalidToken},
		{ID: ids.New(ids.Fact), Kind: protocol.FactWalkIn, EdgeID: edgeID, Counter: 9, At: at, VisitID: ids.New(ids.Visit),
			DeviceID: "kiosk-1", WalkIn: &protocol.WalkIn{Type: "meeting", Visitor: protocol.WalkInVisitor{Name: "<Vera> & Co"}}},
	} {
		want, err := protocol.Encode(&f)
		require.NoError(t, err)
		got, err := protocol.EncodeWith(&enc, &f)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	_, err := protocol.EncodeWith(&enc, &protocol.Fact{ID: "not an ID", Kind: protocol.FactCheckIn})
	require.ErrorIs(t, err, protocol.ErrInvalid)
}

func TestDecode_RefusesWhatIsNotAValidMessage(t *testing.T) {
	good, err := protocol.Encode(&protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, EdgeID: edgeID, Counter: 1,
		At: at, GateID: gateID, VisitID: ids.New(ids.Visit)})
	require.NoError(t, err)
	var f protocol.Fact
	require.NoError(t, protocol.Decode(good, &f))

	fact := func(edit func(string) string) []byte { return []byte(edit(string(good))) }
	for name, b := range map[string][]byte{
		"empty":            nil,
		"not JSON":         []byte("check in please"),
		"an array":         []byte(`[1,2]`),
		"unknown field":    fact(func(s string) string { return strings.Replace(s, `{`, `{"admin":true,`, 1) }),
		"another version":  fact(func(s string) string { return strings.Replace(s, `"v":1`, `"v":2`, 1) }),
		"no version":       fact(func(s string) string { return strings.Replace(s, `"v":1,`, ``, 1) }),
		"trailing data":    append(append([]byte{}, good...), []byte(`{}`)...),
		"bad kind":         fact(func(s string) string { return strings.Replace(s, `"check_in"`, `"teleport"`, 1) }),
		"counter zero":     fact(func(s string) string { return strings.Replace(s, `"counter":1`, `"counter":0`, 1) }),
		"negative counter": fact(func(s string) string { return strings.Replace(s, `"counter":1`, `"counter":-1`, 1) }),
		"bad gate":         fact(func(s string) string { return strings.Replace(s, gateID, "gate_123", 1) }),
		"too big":          bytes.Repeat([]byte(" "), protocol.MaxMessage+1),
	} {
		err := protocol.Decode(b, &protocol.Fact{})
		require.ErrorIs(t, err, protocol.ErrInvalid, name)
	}

	v := visit()
	for name, m := range map[string]*protocol.Batch{
		"no changes":  {},
		"a gap":       {Changes: []protocol.Change{{Seq: 1, At: at, Visit: &v}, {Seq: 3, At: at, Visit: &v}}},
		"two objects": {Changes: []protocol.Change{{Seq: 1, At: at, Visit: &v, Gate: &protocol.Gate{ID: gateID, Direction: "entry"}}}},
		"no object":   {Changes: []protocol.Change{{Seq: 1, At: at}}},
		"sequence 0":  {Changes: []protocol.Change{{Seq: 0, At: at, Visit: &v}}},
		"bad zone":    {Changes: []protocol.Change{{Seq: 1, At: at, Settings: &protocol.Settings{Timezone: "Mars/Olympus"}}}},
		"short key":   {Changes: []protocol.Change{{Seq: 1, At: at, Key: &protocol.Key{ID: "5eed0001", Public: []byte("short")}}}},
		"negative retire_at": {Changes: []protocol.Change{{Seq: 1, At: at, Key: &protocol.Key{ID: "5eed0001", Public: make([]byte, 32),
			RetireAt: -1}}}},
		"bad visit status": {Changes: []protocol.Change{{Seq: 1, At: at, Visit: &protocol.Visit{ID: v.ID, ForVisitID: v.ID, Status: "lost"}}}},
		"bad rules": {Changes: []protocol.Change{{Seq: 1, At: at, Visit: &protocol.Visit{ID: v.ID, ForVisitID: v.ID, Status: "expected",
			Rules: protocol.Rules{Window: protocol.Window{Before: -5}}}}}},
		"visit and person":       {Changes: []protocol.Change{{Seq: 1, At: at, Visit: &v, Person: &protocol.Person{ID: ids.New(ids.Person)}}}},
		"person with a visit ID": {Changes: []protocol.Change{{Seq: 1, At: at, Person: &protocol.Person{ID: v.ID}}}},
		"person name too long": {Changes: []protocol.Change{{Seq: 1, At: at, Person: &protocol.Person{ID: ids.New(ids.Person),
			Name: strings.Repeat("x", 201)}}}},
		"negative pass_issued_at": {Changes: []protocol.Change{{Seq: 1, At: at, Person: &protocol.Person{ID: ids.New(ids.Person),
			PassIssuedAt: -1}}}},
	} {
		_, err := protocol.Encode(m)
		require.ErrorIs(t, err, protocol.ErrInvalid, name)
	}
}

func TestDecode_RefusalReasons(t *testing.T) {
	base := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, EdgeID: edgeID, Counter: 1, At: at, GateID: gateID}
	for _, r := range passrule.Reasons() {
		f := base
		f.Reason = string(r)
		_, err := protocol.Encode(&f)
		require.NoError(t, err, r)
	}
	for _, r := range protocol.GateReasons() {
		f := base
		f.Reason = r
		_, err := protocol.Encode(&f)
		require.NoError(t, err, r)
	}
	f := base
	f.Reason = "admit"
	_, err := protocol.Encode(&f)
	require.True(t, errors.Is(err, protocol.ErrInvalid), "admit is no refusal")
	f.Reason = ""
	_, err = protocol.Encode(&f)
	require.True(t, errors.Is(err, protocol.ErrInvalid), "a refusal has a reason")
}

func TestPerson_Validate(t *testing.T) {
	p := person()
	require.NoError(t, protocol.Validate(&p))
	p.Name = strings.Repeat("é", 100) // 200 bytes
	require.NoError(t, protocol.Validate(&p), "a name of 200 bytes")
	p.Name, p.Active, p.PassIssuedAt = "", false, 0
	require.NoError(t, protocol.Validate(&p), "no name, inactive, no pass yet")
	p.Name = strings.Repeat("é", 100) + "x"
	require.ErrorIs(t, protocol.Validate(&p), protocol.ErrInvalid, "201 bytes")

	b, err := json.Marshal(person())
	require.NoError(t, err)
	var got protocol.Person
	require.NoError(t, protocol.DecodeObject(b, &got))
	require.Equal(t, person().Name, got.Name)
	for name, raw := range map[string]string{
		"unknown field":  strings.Replace(string(b), `{`, `{"email":"a@b.c",`, 1),
		"trailing data":  string(b) + `{}`,
		"bad ID":         strings.Replace(string(b), `"person_`, `"visit_`, 1),
		"negative time":  strings.Replace(string(b), `"pass_issued_at":`, `"pass_issued_at":-`, 1),
		"active as text": strings.Replace(string(b), `"active":true`, `"active":"yes"`, 1),
	} {
		require.ErrorIs(t, protocol.DecodeObject([]byte(raw), &protocol.Person{}), protocol.ErrInvalid, name)
	}

	people := make([]protocol.Person, protocol.MaxSnapshot+1)
	for i := range people {
		people[i] = protocol.Person{ID: ids.New(ids.Person)}
	}
	_, err = protocol.Encode(&protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: "r", Snapshot: &protocol.Snapshot{Part: 1, Parts: 1, People: people}})
	require.ErrorIs(t, err, protocol.ErrInvalid, "more people than a part holds")
	bad := protocol.Snapshot{Part: 1, Parts: 1, People: []protocol.Person{{ID: "person_123"}}}
	_, err = protocol.Encode(&protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: "r", Snapshot: &bad})
	require.ErrorIs(t, err, protocol.ErrInvalid, "a bad person in a snapshot")
}

func TestFact_PunchAndPersonFields(t *testing.T) {
	personID, visitID := ids.New(ids.Person), ids.New(ids.Visit)
	base := protocol.Fact{ID: ids.New(ids.Fact), EdgeID: edgeID, Counter: 1, At: at, GateID: gateID}
	with := func(edit func(*protocol.Fact)) protocol.Fact {
		f := base
		edit(&f)
		return f
	}
	punch := func(edit func(*protocol.Fact)) protocol.Fact {
		return with(func(f *protocol.Fact) {
			f.Kind, f.PersonID, f.Direction = protocol.FactPunch, personID, protocol.DirectionIn
			edit(f)
		})
	}
	for name, tc := range map[string]struct {
		f  protocol.Fact
		ok bool
	}{
		"punch in":                  {punch(func(*protocol.Fact) {}), true},
		"punch out":                 {punch(func(f *protocol.Fact) { f.Direction = protocol.DirectionOut }), true},
		"punch without person":      {punch(func(f *protocol.Fact) { f.PersonID = "" }), false},
		"punch with a visit ID":     {punch(func(f *protocol.Fact) { f.PersonID = visitID }), false},
		"punch without direction":   {punch(func(f *protocol.Fact) { f.Direction = "" }), false},
		"punch sideways":            {punch(func(f *protocol.Fact) { f.Direction = "both" }), false},
		"punch naming a visit":      {punch(func(f *protocol.Fact) { f.VisitID = visitID }), false},
		"punch naming a pass visit": {punch(func(f *protocol.Fact) { f.PassVisitID = visitID }), false},
		"punch with a reason":       {punch(func(f *protocol.Fact) { f.Reason = protocol.ReasonInvalidToken }), false},
		"refused personal pass": {with(func(f *protocol.Fact) {
			f.Kind, f.PersonID, f.Reason = protocol.FactRefused, personID, protocol.ReasonPersonInactive
		}), true},
		"refused naming person+visit": {with(func(f *protocol.Fact) {
			f.Kind, f.PersonID, f.VisitID, f.Reason = protocol.FactRefused, personID, visitID, protocol.ReasonNotIn
		}), false},
		"refused with a direction": {with(func(f *protocol.Fact) {
			f.Kind, f.Direction, f.Reason = protocol.FactRefused, protocol.DirectionIn, protocol.ReasonStale
		}), false},
		"check_in naming a person": {with(func(f *protocol.Fact) { f.Kind, f.VisitID, f.PersonID = protocol.FactCheckIn, visitID, personID }), false},
		"check_out with a direction": {with(func(f *protocol.Fact) {
			f.Kind, f.VisitID, f.Direction = protocol.FactCheckOut, visitID, protocol.DirectionOut
		}), false},
	} {
		_, err := protocol.Encode(&tc.f)
		if tc.ok {
			require.NoError(t, err, name)
		} else {
			require.ErrorIs(t, err, protocol.ErrInvalid, name)
		}
	}
	require.Contains(t, protocol.GateReasons(), protocol.ReasonPersonInactive)
	require.Contains(t, protocol.GateReasons(), protocol.ReasonPassReplaced)
}

// FuzzDecode feeds arbitrary bytes to every decoder: none may panic, and
// whatever one accepts encodes again to a message it accepts equally.
func FuzzDecode(f *testing.F) {
	v, k, p := visit(), key(), person()
	for _, m := range []any{
		&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: at, Visit: &v}, {Seq: 2, At: at, Key: &k}, {Seq: 3, At: at, Person: &p}}},
		&protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactPunch, EdgeID: edgeID, Counter: 4, At: at, GateID: gateID, PersonID: p.ID, Direction: "in"},
		&protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactReEntry, EdgeID: edgeID, Counter: 3, At: at, GateID: gateID, VisitID: v.ID, PassVisitID: v.ID},
		&protocol.ResyncRequest{RequestID: "x", After: 9},
		&protocol.Reply{Kind: protocol.ReplyAck, Acks: []string{ids.New(ids.Fact)}},
		&protocol.Status{EdgeID: edgeID, State: "offline", At: at},
	} {
		var b []byte
		var err error
		switch m := m.(type) {
		case *protocol.Batch:
			b, err = protocol.Encode(m)
		case *protocol.Fact:
			b, err = protocol.Encode(m)
		case *protocol.ResyncRequest:
			b, err = protocol.Encode(m)
		case *protocol.Reply:
			b, err = protocol.Encode(m)
		case *protocol.Status:
			b, err = protocol.Encode(m)
		}
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzOne(t, b, &protocol.Batch{}, &protocol.Batch{})
		fuzzOne(t, b, &protocol.Fact{}, &protocol.Fact{})
		fuzzOne(t, b, &protocol.ResyncRequest{}, &protocol.ResyncRequest{})
		fuzzOne(t, b, &protocol.Reply{}, &protocol.Reply{})
		fuzzOne(t, b, &protocol.Status{}, &protocol.Status{})
	})
}

func fuzzOne[M protocol.Message](t *testing.T, b []byte, m, again M) {
	if protocol.Decode(b, m) != nil {
		return
	}
	out, err := protocol.Encode(m)
	require.NoError(t, err, "an accepted message encodes")
	require.NoError(t, protocol.Decode(out, again), "and decodes again")
	require.Equal(t, m, again)
}

func TestDecodeObject_StrictLikeAMessage(t *testing.T) {
	v := visit()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var got protocol.Visit
	require.NoError(t, protocol.DecodeObject(b, &got))
	require.Equal(t, v, got)

	for name, raw := range map[string]string{
		"unknown field": strings.Replace(string(b), `{`, `{"pin":"1234",`, 1),
		"trailing data": string(b) + `{}`,
		"bad status":    strings.Replace(string(b), `"expected"`, `"lost"`, 1),
	} {
		require.ErrorIs(t, protocol.DecodeObject([]byte(raw), &protocol.Visit{}), protocol.ErrInvalid, name)
	}
	require.ErrorIs(t, protocol.Validate(&protocol.Gate{ID: gateID, Direction: "sideways"}), protocol.ErrInvalid)
	require.NoError(t, protocol.Validate(&protocol.Gate{ID: gateID, Direction: "exit"}))
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:1884": true, "127.1.2.3:1": true, "[::1]:1884": true, "localhost:1884": true, "LocalHost:1": true,
		"[::ffff:127.0.0.1]:1884": true,
		"0.0.0.0:1884":            false, ":1884": false, "[::]:1884": false, "192.168.1.10:1884": false, "10.0.0.1:1": false,
		"example.com:1884": false, "localhost.example.com:1": false, "127.0.0.1": false, "": false,
	} {
		if got := protocol.LoopbackAddr(addr); got != want {
			t.Errorf("LoopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestKey_RetireAt(t *testing.T) {
	k := key()
	k.RetireAt = at.Add(time.Hour).Unix()
	raw, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: at, Key: &k}}})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"retire_at":`+strconv.FormatInt(k.RetireAt, 10))
	var b protocol.Batch
	require.NoError(t, protocol.Decode(raw, &b))
	got := b.Changes[0].Key
	require.Equal(t, k.RetireAt, got.RetireAt)
	require.True(t, got.Verifies(at.Add(time.Hour-time.Second)))
	require.False(t, got.Verifies(at.Add(time.Hour)), "retired at its second")
	require.True(t, (&protocol.Key{ID: k.ID, Public: k.Public}).Verifies(at.Add(100*365*24*time.Hour)), "no retire time: no end")
}
