package sitetest_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/sync/protocol"
)

// checkIn scans every token at the entry, a few at once, and requires
// each admitted as a check-in; it returns the facts' IDs.
func checkIn(t *testing.T, scanAll func(t testing.TB, gateID string, tokens []string) []edge.ScanResponse, gate string, toks []string) []string {
	t.Helper()
	var facts []string
	for i, res := range scanAll(t, gate, toks) {
		require.True(t, res.Admitted, "scan %d: %+v", i, res)
		require.Equal(t, string(protocol.FactCheckIn), res.Kind, "scan %d", i)
		facts = append(facts, res.FactID)
	}
	return facts
}

// waitDeliveredOnce waits until the edge's outbox is empty and the cloud
// holds all facts, then requires that it holds exactly those, each once,
// and that every visit was checked in by one use of its pass.
func waitDeliveredOnce(t *testing.T, w *sitetest.World, edgeID string, facts []string, visits []cloud.Visit, outbox func() int) {
	t.Helper()
	sitetest.Eventually(t, heal, func() bool { return outbox() == 0 && len(w.FactRows(t, edgeID)) >= len(facts) },
		"the outbox did not empty into the cloud (outbox %s, %s of %d facts recorded)", outboxNow{outbox}, rowsNow{w, t, edgeID}, len(facts))
	requireOnce(t, w, edgeID, facts, visits)
}

// requireOnce requires that the cloud recorded exactly the facts from
// the edge and that each visit is checked in with one use.
func requireOnce(t *testing.T, w *sitetest.World, edgeID string, facts []string, visits []cloud.Visit) {
	t.Helper()
	rows := w.FactRows(t, edgeID)
	var got []string
	for _, r := range rows {
		got = append(got, r.ID)
	}
	want := slices.Clone(facts)
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got, "the cloud's edge_facts rows of edge %s", edgeID)
	for _, v := range visits {
		c := w.Visit(t, v.ID)
		require.Equal(t, cloud.VisitCheckedIn, c.Status, "visit %s", v.ID)
		require.Equal(t, 1, c.Pass.Uses, "visit %s: one scan, one use", v.ID)
	}
}

// outboxNow and rowsNow print the state at the moment a wait gives up.
type outboxNow struct{ f func() int }

func (o outboxNow) String() string { return itoa(o.f()) }

type rowsNow struct {
	w  *sitetest.World
	t  *testing.T
	id string
}

func (r rowsNow) String() string { return itoa(len(r.w.FactRows(r.t, r.id))) }

func itoa(n int) string { return strconv.Itoa(n) }
