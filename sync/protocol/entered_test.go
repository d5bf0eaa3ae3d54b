package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// An entered fact names its gate, its visit and the pass's visit, and
// nothing a desk's or a punch's fact names.
func TestFact_Entered(t *testing.T) {
	visitID, personID := ids.New(ids.Visit), ids.New(ids.Person)
	entered := func(edit func(*protocol.Fact)) protocol.Fact {
		f := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactEntered, EdgeID: edgeID, Counter: 1, At: at, GateID: gateID,
			VisitID: visitID, PassVisitID: visitID}
		edit(&f)
		return f
	}
	ok := entered(func(*protocol.Fact) {})
	roundTrip(t, &ok, &protocol.Fact{})
	require.False(t, protocol.DeskKind(protocol.FactEntered), "a gate's fact")
	for name, f := range map[string]protocol.Fact{
		"no gate":             entered(func(f *protocol.Fact) { f.GateID = "" }),
		"a device for a gate": entered(func(f *protocol.Fact) { f.GateID, f.DeviceID = "", "tablet-1" }),
		"no visit":            entered(func(f *protocol.Fact) { f.VisitID = "" }),
		"no pass visit":       entered(func(f *protocol.Fact) { f.PassVisitID = "" }),
		"a bad pass visit":    entered(func(f *protocol.Fact) { f.PassVisitID = personID }),
		"a reason":            entered(func(f *protocol.Fact) { f.Reason = protocol.ReasonAlreadyIn }),
		"a person":            entered(func(f *protocol.Fact) { f.PersonID = personID }),
		"a direction":         entered(func(f *protocol.Fact) { f.Direction = protocol.DirectionIn }),
		"voids":               entered(func(f *protocol.Fact) { f.Voids = ids.New(ids.Fact) }),
	} {
		_, err := protocol.Encode(&f)
		require.ErrorIs(t, err, protocol.ErrInvalid, name)
	}
}

// A visit's gate_id and at_desk go on the wire only when set, so a visit
// without them reads as before; a visit at the desk names no gate.
func TestVisit_GateAndDesk(t *testing.T) {
	v := visit()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "gate_id\"")
	require.NotContains(t, string(raw), "at_desk")

	in := v
	in.Status, in.GateID = "checked_in", gateID
	b, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: at, Visit: &in}}})
	require.NoError(t, err)
	require.Contains(t, string(b), `"gate_id":"`+gateID+`"`)
	var got protocol.Batch
	require.NoError(t, protocol.Decode(b, &got))
	require.Equal(t, in, *got.Changes[0].Visit)

	desk := v
	desk.Status, desk.AtDesk = "checked_in", true
	require.NoError(t, protocol.Validate(&desk))

	for name, bad := range map[string]protocol.Visit{
		"a gate_id that is no gate's": func() protocol.Visit { x := v; x.GateID = v.ID; return x }(),
		"at_desk with a gate":         func() protocol.Visit { x := desk; x.GateID = gateID; return x }(),
	} {
		require.ErrorIs(t, protocol.Validate(&bad), protocol.ErrInvalid, name)
	}
}
