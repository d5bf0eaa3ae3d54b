package sitetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
)

// conflictAfterOutage lets the cloud change a visit (change) while the
// edge is cut off, admits the visit at the gate from the edge's outdated
// cache, and reconnects:
// the check-in is recorded with its conflict, and the edge's cache ends
// equal to the cloud's state ("both sides converge", DESIGN.md).
func conflictAfterOutage(t *testing.T, opts sitetest.Options, change func(w *sitetest.World, v cloud.Visit), conflict string) {
	w := sitetest.Start(t, opts)
	e := w.NewEdge(t, sitetest.EdgeOptions{})
	e.Start()
	v := w.NewVisit(t)
	tok := w.Token(t, v.ID)
	w.WaitConverged(t, e, settle)

	e.Proxy.Cut()
	sitetest.Eventually(t, settle, func() bool { return !e.Half().State().Connected }, "the edge did not notice the cut")
	change(w, v)
	res := e.Scan(t, w.Entry, tok) // the cache has not heard of the change
	require.True(t, res.Admitted, "%+v", res)
	e.Proxy.Restore()

	sitetest.Eventually(t, heal, func() bool { return e.Outbox() == 0 }, "the check-in was not acknowledged")
	rec, ok := w.EdgeFact(t, res.FactID)
	require.True(t, ok)
	require.Equal(t, conflict, rec.Conflict)
	w.WaitConverged(t, e, settle)
}

// A check-in at the gate of a visit the cloud cancelled meanwhile: the
// fact is recorded with conflict "ended", the cancellation stands, and the
// edge's cache takes the cloud's visit.
func TestConflict_CheckInOfCancelledVisit(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		conflictAfterOutage(t, opts, func(w *sitetest.World, v cloud.Visit) {
			_, err := w.Svc().Cancel(context.Background(), w.Actor, v.ID)
			require.NoError(t, err)
		}, cloud.ConflictEnded)
	})
}

// A check-in at the gate of a visit the desk checked in a moment before:
// the fact is recorded with conflict "already_checked_in", and the edge's
// cache takes the cloud's visit (two uses, checked in at the desk's time,
// the earlier).
func TestConflict_CheckInAtGateAndDesk(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		conflictAfterOutage(t, opts, func(w *sitetest.World, v cloud.Visit) {
			_, err := w.Svc().CheckIn(context.Background(), w.Actor, v.ID, cloud.CheckInInput{})
			require.NoError(t, err)
		}, cloud.ConflictAlreadyCheckedIn)
	})
}
