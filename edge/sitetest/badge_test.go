package sitetest_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// An appliance's walk-in badge key travels over the broker in its status,
// the cloud certifies it for that appliance's site, and the site's feed
// brings it back to that edge alone. A badge the appliance signs then
// opens its own site's gates, with the cloud out of reach, and is refused
// invalid_token at the other site's. Revoking the edge retires the key:
// the site's next appliance does not accept its badges, and gets a key of
// its own certified.
func TestBadge_CertifiedForItsSiteOnly(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		home := w.NewEdge(t, sitetest.EdgeOptions{BadgeKeyByStatus: true})
		away := w.NewEdge(t, sitetest.EdgeOptions{Other: true, BadgeKeyByStatus: true})
		home.Start()
		away.Start()
		key := home.BadgeKey(t)
		sitetest.Eventually(t, settle, func() bool {
			return bytes.Equal(w.CloudEdge(t, home.ID).BadgeKey, key.Public()) && len(home.View().BadgeKeysAt(w.Site.SiteID, time.Now())) == 1
		}, "the home edge's badge key was not certified and fed back to it")
		awayKey := away.BadgeKey(t)
		sitetest.Eventually(t, settle, func() bool { return len(away.View().BadgeKeysAt(w.Other.SiteID, time.Now())) == 1 },
			"the away edge's badge key was not certified and fed back to it")
		w.WaitConverged(t, home, settle)
		require.NotEqual(t, key.ID(), awayKey.ID())

		// The cloud goes away; a walk-in signs in at the desk.
		w.StopCloud()
		loc, err := time.LoadLocation("Europe/London")
		require.NoError(t, err)
		visitID := ids.New(ids.Visit)
		badge, err := key.Sign(visitID, w.Site.SiteID, time.Now(), loc)
		require.NoError(t, err)

		r := away.Scan(t, w.OtherGate, badge)
		require.False(t, r.Admitted)
		require.Equal(t, protocol.ReasonInvalidToken, r.Reason, "another site's gate")
		v := away.View()
		require.Empty(t, v.BadgeKeysAt(w.Site.SiteID, time.Now()), "the other site's feed never carried the key")
		require.NotContains(t, v.BadgeKeysAt(w.Other.SiteID, time.Now()), key.ID())
		require.Contains(t, v.BadgeKeysAt(w.Other.SiteID, time.Now()), awayKey.ID(), "its own edge's key")

		r = home.Scan(t, w.Entry, badge)
		require.True(t, r.Admitted, "%+v", r)
		require.Equal(t, string(protocol.FactCheckIn), r.Kind)
		require.Equal(t, visitID, r.VisitID)
		r = home.Scan(t, w.Exit, badge)
		require.True(t, r.Admitted, "%+v", r)
		got, ok := home.View().Visit(visitID)
		require.True(t, ok)
		require.Equal(t, string(passrule.CheckedOut), got.Status)

		// Back online, the check-in and check-out reach the cloud (which
		// records them against a visit it does not know yet: the kiosk's
		// walk-in fact makes the visit).
		w.StartCloud()
		sitetest.Eventually(t, settle, func() bool { return home.Outbox() == 0 }, "the facts did not reach the cloud")

		// Revoked: the key is retired on the site's feed, and the site's
		// next appliance refuses the old appliance's badges.
		_, err = w.Svc().RevokeEdge(t.Context(), w.Tenant, home.ID)
		require.NoError(t, err)
		home.Stop()
		next := w.NewEdge(t, sitetest.EdgeOptions{BadgeKeyByStatus: true})
		next.Start()
		nextKey := next.BadgeKey(t)
		sitetest.Eventually(t, settle, func() bool {
			keys := next.View().BadgeKeysAt(w.Site.SiteID, time.Now())
			_, old := keys[key.ID()]
			_, own := keys[nextKey.ID()]
			return !old && own
		}, "the next edge did not get its own key certified, without the revoked edge's")
		w.WaitConverged(t, next, settle)
		other := ids.New(ids.Visit)
		oldBadge, err := key.Sign(other, w.Site.SiteID, time.Now(), loc)
		require.NoError(t, err)
		r = next.Scan(t, w.Entry, oldBadge)
		require.Equal(t, protocol.ReasonInvalidToken, r.Reason, "a revoked appliance's badge")
		newBadge, err := nextKey.Sign(other, w.Site.SiteID, time.Now(), loc)
		require.NoError(t, err)
		r = next.Scan(t, w.Entry, newBadge)
		require.True(t, r.Admitted, "%+v", r)
	})
}
