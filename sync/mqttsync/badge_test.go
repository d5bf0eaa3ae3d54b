package mqttsync

import (
	"crypto/ed25519"
	"testing"

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
