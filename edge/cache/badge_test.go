package cache_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// A badge key from the feed verifies badges of its own site only, never
// passes (it is not among Keys), survives a restart and a snapshot that
// holds it, and stops with its retirement (the edge revoked).
func TestView_BadgeKeys(t *testing.T) {
	c, path := newCache(t)
	site, other := ids.New(ids.Site), ids.New(ids.Site)
	org := newKey(t, "0000000a")
	badge := newKey(t, "0000000b")
	badge.Kind, badge.SiteID = protocol.KeyBadge, site
	apply(t, c, 1, org, badge)

	check := func(want bool) {
		t.Helper()
		v := c.View()
		require.Len(t, v.Keys(), 1, "only the organisation's key verifies passes")
		require.Contains(t, v.KeysAt(t0), org.ID)
		require.NotContains(t, v.KeysAt(t0), badge.ID)
		require.Empty(t, v.BadgeKeysAt(other, t0), "another site's badges")
		require.NotContains(t, v.BadgeKeysAt(site, t0), org.ID, "an organisation key never verifies a badge")
		if want {
			require.Equal(t, ed25519.PublicKey(badge.Public), v.BadgeKeysAt(site, t0)[badge.ID])
		} else {
			require.Empty(t, v.BadgeKeysAt(site, t0))
		}
	}
	check(true)
	c = reopen(t, c, path)
	check(true)
	require.NoError(t, c.ReplaceSnapshot(snapshot(5, 10, nil, nil, []protocol.Key{org, badge}, nil)))
	check(true)

	// A retire time of its own (none is sent today) is honoured too.
	timed := badge
	timed.RetireAt = t0.Unix() + 60
	apply(t, c, 6, timed)
	require.Contains(t, c.View().BadgeKeysAt(site, t0), badge.ID)
	require.Empty(t, c.View().BadgeKeysAt(site, t0.Add(60e9)))

	retired := badge
	retired.Retired = true
	apply(t, c, 7, retired)
	check(false)
	c = reopen(t, c, path)
	check(false)
}
