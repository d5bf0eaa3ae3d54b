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

// One write that records more events than a store inserts in one
// statement (an edge's batch of 40 check-ins) stores every event once and
// queues each one delivery per endpoint subscribed to it: here one
// endpoint takes every type, one only check-ins, one only check-outs.
func TestEvents_ManyInOneWrite(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		e.svc.SetEventRenderer(httpapi.RenderEvent)
		endpoint := func(types ...string) cloud.WebhookEndpoint {
			url := "https://hooks.example.org/" + types[0]
			w, err := e.svc.CreateWebhookEndpoint(t.Context(), e.actor, cloud.WebhookInput{URL: &url, EventTypes: types})
			require.NoError(t, err)
			return w
		}
		every, checkIns, checkOuts := endpoint("*"), endpoint(cloud.EventVisitCheckedIn), endpoint(cloud.EventVisitCheckedOut)
		const n = 40
		visits := map[string]bool{}
		var facts []protocol.Fact
		for range n {
			v := e.visit(t)
			visits[v.ID] = true
			facts = append(facts, e.fact(protocol.FactCheckIn, v.ID))
		}
		e.clock.Advance(10 * time.Minute)
		errs, err := e.svc.ApplyFacts(t.Context(), e.site, facts)
		require.NoError(t, err)
		for _, err := range errs {
			require.NoError(t, err)
		}

		evs, _, err := e.svc.Events(t.Context(), e.actor, cloud.EventFilter{Type: cloud.EventVisitCheckedIn}, cloud.Page{Limit: 100})
		require.NoError(t, err)
		require.Equal(t, n, len(evs), "check-in events")
		for _, ev := range evs {
			require.True(t, visits[ev.ObjectID], "one event per visit checked in")
			delete(visits, ev.ObjectID)
		}
		for _, c := range []struct {
			w    cloud.WebhookEndpoint
			want int
		}{{every, n}, {checkIns, n}, {checkOuts, 0}} {
			ds, _, err := e.svc.WebhookDeliveries(t.Context(), e.actor, c.w.ID, cloud.DeliveryFilter{}, cloud.Page{Limit: 100})
			require.NoError(t, err)
			var checkedIn int
			for _, d := range ds {
				if d.EventType == cloud.EventVisitCheckedIn {
					checkedIn++
				}
			}
			require.Equal(t, c.want, checkedIn, "deliveries of check-ins to %s", c.w.URL)
		}
	})
}
