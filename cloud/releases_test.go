package cloud_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/release"
)

func TestRollout_InWindow(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	require.NoError(t, err)
	night := cloud.Rollout{WindowStart: 23 * 60, WindowMinutes: 180} // 23:00 to 02:00
	early := cloud.Rollout{WindowStart: 2 * 60, WindowMinutes: 120}  // 02:00 to 04:00
	for _, tc := range []struct {
		r    cloud.Rollout
		at   string // UTC
		want bool
	}{
		{night, "2026-11-26T22:59:00Z", false},
		{night, "2026-11-26T23:00:00Z", true},
		{night, "2026-11-27T01:59:00Z", true},
		{night, "2026-11-27T02:00:00Z", false},
		{early, "2026-07-01T01:30:00Z", true}, // 02:30 British Summer Time
		{early, "2026-07-01T03:30:00Z", false},
		{early, "2026-12-01T03:59:00Z", true}, // GMT
		{cloud.Rollout{WindowStart: 600, WindowMinutes: 1440}, "2026-12-01T03:59:00Z", true},
	} {
		at, err := time.Parse(time.RFC3339, tc.at)
		require.NoError(t, err)
		require.Equal(t, tc.want, tc.r.InWindow(at, london), "%+v at %s", tc.r, tc.at)
	}
}

// updateEnv is an organisation with ten appliances, each at a site of its
// own in London, each with an identity key, and release 2.0.0.
type updateEnv struct {
	*edgeEnv
	edges []cloud.Edge
	keys  map[string]ed25519.PublicKey
}

func newUpdateEnv(t *testing.T, store cloud.Store) *updateEnv {
	t.Helper()
	e := &updateEnv{edgeEnv: newEdgeEnv(t, store), keys: map[string]ed25519.PublicKey{}}
	ctx := t.Context()
	e.edges = append(e.edges, e.edge)
	for i := range 9 {
		site := cloud.Site{ID: ids.New(ids.Site), Tenant: e.tenant, Name: fmt.Sprintf("Branch %d", i), Timezone: "Europe/London",
			CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
		require.NoError(t, store.CreateSite(ctx, site))
		ed, _, err := e.svc.CreateEdge(ctx, e.tenant, site.ID, "")
		require.NoError(t, err)
		e.edges = append(e.edges, ed)
	}
	for _, ed := range e.edges {
		pub, _, _ := ed25519.GenerateKey(nil)
		require.NoError(t, store.SetEdgeIdentityKey(ctx, ed.ID, pub))
		e.keys[ed.ID] = pub
	}
	pub, priv, _ := ed25519.GenerateKey(nil)
	bundle := bytes.Repeat([]byte("svc-edge 2.0.0 "), 100000)
	m, err := release.Describe(bytes.NewReader(bundle), "2.0.0", "amd64", "", release.KindBinary, e.clock.Now())
	require.NoError(t, err)
	env, err := release.Sign(m, priv)
	require.NoError(t, err)
	r, err := e.svc.AddRelease(ctx, env, pub, bytes.NewReader(bundle))
	require.NoError(t, err)
	require.Equal(t, "amd64", r.Platform)
	_, err = e.svc.AddRelease(ctx, env, pub, bytes.NewReader(bundle))
	require.ErrorIs(t, err, cloud.ErrConflict)

	_, rd, err := e.svc.OpenRelease(ctx, "2.0.0", "amd64")
	require.NoError(t, err)
	_, err = rd.Seek(int64(len(bundle))-20, io.SeekStart)
	require.NoError(t, err)
	tail, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.Equal(t, bundle[len(bundle)-20:], tail, "a resumed download reads from its offset")
	return e
}

// poll is an appliance's poll: what it runs and its last result; it
// returns the version offered, "" for none.
func (e *updateEnv) poll(t *testing.T, ed cloud.Edge, u cloud.EdgeUpdate) string {
	t.Helper()
	got, err := e.svc.EdgeByKey(t.Context(), e.keys[ed.ID])
	require.NoError(t, err)
	require.Equal(t, ed.ID, got.ID)
	r, err := e.svc.EdgePoll(t.Context(), got, "amd64", u)
	require.NoError(t, err)
	if r == nil {
		return ""
	}
	return r.Version
}

func TestEdgePoll_StagedRollout(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newUpdateEnv(t, store)
		ctx := t.Context()
		running := cloud.EdgeUpdate{Version: "1.0.0", State: "idle"}

		deadline := e.clock.Now().Add(72 * time.Hour)
		_, err := e.svc.CreateRollout(ctx, e.tenant, cloud.RolloutInput{Version: "3.0.0", WindowStart: "2:00", WindowMinutes: 60, FirstPercent: 0,
			SiteIDs: []string{ids.New(ids.Site)}, EdgeIDs: []string{"edge_x"}, Deadline: &time.Time{}})
		var v *cloud.ValidationError
		require.ErrorAs(t, err, &v)
		require.Len(t, v.Fields, 7, "%v", err)

		r, err := e.svc.CreateRollout(ctx, e.tenant, cloud.RolloutInput{Version: "2.0.0", WindowStart: "02:00", WindowMinutes: 180,
			FirstPercent: 50, Deadline: &deadline})
		require.NoError(t, err)
		var first, rest []cloud.Edge
		for _, ed := range e.edges {
			if r.FirstStage(ed.ID) {
				first = append(first, ed)
			} else {
				rest = append(rest, ed)
			}
		}
		t.Logf("first stage: %d of %d", len(first), len(e.edges))

		// 09:00 in London: outside the window, before the deadline.
		for _, ed := range e.edges {
			require.Empty(t, e.poll(t, ed, running))
		}
		// 02:30 the next night: the first stage only.
		e.clock.Advance(17*time.Hour + 30*time.Minute)
		for _, ed := range first {
			require.Equal(t, "2.0.0", e.poll(t, ed, running))
		}
		for _, ed := range rest {
			require.Empty(t, e.poll(t, ed, running), "the rest wait for the first stage")
		}
		// The first stage commits; the rest follow.
		at := e.clock.Now()
		for _, ed := range first {
			require.Empty(t, e.poll(t, ed, cloud.EdgeUpdate{Version: "2.0.0", State: "idle", LastVersion: "2.0.0", LastOutcome: "committed", LastAt: &at}))
		}
		for _, ed := range rest {
			require.Equal(t, "2.0.0", e.poll(t, ed, running))
		}
		updates, err := store.EdgeUpdates(ctx, e.tenant, "")
		require.NoError(t, err)
		require.Len(t, updates, len(e.edges))

		_, err = e.svc.CancelRollout(ctx, e.tenant, r.ID)
		require.NoError(t, err)
		for _, ed := range rest {
			require.Empty(t, e.poll(t, ed, running), "cancelled")
		}

		_, err = e.svc.EdgeByKey(ctx, ed25519.PublicKey(make([]byte, 32)))
		require.ErrorIs(t, err, cloud.ErrUnknownEdge)
		_, err = e.svc.RevokeEdge(ctx, e.tenant, e.edges[0].ID)
		require.NoError(t, err)
		_, err = e.svc.EdgeByKey(ctx, e.keys[e.edges[0].ID])
		require.ErrorIs(t, err, cloud.ErrUnknownEdge, "a revoked appliance is refused")
	})
}

// A first-stage appliance that rolls back halts the rollout; past the
// deadline an appliance updates outside its window.
func TestEdgePoll_HaltAndDeadline(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newUpdateEnv(t, store)
		ctx := t.Context()
		running := cloud.EdgeUpdate{Version: "1.0.0", State: "idle"}
		deadline := e.clock.Now().Add(time.Hour)
		r, err := e.svc.CreateRollout(ctx, e.tenant, cloud.RolloutInput{Version: "2.0.0", WindowStart: "02:00", WindowMinutes: 120,
			FirstPercent: 100, Deadline: &deadline, SiteIDs: []string{e.edges[1].SiteID}, EdgeIDs: []string{e.edges[2].ID}})
		require.NoError(t, err)
		require.Empty(t, e.poll(t, e.edges[1], running), "09:00, before the deadline")
		e.clock.Advance(2 * time.Hour)
		require.Equal(t, "2.0.0", e.poll(t, e.edges[1], running), "past the deadline, at 11:00")
		require.Equal(t, "2.0.0", e.poll(t, e.edges[2], running))
		require.Empty(t, e.poll(t, e.edges[3], running), "not in the rollout")

		at := e.clock.Now()
		failed := cloud.EdgeUpdate{Version: "1.0.0", State: "idle", LastVersion: "2.0.0", LastOutcome: "rolled_back",
			LastReason: "the health check failed: relay GPIO17", LastAt: &at}
		require.Empty(t, e.poll(t, e.edges[1], failed))
		got, err := store.Rollout(ctx, e.tenant, r.ID)
		require.NoError(t, err)
		require.Equal(t, cloud.RolloutHalted, got.State)
		require.Contains(t, got.Reason, "relay GPIO17")
		require.Empty(t, e.poll(t, e.edges[2], running), "a halted rollout offers nothing")
	})
}
