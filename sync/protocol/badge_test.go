package protocol_test

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// A badge key names its kind and its one site; an organisation key names
// neither; nothing else passes.
func TestKey_BadgeKind(t *testing.T) {
	badge := key()
	badge.Kind, badge.SiteID = protocol.KeyBadge, site.SiteID
	raw, err := protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: at, Key: &badge}}})
	require.NoError(t, err)
	require.Contains(t, string(raw), `"kind":"walk_in_badge","site_id":"`+site.SiteID+`"`)
	var b protocol.Batch
	require.NoError(t, protocol.Decode(raw, &b))
	require.Equal(t, badge, *b.Changes[0].Key)

	org := key()
	raw, err = protocol.Encode(&protocol.Batch{Changes: []protocol.Change{{Seq: 1, At: at, Key: &org}}})
	require.NoError(t, err)
	require.NotContains(t, string(raw), "kind", "an organisation key is sent as before")

	for name, k := range map[string]protocol.Key{
		"badge key with no site":       {ID: badge.ID, Public: badge.Public, Kind: protocol.KeyBadge},
		"badge key with a visit ID":    {ID: badge.ID, Public: badge.Public, Kind: protocol.KeyBadge, SiteID: ids.New(ids.Visit)},
		"organisation key with a site": {ID: badge.ID, Public: badge.Public, SiteID: site.SiteID},
		"unknown kind":                 {ID: badge.ID, Public: badge.Public, Kind: "master", SiteID: site.SiteID},
	} {
		require.ErrorIs(t, protocol.Validate(&k), protocol.ErrInvalid, name)
		_, err := protocol.Encode(&protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: "r",
			Snapshot: &protocol.Snapshot{Part: 1, Parts: 1, Keys: []protocol.Key{k}}})
		require.ErrorIs(t, err, protocol.ErrInvalid, name+" in a snapshot")
	}
	good := strings.Replace(string(raw), `"id":`, `"kind":"walk_in_badge","site_id":"`+site.SiteID+`","id":`, 1)
	require.NoError(t, protocol.Decode([]byte(good), &protocol.Batch{}))
	require.ErrorIs(t, protocol.Decode([]byte(strings.Replace(good, `"walk_in_badge"`, `"Walk_In_Badge"`, 1)), &protocol.Batch{}), protocol.ErrInvalid)
}

// An online status may carry the edge's badge key, whole; an offline one
// (the last will) carries none.
func TestStatus_BadgeKey(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	st := protocol.Status{EdgeID: edgeID, State: "online", At: at, Seq: 4, BadgeKey: pub}
	roundTrip(t, &st, &protocol.Status{})
	for name, bad := range map[string]protocol.Status{
		"short key":         {EdgeID: edgeID, State: "online", At: at, BadgeKey: pub[:31]},
		"long key":          {EdgeID: edgeID, State: "online", At: at, BadgeKey: append(append([]byte{}, pub...), 0)},
		"empty key":         {EdgeID: edgeID, State: "online", At: at, BadgeKey: []byte{}},
		"in an offline one": {EdgeID: edgeID, State: "offline", At: at, BadgeKey: pub},
	} {
		_, err := protocol.Encode(&bad)
		require.ErrorIs(t, err, protocol.ErrInvalid, name)
	}
	b, err := protocol.Encode(&st)
	require.NoError(t, err)
	require.ErrorIs(t, protocol.Decode([]byte(strings.Replace(string(b), `"badge_key":"`, `"badge_key":"AAAA`, 1)), &protocol.Status{}),
		protocol.ErrInvalid, "36 bytes")
}
