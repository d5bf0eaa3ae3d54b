package sitetest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// A visitor checked in at the reception desk walks to the entrance and
// scans their pass: the gate opens once (an entered fact), the cloud's
// visit gets the entrance as its gate_id, and a second scan is refused
// already_in. Two ways to the desk: the kiosk's desk_check_in recorded
// in the edge's cache and scanned at once, before the cloud has seen it;
// and the API's check-in without a gate, which reaches the edge on the
// feed. Every fact is applied once, without conflict, and the edge's
// cache ends equal to the cloud's.
func TestSite_EnteredAfterTheDesk(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		kiosk, api := w.NewVisit(t), w.NewVisit(t)
		waitVisit(t, e, kiosk.ID)
		waitVisit(t, e, api.ID)

		// At the kiosk: checked in at the desk, as the kiosk's store
		// records it, then straight to the entrance.
		cached, ok := e.View().Visit(kiosk.ID)
		require.True(t, ok)
		deskAt := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
		cached.Status, cached.CheckedInAt, cached.Uses = "checked_in", &deskAt, cached.Uses+1
		deskFact := desk(t, e, cached, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactDeskCheckIn, At: deskAt, VisitID: kiosk.ID})
		atDesk, _ := e.View().Visit(kiosk.ID)
		require.True(t, atDesk.AtDesk)

		res := e.Scan(t, w.Entry, w.Token(t, kiosk.ID))
		require.True(t, res.Admitted, "%+v", res)
		require.Equal(t, string(protocol.FactEntered), res.Kind)
		require.Equal(t, kiosk.ID, res.VisitID)
		again := e.Scan(t, w.Entry, w.Token(t, kiosk.ID))
		require.False(t, again.Admitted)
		require.Equal(t, protocol.ReasonAlreadyIn, again.Reason)

		// By the API, without a gate: the feed says at the desk.
		_, err := w.Svc().CheckIn(t.Context(), w.Actor, api.ID, cloud.CheckInInput{})
		require.NoError(t, err)
		sitetest.Eventually(t, settle, func() bool {
			v, _ := e.View().Visit(api.ID)
			return v.AtDesk
		}, "the API's check-in did not reach the edge")
		res2 := e.Scan(t, w.Entry, w.Token(t, api.ID))
		require.True(t, res2.Admitted, "%+v", res2)
		require.Equal(t, string(protocol.FactEntered), res2.Kind)
		again2 := e.Scan(t, w.Entry, w.Token(t, api.ID))
		require.Equal(t, protocol.ReasonAlreadyIn, again2.Reason)

		facts := []string{deskFact, res.FactID, again.FactID, res2.FactID, again2.FactID}
		waitDeliveredOnce(t, w, e.ID, facts, nil, e.Outbox)
		for _, r := range w.FactRows(t, e.ID) {
			require.Empty(t, r.Conflict, "fact %s (%s)", r.ID, r.Kind)
		}
		for _, id := range []string{kiosk.ID, api.ID} {
			got := w.Visit(t, id)
			require.Equal(t, cloud.VisitCheckedIn, got.Status)
			require.Equal(t, w.Entry, got.GateID, "the gate the visitor came in through")
			require.Equal(t, 1, got.Pass.Uses, "the desk's one use")
		}
		require.True(t, deskAt.Equal(*w.Visit(t, kiosk.ID).CheckedInAt), "checked in at the desk's time")
		w.WaitConverged(t, e, settle)
		for _, id := range []string{kiosk.ID, api.ID} {
			v, _ := e.View().Visit(id)
			require.Equal(t, w.Entry, v.GateID)
			require.False(t, v.AtDesk)
		}
		require.Equal(t, protocol.ReasonAlreadyIn, e.Scan(t, w.Entry, w.Token(t, kiosk.ID)).Reason, "converged: still in")
	})
}
