package sitetest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/edge/sitetest"
)

// An appliance's state changes fire edge.online and edge.offline once
// each: online when the svc-edge child process first connects, nothing
// the instant it is killed (its last will only marks it offline), offline
// once it has been so for the silence limit, announced by whichever cloud
// process sweeps first (the others find nothing), and online again when
// it comes back.
func TestEdge_OnlineOfflineEvents(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		w.Svc().SetEventRenderer(httpapi.RenderEvent)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		events := func(typ string) []cloud.Event {
			t.Helper()
			evs, _, err := w.Svc().Store().ListEvents(t.Context(), w.Tenant, cloud.EventFilter{Type: typ, ObjectID: e.ID}, cloud.Page{Limit: 100})
			require.NoError(t, err)
			return evs
		}
		state := func(ev cloud.Event) string {
			var d struct {
				ID    string `json:"id"`
				State string `json:"state"`
			}
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			require.Equal(t, e.ID, d.ID)
			return d.State
		}

		c := e.StartChild(t)
		sitetest.Eventually(t, settle, func() bool { return len(events(cloud.EventEdgeOnline)) == 1 },
			"no edge.online when the appliance connected")
		require.Equal(t, cloud.EdgeOnline, state(events(cloud.EventEdgeOnline)[0]))

		c.Kill()
		sitetest.Eventually(t, settle, func() bool { return w.CloudEdge(t, e.ID).State == cloud.EdgeOffline },
			"the cloud did not take the killed appliance's last will")
		n, err := w.Svc().AnnounceEdges(t.Context())
		require.NoError(t, err)
		require.Zero(t, n, "offline for less than the silence limit: a reboot fires nothing")
		require.Empty(t, events(cloud.EventEdgeOffline))

		// Two more cloud processes, their clocks past the silence limit,
		// sweep at once: one announces it.
		later := func() time.Time { return time.Now().Add(cloud.EdgeSilentAfter + time.Second) }
		done := make(chan int, 2)
		for range 2 {
			p := cloud.NewService(w.Svc().Store(), later)
			p.SetEventRenderer(httpapi.RenderEvent)
			go func() {
				n, err := p.AnnounceEdges(t.Context())
				if err != nil {
					t.Error(err)
				}
				done <- n
			}()
		}
		require.Equal(t, 1, <-done+<-done, "announced once across processes")
		offline := events(cloud.EventEdgeOffline)
		require.Len(t, offline, 1)
		require.Equal(t, cloud.EdgeOffline, state(offline[0]))

		e.StartChild(t)
		sitetest.Eventually(t, settle, func() bool { return len(events(cloud.EventEdgeOnline)) == 2 },
			"no edge.online when the appliance came back")
		require.Len(t, events(cloud.EventEdgeOffline), 1)
	})
}
