package protocol_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

func deskFact(kind protocol.FactKind) protocol.Fact {
	f := protocol.Fact{ID: ids.New(ids.Fact), Kind: kind, EdgeID: edgeID, Counter: 1, At: at, VisitID: ids.New(ids.Visit),
		DeviceID: "kiosk-1"}
	switch kind {
	case protocol.FactWalkIn:
		f.WalkIn = &protocol.WalkIn{Type: "meeting", TeamID: ids.New(ids.Team), Visitor: protocol.WalkInVisitor{Name: "Vera"},
			CustomFields: map[string]json.RawMessage{"nda": json.RawMessage(`true`)}}
	case protocol.FactTake:
		f.PersonID = ids.New(ids.Person)
	case protocol.FactHandOver:
		f.To = protocol.ToReception
	}
	return f
}

// A kiosk fact happens at no gate: it names its device instead, and each
// kind exactly its own fields; a gate's fact still needs its gate.
func TestFact_DeskKinds(t *testing.T) {
	for _, k := range []protocol.FactKind{protocol.FactWalkIn, protocol.FactDeskCheckIn, protocol.FactDeskCheckOut,
		protocol.FactTake, protocol.FactHandOver} {
		f := deskFact(k)
		b, err := protocol.Encode(&f)
		require.NoError(t, err, k)
		var back protocol.Fact
		require.NoError(t, protocol.Decode(b, &back), k)
		require.Equal(t, f, back)
	}
	bad := map[string]func(*protocol.Fact){
		"a gate":                 func(f *protocol.Fact) { f.GateID = gateID },
		"no device":              func(f *protocol.Fact) { f.DeviceID = "" },
		"a device with a space":  func(f *protocol.Fact) { f.DeviceID = "kiosk 1" },
		"no visit":               func(f *protocol.Fact) { f.VisitID = "" },
		"a reason":               func(f *protocol.Fact) { f.Reason = "expired" },
		"walk_in on a check-out": func(f *protocol.Fact) { f.Kind = protocol.FactDeskCheckOut },
		"a person on a walk-in":  func(f *protocol.Fact) { f.PersonID = ids.New(ids.Person) },
		"no type":                func(f *protocol.Fact) { f.WalkIn.Type = "" },
		"host and team":          func(f *protocol.Fact) { f.WalkIn.HostID = ids.New(ids.Person) },
		"a bad answer":           func(f *protocol.Fact) { f.WalkIn.CustomFields["x"] = json.RawMessage(`{`) },
		"a bad visitor ID":       func(f *protocol.Fact) { f.WalkIn.VisitorID = ids.New(ids.Person) },
	}
	for name, mutate := range bad {
		f := deskFact(protocol.FactWalkIn)
		mutate(&f)
		_, err := protocol.Encode(&f)
		require.ErrorIs(t, err, protocol.ErrInvalid, name)
	}
	for name, f := range map[string]protocol.Fact{
		"take without a person": func() protocol.Fact { f := deskFact(protocol.FactTake); f.PersonID = ""; return f }(),
		"hand-over to nobody":   func() protocol.Fact { f := deskFact(protocol.FactHandOver); f.To = ""; return f }(),
		"hand-over to a team without one": func() protocol.Fact {
			f := deskFact(protocol.FactHandOver)
			f.To = protocol.ToTeam
			return f
		}(),
		"hand-over to reception with a person": func() protocol.Fact {
			f := deskFact(protocol.FactHandOver)
			f.PersonID = ids.New(ids.Person)
			return f
		}(),
		"a gate check-in without a gate": {ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, EdgeID: edgeID, Counter: 1, At: at,
			VisitID: ids.New(ids.Visit)},
		"a gate check-in with a device": {ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, EdgeID: edgeID, Counter: 1, At: at,
			VisitID: ids.New(ids.Visit), GateID: gateID, DeviceID: "kiosk-1"},
	} {
		_, err := protocol.Encode(&f)
		require.ErrorIs(t, err, protocol.ErrInvalid, name)
	}
	ok := deskFact(protocol.FactHandOver)
	ok.To, ok.TeamID = protocol.ToTeam, ids.New(ids.Team)
	_, err := protocol.Encode(&ok)
	require.NoError(t, err)
}

// The kiosk's objects and fields go through the feed and snapshots, and
// are checked as strictly as the rest.
func TestChange_KioskObjects(t *testing.T) {
	v := visit()
	since := at.Add(time.Minute)
	v.Type, v.Source, v.Audience, v.TeamID, v.TeamName = "meeting", "walk_in", "team", ids.New(ids.Team), "Sales"
	v.NeedsSomeone, v.WaitingSince, v.VisitorID, v.VisitorEmail = true, &since, ids.New(ids.Visitor), "vera@example.com"
	p := person()
	p.JobTitle = "Engineer"
	b := protocol.Batch{Changes: []protocol.Change{
		{Seq: 1, At: at, Visit: &v},
		{Seq: 2, At: at, Team: &protocol.Team{ID: ids.New(ids.Team), Name: "Sales", VisitorsCanChoose: true}},
		{Seq: 3, At: at, VisitType: &protocol.VisitType{Key: "meeting", Name: "Meeting", Enabled: true, Form: json.RawMessage(`{"type":"object"}`)}},
		{Seq: 4, At: at, Person: &p},
		{Seq: 5, At: at, Settings: &protocol.Settings{Timezone: "Europe/London", SiteName: "HQ", WaitLimitMinutes: 15}},
	}}
	raw, err := protocol.Encode(&b)
	require.NoError(t, err)
	var back protocol.Batch
	require.NoError(t, protocol.Decode(raw, &back))
	require.Equal(t, b, back)

	for name, c := range map[string]protocol.Change{
		"a bad source":           {Seq: 1, Visit: func() *protocol.Visit { x := v; x.Source = "gate"; return &x }()},
		"a team name, no team":   {Seq: 1, Visit: func() *protocol.Visit { x := v; x.TeamID = ""; return &x }()},
		"a bad host":             {Seq: 1, Visit: func() *protocol.Visit { x := v; x.HostID = x.TeamID; return &x }()},
		"a team without an ID":   {Seq: 1, Team: &protocol.Team{Name: "x"}},
		"a type without a key":   {Seq: 1, VisitType: &protocol.VisitType{Name: "x"}},
		"a form that is no JSON": {Seq: 1, VisitType: &protocol.VisitType{Key: "k", Form: json.RawMessage(`{`)}},
		"a wait limit too long":  {Seq: 1, Settings: &protocol.Settings{Timezone: "UTC", WaitLimitMinutes: 2000}},
	} {
		raw, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{c}})
		require.True(t, errors.Is(err, protocol.ErrInvalid), "%s: %v %s", name, err, raw)
	}
}

func TestVisit_Receiver(t *testing.T) {
	base := protocol.Visit{ID: ids.New(ids.Visit), Status: "checked_in", Rules: protocol.Rules{GateIDs: []string{}}}
	base.ForVisitID = base.ID
	person, team := ids.New(ids.Person), ids.New(ids.Team)
	for _, ok := range []protocol.Visit{
		base,
		func() protocol.Visit { x := base; x.Receiver = protocol.ToReception; return x }(),
		func() protocol.Visit { x := base; x.Receiver, x.ReceiverID = protocol.ToPerson, person; return x }(),
		func() protocol.Visit { x := base; x.Receiver, x.ReceiverID = protocol.ToTeam, team; return x }(),
	} {
		require.NoError(t, protocol.Validate(&ok), "%+v", ok)
	}
	for name, bad := range map[string]protocol.Visit{
		"an ID without a receiver":  func() protocol.Visit { x := base; x.ReceiverID = person; return x }(),
		"reception with an ID":      func() protocol.Visit { x := base; x.Receiver, x.ReceiverID = protocol.ToReception, person; return x }(),
		"a person with a team's ID": func() protocol.Visit { x := base; x.Receiver, x.ReceiverID = protocol.ToPerson, team; return x }(),
		"a team without an ID":      func() protocol.Visit { x := base; x.Receiver = protocol.ToTeam; return x }(),
		"an unknown receiver":       func() protocol.Visit { x := base; x.Receiver = "board"; return x }(),
	} {
		require.ErrorIs(t, protocol.Validate(&bad), protocol.ErrInvalid, name)
	}
}
