package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/update"
	"github.com/svc-vms/svc/shared/release"
)

// addTestRelease publishes release version for amd64 and returns its
// bundle.
func addTestRelease(t *testing.T, h *harness, version string) []byte {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(nil)
	bundle := bytes.Repeat([]byte("svc-edge "+version+" "), 300000) // over two pieces
	m, err := release.Describe(bytes.NewReader(bundle), version, "amd64", "", release.KindBinary, h.clock.Now())
	require.NoError(t, err)
	env, err := release.Sign(m, priv)
	require.NoError(t, err)
	_, err = h.svc.AddRelease(context.Background(), env, pub, bytes.NewReader(bundle))
	require.NoError(t, err)
	return bundle
}

// createTestRollout schedules a release for every appliance of the test
// tenant, at any time, and returns its ID.
func createTestRollout(t *testing.T, h *harness) string {
	t.Helper()
	addTestRelease(t, h, "9.9.9")
	r := h.post("/v1/rollouts", map[string]any{"version": "9.9.9", "window": map[string]any{"start": "00:00", "minutes": 1440}})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.Body["id"].(string)
}

// enrolTestEdge makes an appliance at London with an identity key and
// returns the appliance's side of the cloud (edge/update.HTTP).
func enrolTestEdge(t *testing.T, h *harness) (cloud.Edge, *update.HTTP) {
	t.Helper()
	e, _, err := h.svc.CreateEdge(context.Background(), h.testTenant(), london(h).ID, "Reception")
	require.NoError(t, err)
	pub, priv, _ := ed25519.GenerateKey(nil)
	require.NoError(t, h.store.SetEdgeIdentityKey(context.Background(), e.ID, pub))
	return e, &update.HTTP{Base: h.url, Key: priv, Now: h.clock.Now}
}

// The appliance's client (edge/update) against the API: a rollout offers a
// release, its bundle downloads whole or from an offset, a failed trial
// reported halts the rollout, and unknown keys and bad clocks are refused.
func TestEdgeUpdate_PollDownloadReport(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		ctx := context.Background()
		e, src := enrolTestEdge(t, h)
		running := update.Poll{Version: "1.0.0", Arch: "amd64", Slot: "a"}

		offer, err := src.Check(ctx, running)
		require.NoError(t, err)
		require.Nil(t, offer, "no rollout yet")

		bundle := addTestRelease(t, h, "2.0.0")
		r := h.post("/v1/rollouts", map[string]any{"version": "2.0.0", "site_ids": []string{london(h).ID},
			"window": map[string]any{"start": "00:00", "minutes": 1440}})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		rollout := r.Body["id"].(string)
		require.Equal(t, float64(100), r.Body["first_percent"])

		offer, err = src.Check(ctx, running)
		require.NoError(t, err)
		require.NotNil(t, offer)
		_, err = offer.Release.Verify(nil)
		require.ErrorIs(t, err, release.ErrUntrusted, "the appliance checks the key it was built with")
		require.Equal(t, "/v1/edge/releases/2.0.0/amd64", offer.URL)

		body, resumed, err := src.Download(ctx, *offer, 0)
		require.NoError(t, err)
		got, err := io.ReadAll(body)
		require.NoError(t, err)
		body.Close()
		require.False(t, resumed)
		require.Equal(t, bundle, got)
		body, resumed, err = src.Download(ctx, *offer, int64(len(bundle))-1500000)
		require.NoError(t, err)
		got, err = io.ReadAll(body)
		require.NoError(t, err)
		body.Close()
		require.True(t, resumed)
		require.Equal(t, bundle[len(bundle)-1500000:], got, "a resumed download crosses a piece")
		_, _, err = src.Download(ctx, *offer, int64(len(bundle)))
		require.ErrorIs(t, err, update.ErrBeyondEnd)

		failed := running
		failed.Result = &update.Result{Version: "2.0.0", From: "1.0.0", Outcome: update.RolledBack, Reason: "the health check failed: relay GPIO17",
			At: h.clock.Now()}
		offer, err = src.Check(ctx, failed)
		require.NoError(t, err)
		require.Nil(t, offer)
		r = h.get("/v1/rollouts/" + rollout)
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, "halted", r.Body["state"])
		require.Contains(t, r.Body["reason"], "relay GPIO17")
		updates, err := h.store.EdgeUpdates(ctx, h.testTenant(), "")
		require.NoError(t, err)
		require.Len(t, updates, 1)
		require.Equal(t, "rolled_back", updates[0].LastOutcome)
		r = h.get("/v1/edges/" + e.ID)
		require.Equal(t, http.StatusOK, r.Status)
		shown := r.Body["update"].(map[string]any)
		require.Equal(t, "1.0.0", shown["version"])
		require.Equal(t, "a", shown["slot"])
		require.Equal(t, "idle", shown["state"])
		require.Equal(t, map[string]any{"version": "2.0.0", "outcome": "rolled_back", "reason": "the health check failed: relay GPIO17",
			"at": failed.Result.At.UTC().Format("2006-01-02T15:04:05.000Z")}, shown["last_result"])
		require.Len(t, data(t, h.get("/v1/events?type=edge.update_failed")), 1, "edge.update_failed fired")
		_, err = src.Check(ctx, failed)
		require.NoError(t, err)
		require.Len(t, data(t, h.get("/v1/events?type=edge.update_failed")), 1, "the same result again fires nothing")
		require.Empty(t, data(t, h.get("/v1/events?type=edge.updated")))

		r = h.post("/v1/rollouts/"+rollout+"/cancel", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "cancelled", r.Body["state"])

		// A key no appliance has, and a clock ten minutes off.
		_, stranger, _ := ed25519.GenerateKey(nil)
		_, err = (&update.HTTP{Base: h.url, Key: stranger, Now: h.clock.Now}).Check(ctx, running)
		require.ErrorContains(t, err, "401")
		skewed := *src
		skewed.Now = func() time.Time { return h.clock.Now().Add(10 * time.Minute) }
		_, err = skewed.Check(ctx, running)
		require.ErrorContains(t, err, "clock")
		_, _, err = skewed.Download(ctx, update.Offer{URL: "/v1/edge/releases/2.0.0/amd64"}, 0)
		require.ErrorContains(t, err, "401")
	})
}

func TestRollouts_Validation(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		r := h.post("/v1/rollouts", map[string]any{"version": "nope", "window": map[string]any{"start": "25:00", "minutes": 60}, "first_percent": 0})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
		r = h.post("/v1/rollouts", map[string]any{"version": "2.0.0", "window": map[string]any{"start": "02:00", "minutes": 180}})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.version")
		r = h.get("/v1/rollouts")
		require.Equal(t, http.StatusOK, r.Status)
	})
}

// Publishable keys cannot see or schedule rollouts, keys without the
// sites scopes are refused, and another organisation's or mode's rollout
// is not_found and cannot be cancelled.
func TestRollouts_Isolation(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		id := createTestRollout(t, h)
		body := map[string]any{"version": "9.9.9", "window": map[string]any{"start": "00:00", "minutes": 1440}}
		for _, path := range []string{"/v1/rollouts", "/v1/rollouts/" + id} {
			requireProblem(t, h.do(req{method: http.MethodGet, path: path, key: h.seed.Keys.PublishableTest}), http.StatusForbidden, "forbidden")
			r := h.do(req{method: http.MethodGet, path: path, key: newKey(t, h, cloud.ScopeVisitsRead)})
			requireProblem(t, r, http.StatusForbidden, "scope_missing")
			require.Contains(t, r.Body["detail"], "sites:read")
		}
		requireProblem(t, h.do(req{method: http.MethodPost, path: "/v1/rollouts", body: body, key: h.seed.Keys.PublishableTest}),
			http.StatusForbidden, "forbidden")
		requireProblem(t, h.do(req{method: http.MethodPost, path: "/v1/rollouts/" + id + "/cancel", key: newKey(t, h, cloud.ScopeSitesRead)}),
			http.StatusForbidden, "scope_missing")
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/rollouts/" + id, key: h.seed.Keys.SecretLive}), http.StatusNotFound, "not_found")
		other, err := cloud.NewService(h.store, h.clock.Now).Seed(t.Context(), "Other Org", cloud.PlanPro)
		require.NoError(t, err)
		for _, r := range []req{
			{method: http.MethodGet, path: "/v1/rollouts/" + id, key: other.Keys.SecretTest},
			{method: http.MethodPost, path: "/v1/rollouts/" + id + "/cancel", key: other.Keys.SecretTest},
		} {
			requireProblem(t, h.do(r), http.StatusNotFound, "not_found")
		}
		require.Empty(t, data(t, h.do(req{method: http.MethodGet, path: "/v1/rollouts", key: other.Keys.SecretTest})))
	})
}

// A poll that is not what an appliance sends is refused, naming each
// field, and stores nothing.
func TestEdgeUpdate_PollValidated(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		ctx := context.Background()
		_, src := enrolTestEdge(t, h)
		for _, c := range []struct {
			poll  update.Poll
			field string
		}{
			{update.Poll{Version: "", Arch: "amd64"}, "body.version"},
			{update.Poll{Version: "1.0/../x", Arch: "amd64"}, "body.version"},
			{update.Poll{Version: "1.0.0", Arch: "amd64", Progress: &update.Progress{State: "flying"}}, "body.progress.state"},
			{update.Poll{Version: "1.0.0", Arch: "amd64", Progress: &update.Progress{State: "downloading", Version: "2", Bytes: -1}}, "body.progress"},
			{update.Poll{Version: "1.0.0", Arch: "amd64", Result: &update.Result{Version: "2.0.0", Outcome: "exploded", At: h.clock.Now()}}, "body.result.outcome"},
			{update.Poll{Version: "1.0.0", Arch: "amd64", Result: &update.Result{Version: "2.0.0", Outcome: update.Committed}}, "body.result.at"},
		} {
			_, err := src.Check(ctx, c.poll)
			require.ErrorContains(t, err, "422", "%+v", c.poll)
			require.ErrorContains(t, err, c.field, "%+v", c.poll)
		}
		updates, err := h.store.EdgeUpdates(ctx, h.testTenant(), "")
		require.NoError(t, err)
		require.Empty(t, updates)
	})
}
