package httpapi_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// hardwareBody is a hardware object for the gates given, a TCP reader on
// port 9001 and up and a relay on GPIO17 and up each, defaults left out.
func hardwareBody(gates ...string) map[string]any {
	var gs []any
	for i, g := range gates {
		gs = append(gs, map[string]any{
			"gate_id": g,
			"readers": []any{map[string]any{"kind": "tcp", "listen": "0.0.0.0:" + strconv.Itoa(9001+i)}},
			"relay":   map[string]any{"pin": "GPIO" + strconv.Itoa(17+i), "active_low": true},
		})
	}
	return map[string]any{"gates": gs}
}

// PATCH /v1/edges/{edge_id} stores the hardware with its defaults spelt
// out, GET shows it, the site's feed carries it addressed to the edge,
// a name alone leaves it, and null clears it.
func TestEdges_Hardware(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		id := h.demoEdge(t)
		got := h.get("/v1/edges/" + id)
		require.Nil(t, got.Body["hardware"], "%s", got.Raw)
		require.Nil(t, got.Body["hardware_error"])

		site := protocol.Site{Mode: "test", OrgID: h.seed.Organisation.ID, SiteID: london(h).ID}
		svc := cloud.NewService(h.store, h.clock.Now)
		_, head, err := svc.SiteChanges(t.Context(), site, 1<<62, 1)
		require.NoError(t, err)

		body := hardwareBody(london(h).Gates...)
		body["kiosk"] = map[string]any{"printer": "192.168.1.50:9100"}
		r := h.patch("/v1/edges/"+id, map[string]any{"hardware": body})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		hw := r.Body["hardware"].(map[string]any)
		gates := hw["gates"].([]any)
		require.Len(t, gates, 2)
		g0 := gates[0].(map[string]any)
		require.Equal(t, london(h).Gates[0], g0["gate_id"])
		require.Equal(t, map[string]any{"pin": "GPIO17", "active_low": true, "pulse": "500ms"}, g0["relay"], "defaults spelt out")
		require.Equal(t, "fail_secure", g0["when_stale"])
		require.Equal(t, map[string]any{"label": "62x100", "printer": "192.168.1.50:9100"}, hw["kiosk"])
		require.Equal(t, r.Body["hardware"], h.get("/v1/edges/" + id).Body["hardware"])

		cs, _, err := svc.SiteChanges(t.Context(), site, head, protocol.MaxChanges)
		require.NoError(t, err)
		require.Len(t, cs, 1, "one change on the site's feed")
		require.NotNil(t, cs[0].Hardware)
		require.Equal(t, id, cs[0].Hardware.EdgeID)
		require.Len(t, cs[0].Hardware.Hardware.Gates, 2)
		require.Equal(t, "0.0.0.0:9002", cs[0].Hardware.Hardware.Gates[1].Readers[0].Listen)

		r = h.patch("/v1/edges/"+id, map[string]any{"name": "Gatehouse"})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "Gatehouse", r.Body["name"])
		require.Equal(t, hw, r.Body["hardware"], "a name alone leaves the hardware")

		r = h.patch("/v1/edges/"+id, map[string]any{"hardware": nil})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Nil(t, r.Body["hardware"])
		cs, _, err = svc.SiteChanges(t.Context(), site, head, protocol.MaxChanges)
		require.NoError(t, err)
		require.Len(t, cs, 2)
		require.Equal(t, &protocol.EdgeHardware{EdgeID: id}, cs[1].Hardware, "cleared on the feed too")
	})
}

// The hardware is checked by the appliance's own code: every problem at
// its path under body.hardware, in one answer; gates must be the edge's
// site's; a bad request changes nothing.
func TestEdges_HardwareValidation(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		id := h.demoEdge(t)
		gate := london(h).Gates[0]

		bad := hardwareBody(gate, gate)
		g0 := bad["gates"].([]any)[0].(map[string]any)
		g0["relay"] = map[string]any{"pulse": "2m", "colour": "red"}
		g0["readers"] = []any{map[string]any{"kind": "usb"}}
		g0["door"] = map[string]any{"pin": "GPIO27", "pull": "sideways"}
		r := h.patch("/v1/edges/"+id, map[string]any{"hardware": bad, "name": "", "extra": 1})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed",
			"body.extra", "body.name",
			"body.hardware.gates[0].relay.colour", "body.hardware.gates[0].relay.pin", "body.hardware.gates[0].relay.pulse",
			"body.hardware.gates[0].readers[0].kind", "body.hardware.gates[0].door.pull",
			"body.hardware.gates[1].gate_id")
		for _, c := range []struct {
			name     string
			hardware any
			location string
		}{
			{"not an object", []any{}, "body.hardware"},
			{"no gates", map[string]any{}, "body.hardware.gates"},
			{"comment", map[string]any{"gates": []any{}, "//": "x"}, "body.hardware.//"},
			{"another site's gate", hardwareBody(h.seed.Test.Sites[1].Gates[0]), "body.hardware.gates[0].gate_id"},
			{"no such gate", hardwareBody(ids.New(ids.Gate)), "body.hardware.gates[0].gate_id"},
			{"not a gate ID", hardwareBody(ids.New(ids.Site)), "body.hardware.gates[0].gate_id"},
		} {
			r := h.patch("/v1/edges/"+id, map[string]any{"hardware": c.hardware})
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", c.location)
		}
		clash := hardwareBody(gate, london(h).Gates[1])
		clash["gates"].([]any)[1].(map[string]any)["readers"] = []any{map[string]any{"kind": "tcp", "listen": "127.0.0.1:9001"}}
		requireProblem(t, h.patch("/v1/edges/"+id, map[string]any{"hardware": clash}), http.StatusUnprocessableEntity, "validation_failed",
			"body.hardware.gates[1].readers[0].listen")
		e := h.get("/v1/edges/" + id)
		require.Nil(t, e.Body["hardware"], "nothing changed")
		require.Equal(t, "Lobby", e.Body["name"])
	})
}

// Publishable keys cannot configure an edge, a key without sites:write is
// refused, another organisation's or mode's edge is not_found, and a
// revoked edge's hardware cannot change.
func TestEdges_HardwareIsolation(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withBroker())
		id := h.demoEdge(t)
		body := map[string]any{"hardware": hardwareBody(london(h).Gates[0])}
		patch := func(key string) response {
			return h.do(req{method: http.MethodPatch, path: "/v1/edges/" + id, key: key, body: body})
		}
		requireProblem(t, patch(h.seed.Keys.PublishableTest), http.StatusForbidden, "forbidden")
		r := patch(newKey(t, h, cloud.ScopeSitesRead))
		requireProblem(t, r, http.StatusForbidden, "scope_missing")
		require.Contains(t, r.Body["detail"], "sites:write")
		requireProblem(t, patch(h.seed.Keys.SecretLive), http.StatusNotFound, "not_found")
		other, err := cloud.NewService(h.store, h.clock.Now).Seed(t.Context(), "Other Org", cloud.PlanPro)
		require.NoError(t, err)
		requireProblem(t, patch(other.Keys.SecretTest), http.StatusNotFound, "not_found")
		requireProblem(t, h.patch("/v1/edges/"+ids.New(ids.Edge), body), http.StatusNotFound, "not_found")
		requireProblem(t, h.patch("/v1/edges/"+ids.New(ids.Gate), body), http.StatusUnprocessableEntity, "validation_failed", "path.edge_id")
		require.Nil(t, h.get("/v1/edges/" + id).Body["hardware"], "none of them changed it")

		require.Equal(t, http.StatusOK, h.post("/v1/edges/"+id+"/revoke", nil).Status)
		requireProblem(t, h.patch("/v1/edges/"+id, body), http.StatusConflict, "invalid_state")
	})
}
