package protocol_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/sync/protocol"
)

func doc() *hardware.Document {
	d := &hardware.Document{Gates: []hardware.Gate{{ID: gateID, Readers: []hardware.Reader{{Kind: hardware.TCP, Listen: "127.0.0.1:9001"}},
		Relay: hardware.Relay{Pin: "GPIO17"}}}, Kiosk: &hardware.Kiosk{Printer: "10.0.0.5:9100"}}
	d.Defaults()
	return d
}

// An edge's hardware travels in a change and in a snapshot, and reads back
// as sent; null hardware (the cloud holds none) too.
func TestHardware_RoundTrip(t *testing.T) {
	for name, hw := range map[string]*protocol.EdgeHardware{
		"document": {EdgeID: edgeID, Hardware: doc()},
		"none":     {EdgeID: edgeID},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 7, At: at, Hardware: hw}}})
			require.NoError(t, err)
			var got protocol.Batch
			require.NoError(t, protocol.Decode(b, &got))
			require.Equal(t, hw, got.Changes[0].Hardware)

			b, err = protocol.Encode(&protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: "r1",
				Snapshot: &protocol.Snapshot{Seq: 7, Part: 1, Parts: 1, Hardware: hw}})
			require.NoError(t, err)
			var reply protocol.Reply
			require.NoError(t, protocol.Decode(b, &reply))
			require.Equal(t, hw, reply.Snapshot.Hardware)
		})
	}
}

// What the hardware document's own checks refuse, the wire refuses: the
// edge never takes a document the API would not have accepted.
func TestHardware_Refused(t *testing.T) {
	bad := doc()
	bad.Gates[0].Relay.Pin = ""
	_, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: at, Hardware: &protocol.EdgeHardware{EdgeID: edgeID, Hardware: bad}}}})
	require.ErrorIs(t, err, protocol.ErrInvalid)
	require.ErrorContains(t, err, "changes[0].hardware.hardware.gates[0].relay.pin: must name a GPIO line")

	_, err = protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: at, Hardware: &protocol.EdgeHardware{EdgeID: gateID}}}})
	require.ErrorContains(t, err, "edge_id is not an edge ID")

	good, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: at, Hardware: &protocol.EdgeHardware{EdgeID: edgeID, Hardware: doc()}}}})
	require.NoError(t, err)
	for name, raw := range map[string]string{
		"unknown field": strings.Replace(string(good), `"pin":"GPIO17"`, `"pin":"GPIO17","colour":"red"`, 1),
		"bad pulse":     strings.Replace(string(good), `"pulse":"500ms"`, `"pulse":"2m"`, 1),
		"two objects":   strings.Replace(string(good), `"hardware":{`, `"gate":{"id":"`+gateID+`","name":"G","direction":"entry"},"hardware":{`, 1),
	} {
		require.NotEqual(t, string(good), raw, name)
		var b protocol.Batch
		require.ErrorIs(t, protocol.Decode([]byte(raw), &b), protocol.ErrInvalid, name)
	}
}
