package cloud_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/sync/protocol"
)

// Facts from a gate fire the same events as the API: a check-in at the
// gate is visit.checked_in at the scan time, with no request ID; a fact
// applied again fires nothing more; a check-out is visit.checked_out.
func TestEvents_FromEdgeFacts(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		e.svc.SetEventRenderer(httpapi.RenderEvent)
		v := e.visit(t)
		e.clock.Advance(10 * time.Minute)
		in := e.fact(protocol.FactCheckIn, v.ID)
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, in))
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, in), "again: applied once")
		e.clock.Advance(time.Minute)
		out := e.fact(protocol.FactCheckOut, v.ID)
		out.GateID = e.exit
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, out))

		evs, _, err := e.svc.Events(t.Context(), e.actor, cloud.EventFilter{ObjectID: v.ID}, cloud.Page{Limit: 100})
		require.NoError(t, err)
		var types []string
		for i := len(evs) - 1; i >= 0; i-- {
			types = append(types, evs[i].Type)
		}
		require.Equal(t, []string{cloud.EventVisitCheckedIn, cloud.EventVisitCheckedOut}, types[len(types)-2:])
		checkedIn := evs[1]
		require.Empty(t, checkedIn.RequestID, "a gate, not an API request")
		var data struct {
			Status      string `json:"status"`
			CheckedInAt string `json:"checked_in_at"`
			GateID      string `json:"gate_id"`
		}
		require.NoError(t, json.Unmarshal(checkedIn.Data, &data))
		require.Equal(t, "checked_in", data.Status)
		require.Equal(t, in.At.UTC().Format("2006-01-02T15:04:05.000Z"), data.CheckedInAt, "the scan time")
		require.Equal(t, e.entry, data.GateID)
	})
}
