package cache

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.jetify.com/typeid"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

func TestVisitUID_RoundTrip(t *testing.T) {
	for _, id := range []string{
		"visit_00000000000000000000000000",
		"visit_7zzzzzzzzzzzzzzzzzzzzzzzzz",
		"visit_01h455vb4pex5vsknk084sn02q",
	} {
		u, ok := visitUID(id)
		require.True(t, ok, id)
		require.Equal(t, id, visitID(u))
	}
	for range 1000 {
		id := ids.New(ids.Visit)
		u, ok := visitUID(id)
		require.True(t, ok, id)
		require.Equal(t, id, visitID(u))

		// The uid is the TypeID's UUID, big-endian.
		tid, err := typeid.FromString(id)
		require.NoError(t, err)
		b := tid.UUIDBytes()
		var hi, lo uint64
		for i := range 8 {
			hi, lo = hi<<8|uint64(b[i]), lo<<8|uint64(b[8+i])
		}
		require.Equal(t, uid{hi, lo}, u)
	}
	for _, bad := range []string{"", "visit_", "gate_01h455vb4pex5vsknk084sn02q", "visit_81h455vb4pex5vsknk084sn02q", "visit_01h455vb4pex5vsknk084sn02u"} {
		_, ok := visitUID(bad)
		require.False(t, ok, bad)
	}
}

func TestVisitUID_ShardsSpread(t *testing.T) {
	var n [shards]int
	for range 100 * shards {
		u, _ := visitUID(ids.New(ids.Visit))
		n[u.shard()]++
	}
	for s, c := range n {
		require.Greater(t, c, 40, "shard %d holds %d of %d", s, c, 100*shards)
		require.Less(t, c, 170, "shard %d holds %d of %d", s, c, 100*shards)
	}
}

func TestVisitEntry_Size(t *testing.T) {
	// 192: the receiver of a handed-over visit added a pointer (nil for
	// nearly every visit), 0.8 MB for 100,000 visits.
	require.Equal(t, uintptr(192), unsafe.Sizeof(visitEntry{}))
}

func TestVisitEntry_RoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 123456000, time.UTC)
	until, in, out := at.Add(8*time.Hour), at.Add(time.Minute), at.Add(2*time.Hour)
	pass, again, gate := ids.New(ids.Visit), ids.New(ids.Visit), ids.New(ids.Gate)
	full := protocol.Visit{
		ID: ids.New(ids.Visit), Status: string(passrule.CheckedOut),
		ExpectedAt: &at, ExpectedUntil: &until, CheckedInAt: &in, CheckedOutAt: &out,
		Rules: protocol.Rules{Daily: &protocol.Daily{From: 22 * 60, Until: 6 * 60}, Window: protocol.Window{Before: passrule.MaxWindowMinutes, After: 15},
			SingleUse: true, GateIDs: []string{gate, ids.New(ids.Gate)}},
		Uses: 3, Revoked: true, ForVisitID: pass, ReenteredAs: again, VisitorName: "Vera Visitor", HostName: "Ada Lovelace",
		GateID: gate,
	}
	own := ids.New(ids.Visit)
	bare := protocol.Visit{ID: own, Status: string(passrule.Expected), ForVisitID: own, Rules: protocol.Rules{GateIDs: []string{}}}
	desk := bare
	desk.ID, desk.ForVisitID, desk.Status, desk.CheckedInAt, desk.AtDesk = again, again, string(passrule.CheckedIn), &in, true
	entered := bare
	entered.ID, entered.ForVisitID, entered.GateID = pass, pass, gate
	in2 := newInterner()
	for _, v := range []protocol.Visit{full, bare, desk, entered} {
		u, e, err := in2.entry(&v)
		require.NoError(t, err)
		require.Equal(t, v, e.visit(v.ID, u))
	}
	// Returned gate lists are copies: changing one leaves the View alone.
	u, e, _ := in2.entry(&full)
	got := e.visit(full.ID, u)
	got.Rules.GateIDs[0] = "changed"
	require.Equal(t, gate, e.visit(full.ID, u).Rules.GateIDs[0])

	// Visits with the same gates share them: a site has few gates.
	other := full
	other.ID = ids.New(ids.Visit)
	_, e2, err := in2.entry(&other)
	require.NoError(t, err)
	require.Same(t, e.gates, e2.gates)
	_, e3, err := in2.entry(&desk)
	require.NoError(t, err)
	require.Nil(t, e3.gates, "no gate_ids and no gate_id: nothing to hold")
}
