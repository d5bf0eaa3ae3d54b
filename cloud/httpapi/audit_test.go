package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// The audit trail records who created and revoked a key (the operator's
// command line: the system) and who erased a visitor (the key, with the
// request), each in its tenant, with no personal data.
func TestAudit_KeysAndErasure(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		ctx := context.Background()
		me, err := h.svc.Authenticate(ctx, h.seed.Keys.SecretTest)
		require.NoError(t, err)

		created := data(t, h.get("/v1/audit-events?action=key.created"))
		require.Len(t, created, 2, "the seeded test-mode keys (secret and publishable); the live ones are live mode's")
		k, _, err := h.svc.CreateKey(ctx, h.testTenant(), cloud.KindSecret, []cloud.Scope{cloud.ScopeVisitsRead})
		require.NoError(t, err)
		require.NoError(t, h.svc.RevokeKey(ctx, h.seed.Organisation.ID, k.ID))
		require.NoError(t, h.svc.RevokeKey(ctx, h.seed.Organisation.ID, k.ID), "revoking twice is no error")
		require.ErrorIs(t, h.svc.RevokeKey(ctx, h.seed.Organisation.ID, "key_01h455vb4pex5vsknk084sn02q"), cloud.ErrNotFound)

		created = data(t, h.get("/v1/audit-events?action=key.created&object_id="+k.ID))
		require.Len(t, created, 1)
		require.Equal(t, "system", created[0]["actor_kind"])
		require.Nil(t, created[0]["actor_id"])
		require.Equal(t, "key", created[0]["object_type"])
		detail := created[0]["detail"].(map[string]any)
		require.Equal(t, "secret", detail["kind"])
		require.Equal(t, k.Last4, detail["last4"])
		require.Equal(t, []any{"visits:read"}, detail["scopes"])
		revoked := data(t, h.get("/v1/audit-events?action=key.revoked"))
		require.Len(t, revoked, 1, "once, though revoked twice")
		require.Equal(t, k.ID, revoked[0]["object_id"])

		v := createVisit(t, h, nil)
		vid := v["visitor"].(map[string]any)["id"].(string)
		del := h.do(req{method: http.MethodDelete, path: "/v1/visitors/" + vid, key: h.seed.Keys.SecretTest})
		require.Equal(t, http.StatusNoContent, del.Status, "%s", del.Raw)
		erased := h.get("/v1/audit-events?action=visitor.erased")
		rows := data(t, erased)
		require.Len(t, rows, 1)
		require.Equal(t, "key", rows[0]["actor_kind"])
		require.Equal(t, me.Key.ID, rows[0]["actor_id"])
		require.Equal(t, vid, rows[0]["object_id"])
		require.Equal(t, del.Header.Get("Svc-Request-Id"), rows[0]["request_id"])
		for _, personal := range []string{"Vera", "vera@example.org", "+447700900123"} {
			require.NotContains(t, string(erased.Raw), personal)
		}
		require.Equal(t, http.StatusNotFound, h.do(req{method: http.MethodDelete, path: "/v1/visitors/" + vid, key: h.seed.Keys.SecretTest}).Status)
		require.Len(t, data(t, h.get("/v1/audit-events?action=visitor.erased")), 1, "a failed erasure records nothing")
	})
}
