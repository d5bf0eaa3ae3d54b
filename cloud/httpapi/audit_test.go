package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
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

// A fact from a site's appliance that disagrees with the cloud, and a
// relay failure that voids an admit, are audited with the detail the
// OpenAPI document types for edge.fact_conflicted and edge.admit_voided
// (the harness holds each GET /v1/audit-events to it).
func TestAudit_EdgeFactsAsDocumented(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		edge := h.demoEdge(t)
		site := protocol.Site{Mode: "test", OrgID: h.seed.Organisation.ID, SiteID: london(h).ID}
		counter := uint64(0)
		fact := func(kind protocol.FactKind, visitID string) protocol.Fact {
			counter++
			return protocol.Fact{ID: ids.New(ids.Fact), Kind: kind, EdgeID: edge, Counter: counter,
				At: h.clock.Now().Add(-time.Minute), GateID: london(h).Gates[0], VisitID: visitID}
		}

		// A check-out of a visit the cloud has as expected.
		expected := createVisit(t, h, nil)["id"].(string)
		out := fact(protocol.FactCheckOut, expected)
		require.NoError(t, h.svc.ApplyFact(t.Context(), site, out))
		rows := data(t, h.get("/v1/audit-events?action=edge.fact_conflicted"))
		require.Len(t, rows, 1)
		require.Equal(t, "edge", rows[0]["actor_kind"])
		require.Equal(t, edge, rows[0]["actor_id"])
		detail := rows[0]["detail"].(map[string]any)
		require.Equal(t, out.ID, detail["fact_id"])
		require.Equal(t, "check_out", detail["kind"])
		require.Equal(t, cloud.ConflictNotCheckedIn, detail["conflict"])
		require.Equal(t, "expected", detail["status"])

		// A check-in whose relay then failed: the admit is voided.
		admitted := createVisit(t, h, nil)["id"].(string)
		in := fact(protocol.FactCheckIn, admitted)
		void := fact(protocol.FactRefused, admitted)
		void.Reason, void.Voids, void.At = protocol.ReasonRelayFailed, in.ID, in.At
		errs, err := h.svc.ApplyFacts(t.Context(), site, []protocol.Fact{in, void})
		require.NoError(t, err)
		require.Equal(t, []error{nil, nil}, errs)
		rows = data(t, h.get("/v1/audit-events?action=edge.admit_voided"))
		require.Len(t, rows, 1)
		detail = rows[0]["detail"].(map[string]any)
		require.Equal(t, void.ID, detail["fact_id"])
		require.Equal(t, in.ID, detail["voids"])
		require.NotContains(t, detail, "conflict", "the admit was voided")
		require.Equal(t, "expected", h.get("/v1/visits/" + admitted).Body["status"])
	})
}
