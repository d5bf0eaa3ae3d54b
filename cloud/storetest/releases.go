package storetest

import (
	"bytes"
	"crypto/ed25519"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

func releaseTests() []test {
	return []test{
		{"AddGetPieces", testReleaseAddGetPieces},
		{"Rollouts", testRollouts},
		{"EdgeUpdatesAndIdentityKeys", testEdgeUpdatesAndIdentityKeys},
		{"EdgeAnnouncements", testEdgeAnnouncements},
	}
}

// A bundle is stored in pieces of cloud.ReleaseChunk bytes, read back one
// at a time; a version is added once per platform.
func testReleaseAddGetPieces(t *testing.T, e *env) {
	ctx := t.Context()
	bundle := bytes.Repeat([]byte("0123456789abcdef"), cloud.ReleaseChunk/16*2+10) // two pieces and 160 bytes
	r := cloud.Release{Version: "2.0.0", Platform: "arm64", Kind: "binary", Size: int64(len(bundle)), SHA256: "ab",
		Envelope: []byte(`{"manifest":"x"}`), CreatedAt: e.tick(), AddedAt: e.tick()}
	require.NoError(t, e.s.AddRelease(ctx, r, bytes.NewReader(bundle)))
	got, err := e.s.Release(ctx, "2.0.0", "arm64")
	require.NoError(t, err)
	require.Equal(t, r, got)
	var back []byte
	for i := 0; i < 3; i++ {
		p, err := e.s.ReleaseChunk(ctx, "2.0.0", "arm64", i)
		require.NoError(t, err)
		back = append(back, p...)
	}
	require.Equal(t, bundle, back)
	_, err = e.s.ReleaseChunk(ctx, "2.0.0", "arm64", 3)
	requireNotFound(t, err)
	_, err = e.s.Release(ctx, "2.0.0", "amd64")
	requireNotFound(t, err)

	require.ErrorIs(t, e.s.AddRelease(ctx, r, bytes.NewReader(bundle)), cloud.ErrConflict)
	r2 := r
	r2.Platform, r2.AddedAt = "amd64", e.tick()
	require.NoError(t, e.s.AddRelease(ctx, r2, bytes.NewReader(bundle)))
	list, err := e.s.ListReleases(ctx)
	require.NoError(t, err)
	require.Equal(t, []cloud.Release{r2, r}, list)
}

func testRollouts(t *testing.T, e *env) {
	ctx := t.Context()
	deadline := e.now.Add(48 * time.Hour)
	r := cloud.Rollout{ID: ids.New(ids.Rollout), Tenant: e.a, Version: "2.0.0", SiteIDs: []string{ids.New(ids.Site)}, EdgeIDs: []string{},
		WindowStart: 120, WindowMinutes: 180, Deadline: &deadline, FirstPercent: 10, State: cloud.RolloutActive, CreatedAt: e.tick()}
	require.NoError(t, e.s.CreateRollout(ctx, r))
	later := r
	later.ID, later.Deadline, later.CreatedAt = ids.New(ids.Rollout), nil, e.tick()
	require.NoError(t, e.s.CreateRollout(ctx, later))
	got, err := e.s.Rollout(ctx, e.a, r.ID)
	require.NoError(t, err)
	require.Equal(t, r, got)
	_, err = e.s.Rollout(ctx, e.b, r.ID)
	requireNotFound(t, err)
	list, err := e.s.Rollouts(ctx, e.a)
	require.NoError(t, err)
	require.Equal(t, []cloud.Rollout{later, r}, list)
	list, err = e.s.Rollouts(ctx, e.c)
	require.NoError(t, err)
	require.Empty(t, list)

	require.NoError(t, e.s.SetRolloutState(ctx, e.a, r.ID, cloud.RolloutHalted, "edge_x rolled_back", nil))
	at := e.tick()
	require.NoError(t, e.s.SetRolloutState(ctx, e.a, r.ID, cloud.RolloutCancelled, "", &at))
	require.NoError(t, e.s.SetRolloutState(ctx, e.a, r.ID, cloud.RolloutActive, "", nil))
	got, err = e.s.Rollout(ctx, e.a, r.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.RolloutCancelled, got.State, "a cancelled rollout stays cancelled")
	require.Equal(t, at, got.CancelledAt.UTC())
	requireNotFound(t, e.s.SetRolloutState(ctx, e.c, r.ID, cloud.RolloutHalted, "", nil))
}

func testEdgeUpdatesAndIdentityKeys(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.newSite(t, e.a)
	ed := e.newEdge(t, e.a, s.ID)
	pub, _, _ := ed25519.GenerateKey(nil)
	_, err := e.s.EdgeByIdentity(ctx, pub)
	requireNotFound(t, err)
	require.NoError(t, e.s.SetEdgeIdentityKey(ctx, ed.ID, pub))
	got, err := e.s.EdgeByIdentity(ctx, pub)
	require.NoError(t, err)
	require.Equal(t, ed.ID, got.ID)
	other := e.newEdge(t, e.c, e.newSite(t, e.c).ID)
	require.ErrorIs(t, e.s.SetEdgeIdentityKey(ctx, other.ID, pub), cloud.ErrConflict, "one key, one edge")

	at := e.tick()
	u := cloud.EdgeUpdate{EdgeID: ed.ID, Tenant: e.a, Version: "1.0.0", Slot: "a", State: "downloading", Target: "2.0.0", Bytes: 10, Size: 100,
		LastVersion: "1.0.0", LastOutcome: "committed", LastAt: &at, PolledAt: e.tick()}
	require.NoError(t, e.s.PutEdgeUpdate(ctx, u, nil))
	first := u.PolledAt
	require.ErrorIs(t, e.s.PutEdgeUpdate(ctx, u, nil), cloud.ErrConflict, "a first poll when one is stored: another process polled")
	u.State, u.Bytes, u.PolledAt = "idle", 0, e.tick()
	without := u
	without.LastVersion, without.LastOutcome, without.LastAt = "", "", nil
	require.NoError(t, e.s.PutEdgeUpdate(ctx, without, &first), "a poll without a result keeps the last one")
	stale := without
	stale.State, stale.PolledAt = "verifying", e.tick()
	require.ErrorIs(t, e.s.PutEdgeUpdate(ctx, stale, &first), cloud.ErrConflict, "written over a poll it did not read")
	list, err := e.s.EdgeUpdates(ctx, e.a, "")
	require.NoError(t, err)
	require.Len(t, list, 1)
	list[0].LastAt = utcPtr(list[0].LastAt)
	require.Equal(t, u, list[0])
	one, err := e.s.EdgeUpdates(ctx, e.a, ed.ID)
	require.NoError(t, err)
	require.Len(t, one, 1)
	second := e.newEdge(t, e.a, e.newSite(t, e.a).ID)
	none, err := e.s.EdgeUpdates(ctx, e.a, second.ID)
	require.NoError(t, err)
	require.Empty(t, none, "another edge's updates are not this one's")
	list, err = e.s.EdgeUpdates(ctx, e.b, "")
	require.NoError(t, err)
	require.Empty(t, list)
}

// An edge's state is announced once per change: AnnounceEdge succeeds
// only from the state last announced, and EdgesToAnnounce finds the edges
// whose state, as the cloud presents it, differs from it.
func testEdgeAnnouncements(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.newSite(t, e.a)
	ed := e.newEdge(t, e.a, s.ID)
	due := func(cutoff time.Time) bool {
		t.Helper()
		list, err := e.s.EdgesToAnnounce(ctx, cutoff, 1000)
		require.NoError(t, err)
		return slices.ContainsFunc(list, func(x cloud.Edge) bool { return x.ID == ed.ID })
	}
	got, err := e.s.Edge(ctx, ed.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.EdgeOffline, got.Announced, "a new edge is announced offline")
	require.False(t, due(time.Time{}), "nothing to announce before its first status")

	at1 := e.tick()
	online := protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOnline, At: at1, Software: "1.0.0"}
	require.NoError(t, e.s.RecordEdgeStatus(ctx, e.a, s.ID, online, at1))
	require.True(t, due(at1.Add(-time.Minute)), "online, announced offline")
	requireNotFound(t, e.s.AnnounceEdge(ctx, e.c, ed.ID, cloud.EdgeOffline, cloud.EdgeOnline), "another tenant's edge")
	require.NoError(t, e.s.AnnounceEdge(ctx, e.a, ed.ID, cloud.EdgeOffline, cloud.EdgeOnline))
	require.ErrorIs(t, e.s.AnnounceEdge(ctx, e.a, ed.ID, cloud.EdgeOffline, cloud.EdgeOnline), cloud.ErrConflict,
		"a second process announcing the same change")
	got, err = e.s.Edge(ctx, ed.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.EdgeOnline, got.Announced)
	require.False(t, due(at1.Add(-time.Minute)), "online and announced so")
	require.True(t, due(at1.Add(time.Second)), "silent since before the cutoff: offline, announced online")

	will := e.tick()
	require.NoError(t, e.s.RecordEdgeStatus(ctx, e.a, s.ID, protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOffline, At: at1}, will))
	require.False(t, due(will.Add(-time.Second)), "offline by its last will for less than the silence limit")
	require.True(t, due(will), "offline by its last will since the cutoff, announced online")
	require.NoError(t, e.s.AnnounceEdge(ctx, e.a, ed.ID, cloud.EdgeOnline, cloud.EdgeOffline))
	require.False(t, due(will))

	at2 := e.tick()
	online.At = at2
	require.NoError(t, e.s.RecordEdgeStatus(ctx, e.a, s.ID, online, at2))
	require.NoError(t, e.s.AnnounceEdge(ctx, e.a, ed.ID, cloud.EdgeOffline, cloud.EdgeOnline))
	_, err = e.s.RevokeEdge(ctx, e.a, ed.ID, e.tick())
	require.NoError(t, err)
	require.False(t, due(at2.Add(-time.Minute)), "revoking announces offline (its edge.offline goes with edge.revoked)")
	got, err = e.s.Edge(ctx, ed.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.EdgeOffline, got.Announced)
}
