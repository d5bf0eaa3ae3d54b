package mqttsync

import (
	"crypto/ed25519"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// Every online status carries the appliance's badge key for the cloud to
// certify; the last will (offline) carries none.
func TestEdge_StatusCarriesBadgeKey(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	id := ids.New(ids.Edge)
	e, err := NewEdge(EdgeConfig{BrokerURL: "tcp://127.0.0.1:1", Site: newSite(), EdgeID: id, Store: newFakeEdge(id),
		Logger: testLogger(t), BadgeKey: pub})
	require.NoError(t, err)
	r := &recorder{}
	e.publishStatus(r)
	msgs := r.take()
	require.Len(t, msgs, 1)
	var st protocol.Status
	require.NoError(t, protocol.Decode(msgs[0].payload, &st))
	require.Equal(t, "online", st.State)
	require.Equal(t, []byte(pub), st.BadgeKey)

	will, err := e.status("offline")
	require.NoError(t, err)
	st = protocol.Status{}
	require.NoError(t, protocol.Decode(will, &st))
	require.Nil(t, st.BadgeKey)
}

// An online status says why the appliance could not drive the hardware
// the cloud sent, cut to what a status holds; the last will says nothing.
func TestEdge_StatusCarriesHardwareError(t *testing.T) {
	id := ids.New(ids.Edge)
	why := "gate gate_x: tcp reader: listen tcp 0.0.0.0:9001: bind: address already in use"
	e, err := NewEdge(EdgeConfig{BrokerURL: "tcp://127.0.0.1:1", Site: newSite(), EdgeID: id, Store: newFakeEdge(id),
		Logger: testLogger(t), HardwareError: func() string { return why }})
	require.NoError(t, err)
	decode := func(state string) protocol.Status {
		b, err := e.status(state)
		require.NoError(t, err)
		var st protocol.Status
		require.NoError(t, protocol.Decode(b, &st))
		return st
	}
	require.Equal(t, why, decode("online").HardwareError)
	require.Empty(t, decode("offline").HardwareError)

	why = strings.Repeat("é", protocol.MaxHardwareError) // twice as many bytes as it holds
	got := decode("online").HardwareError
	require.LessOrEqual(t, len(got), protocol.MaxHardwareError)
	require.True(t, utf8.ValidString(got))
	require.True(t, strings.HasPrefix(why, got))
}

// When what the appliance says of its hardware changes, the next tick
// publishes a status, not StatusEvery later.
func TestEdge_StatusAtOnceWhenTheHardwareErrorChanges(t *testing.T) {
	id := ids.New(ids.Edge)
	var why atomic.Value
	why.Store("")
	e, err := NewEdge(EdgeConfig{BrokerURL: "tcp://127.0.0.1:1", Site: newSite(), EdgeID: id, Store: newFakeEdge(id),
		Logger: testLogger(t), HardwareError: func() string { return why.Load().(string) }})
	require.NoError(t, err)
	r := &recorder{}
	e.publishStatus(r)
	statuses := func() []protocol.Status {
		var out []protocol.Status
		for _, m := range r.take() {
			if m.topic == e.cfg.Site.Status(id) {
				var st protocol.Status
				require.NoError(t, protocol.Decode(m.payload, &st))
				out = append(out, st)
			}
		}
		return out
	}
	require.Len(t, statuses(), 1)
	e.onTick(r)
	require.Empty(t, statuses(), "nothing changed: the status waits for StatusEvery")
	why.Store("gate gate_x: serial reader: stat /dev/ttyACM9: no such file or directory")
	e.onTick(r)
	got := statuses()
	require.Len(t, got, 1)
	require.Equal(t, why.Load(), got[0].HardwareError)
	e.onTick(r)
	require.Empty(t, statuses(), "told once")
}
