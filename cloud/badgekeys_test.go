package cloud_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

func newBadgePub(t *testing.T) ed25519.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	return pub
}

// status is the env's edge saying it is online, with its badge key.
func (e *edgeEnv) status(pub []byte) protocol.Status {
	return protocol.Status{EdgeID: e.edge.ID, State: cloud.EdgeOnline, At: e.clock.Now(), Software: "test", BadgeKey: pub}
}

// badgeKeys are the badge keys among changes.
func badgeKeys(cs []protocol.Change) []protocol.Key {
	var out []protocol.Key
	for _, c := range cs {
		if c.Key != nil && c.Key.Kind == protocol.KeyBadge {
			out = append(out, *c.Key)
		}
	}
	return out
}

func snapshotBadgeKeys(t *testing.T, svc *cloud.Service, site protocol.Site) []protocol.Key {
	t.Helper()
	snap, err := svc.SiteSnapshot(t.Context(), site)
	require.NoError(t, err)
	var out []protocol.Key
	for _, k := range snap.Keys {
		if k.Kind == protocol.KeyBadge {
			out = append(out, k)
		}
	}
	return out
}

// The edge's status carries its badge key; the cloud certifies it for the
// edge's site, once, and puts it on that site's feed and snapshot and on
// no other site's. Later statuses with the same key change nothing; a
// status with another key is refused and the first key stays.
func TestCertifyBadgeKey(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		other := cloud.EdgeSite(e.tenant, e.other.ID)
		_, otherHead, err := e.svc.SiteChanges(t.Context(), other, 1<<62, 1)
		require.NoError(t, err)
		pub := newBadgePub(t)
		id, err := passtoken.BadgeKeyID(pub)
		require.NoError(t, err)
		want := protocol.Key{ID: id, Public: pub, Kind: protocol.KeyBadge, SiteID: e.site.SiteID}

		// A status with no key (an edge of an older build) certifies nothing.
		head := e.head(t)
		require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), e.site, e.status(nil)))
		require.Equal(t, head, e.head(t))

		require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), e.site, e.status(pub)))
		got := badgeKeys(e.changesAfter(t, head))
		require.Len(t, got, 1)
		require.Equal(t, want, got[0])
		edges, err := e.svc.Edges(t.Context(), e.tenant, e.site.SiteID)
		require.NoError(t, err)
		require.Equal(t, []byte(pub), edges[0].BadgeKey)
		require.True(t, e.clock.Now().Equal(*edges[0].BadgeKeyAt))
		require.Equal(t, []protocol.Key{want}, snapshotBadgeKeys(t, e.svc, e.site))

		// Never on another site's feed or snapshot.
		otherChanges, _, err := e.svc.SiteChanges(t.Context(), other, otherHead, 0)
		require.NoError(t, err)
		require.Empty(t, badgeKeys(otherChanges))
		require.Empty(t, snapshotBadgeKeys(t, e.svc, other))

		// The same key again, as every status carries it: nothing new.
		head = e.head(t)
		require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), e.site, e.status(pub)))
		require.Equal(t, head, e.head(t))

		// Another key: refused, the status itself recorded, the first key
		// kept.
		e.clock.Advance(1e9)
		err = e.svc.RecordEdgeStatus(t.Context(), e.site, e.status(newBadgePub(t)))
		require.ErrorIs(t, err, cloud.ErrEdgeRejected)
		require.Equal(t, head, e.head(t))
		edges, err = e.svc.Edges(t.Context(), e.tenant, e.site.SiteID)
		require.NoError(t, err)
		require.Equal(t, []byte(pub), edges[0].BadgeKey)
		require.True(t, e.clock.Now().Equal(*edges[0].LastSeenAt), "the status is recorded all the same")
		require.Equal(t, []protocol.Key{want}, snapshotBadgeKeys(t, e.svc, e.site))

		// The store refuses another key on its own too.
		err = store.CertifyBadgeKey(t.Context(), e.tenant, e.site.SiteID, e.edge.ID, newBadgePub(t), e.clock.Now())
		require.ErrorIs(t, err, cloud.ErrConflict)
	})
}

// Only the site's edge that is not revoked gets a key certified: a revoked
// edge, another site's edge on this site's topics, and an edge revoked
// between the service's check and the store's write are refused, and
// nothing goes on a feed.
func TestCertifyBadgeKey_OnlyTheSitesActiveEdge(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		annex, _, err := e.svc.CreateEdge(t.Context(), e.tenant, e.other.ID, "Annex")
		require.NoError(t, err)
		head := e.head(t)

		st := e.status(newBadgePub(t))
		st.EdgeID = annex.ID
		require.ErrorIs(t, e.svc.RecordEdgeStatus(t.Context(), e.site, st), cloud.ErrEdgeRejected, "another site's edge")
		err = store.CertifyBadgeKey(t.Context(), e.tenant, e.site.SiteID, annex.ID, newBadgePub(t), e.clock.Now())
		require.ErrorIs(t, err, cloud.ErrNotFound, "the store checks the site too")
		require.Equal(t, head, e.head(t))

		_, err = e.svc.RevokeEdge(t.Context(), e.tenant, e.edge.ID)
		require.NoError(t, err)
		head = e.head(t)
		require.Equal(t, head, e.head(t), "revoking an edge with no badge key feeds nothing")
		require.ErrorIs(t, e.svc.RecordEdgeStatus(t.Context(), e.site, e.status(newBadgePub(t))), cloud.ErrEdgeRejected, "revoked")
		err = store.CertifyBadgeKey(t.Context(), e.tenant, e.site.SiteID, e.edge.ID, newBadgePub(t), e.clock.Now())
		require.ErrorIs(t, err, cloud.ErrNotFound, "revoked before the store's write")
		require.Equal(t, head, e.head(t))
		require.Empty(t, snapshotBadgeKeys(t, e.svc, e.site))
		got, err := store.Edge(t.Context(), e.edge.ID)
		require.NoError(t, err)
		require.Nil(t, got.BadgeKey)
	})
}

// Revoking the edge retires its badge key on its site's feed, once, and
// takes it out of the snapshot; the site's next edge gets its own key
// certified.
func TestRevokeEdge_RetiresBadgeKey(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		var changed int
		e.svc.OnChange(func() { changed++ })
		pub := newBadgePub(t)
		require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), e.site, e.status(pub)))
		require.Equal(t, 1, changed, "the publisher is told")
		head := e.head(t)

		_, err := e.svc.RevokeEdge(t.Context(), e.tenant, e.edge.ID)
		require.NoError(t, err)
		require.Equal(t, 2, changed)
		got := badgeKeys(e.changesAfter(t, head))
		require.Len(t, got, 1)
		require.True(t, got[0].Retired)
		require.Equal(t, []byte(pub), got[0].Public)
		require.Equal(t, e.site.SiteID, got[0].SiteID)
		require.Empty(t, snapshotBadgeKeys(t, e.svc, e.site))

		head = e.head(t)
		_, err = e.svc.RevokeEdge(t.Context(), e.tenant, e.edge.ID)
		require.NoError(t, err)
		require.Equal(t, head, e.head(t), "revoking twice retires once")

		next, _, err := e.svc.CreateEdge(t.Context(), e.tenant, e.site.SiteID, "Replacement")
		require.NoError(t, err)
		pub2 := newBadgePub(t)
		st := e.status(pub2)
		st.EdgeID = next.ID
		require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), e.site, st))
		keys := snapshotBadgeKeys(t, e.svc, e.site)
		require.Len(t, keys, 1)
		require.Equal(t, []byte(pub2), keys[0].Public)
	})
}

// A badge key whose ID is one of the organisation's pass keys' is
// refused: an edge keeps keys by ID, so one would shadow the other.
func TestCertifyBadgeKey_IDTaken(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		pub := newBadgePub(t)
		id, err := passtoken.BadgeKeyID(pub)
		require.NoError(t, err)
		_, priv, err := ed25519.GenerateKey(nil)
		require.NoError(t, err)
		require.NoError(t, store.CreatePassKey(t.Context(), cloud.PassKey{ID: id, Tenant: e.tenant, Private: priv, CreatedAt: e.clock.Now()}))
		head := e.head(t)
		require.ErrorIs(t, e.svc.RecordEdgeStatus(t.Context(), e.site, e.status(pub)), cloud.ErrEdgeRejected)
		require.Equal(t, head, e.head(t))
	})
}
