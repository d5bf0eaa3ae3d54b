package cache_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// A desk's check-in and walk-in are recorded at the desk (at_desk, no
// gate), whatever the visit handed in says; a gate's check-in and the
// desk's other facts keep the visit's own gate and at_desk.
func TestRecord_DeskEntryMarksAtDesk(t *testing.T) {
	c, path := newCache(t)
	v, other := newVisit(), newVisit()
	apply(t, c, 1, v, other)

	in := checkedIn(v)
	in.GateID = gateID // a stale gate the caller left: the desk is no gate
	record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactDeskCheckIn, At: t0.Add(time.Minute), VisitID: v.ID,
		DeviceID: "kiosk-1"}, in)
	got := visitOf(t, c, v.ID)
	require.True(t, got.AtDesk)
	require.Empty(t, got.GateID)

	team := protocol.Team{ID: ids.New(ids.Team), Name: "Sales"}
	w, f := walkIn(team, "Vera", t0)
	record(t, c, f, w)
	require.True(t, visitOf(t, c, w.ID).AtDesk)

	// A take keeps what the visit holds.
	taken := visitOf(t, c, v.ID)
	taken.HostID, taken.NeedsSomeone = ids.New(ids.Person), false
	taken.AtDesk = false
	record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactTake, At: t0.Add(2 * time.Minute), VisitID: v.ID,
		PersonID: taken.HostID, DeviceID: "kiosk-1"}, taken)
	require.False(t, visitOf(t, c, v.ID).AtDesk, "only a check-in or walk-in is marked")

	gateIn := checkedIn(other)
	gateIn.GateID = gateID
	record(t, c, checkInFact(other.ID), gateIn)
	c = reopen(t, c, path)
	require.Equal(t, gateIn, visitOf(t, c, other.ID), "a gate's check-in: its gate, stored and read back")
	require.True(t, visitOf(t, c, w.ID).AtDesk, "stored")
}

// While the gate's entered fact waits, the cloud's visit sent before it
// saw the fact (checked in at the desk) does not put at_desk back: the
// pass must not open the entrance twice. Once acknowledged, the cloud's
// version received meanwhile is taken whole.
func TestApply_ConflictRuleKeepsTheEntry(t *testing.T) {
	c, path := newCache(t)
	v := newVisit()
	v.Status, v.CheckedInAt, v.Uses, v.AtDesk = string(passrule.CheckedIn), ptr(t0), 1, true
	apply(t, c, 1, v)

	entered := v
	entered.GateID, entered.AtDesk = gateID, false
	f := record(t, c, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactEntered, At: t0.Add(time.Minute), GateID: gateID,
		VisitID: v.ID, PassVisitID: v.ID}, entered)

	stale := v
	stale.HostName = "Grace Hopper"
	apply(t, c, 2, stale)
	want := entered
	want.HostName = "Grace Hopper"
	require.Equal(t, want, visitOf(t, c, v.ID))
	c = reopen(t, c, path)
	require.Equal(t, want, visitOf(t, c, v.ID))

	cloud := stale
	cloud.GateID, cloud.AtDesk = gateID, false
	apply(t, c, 3, cloud)
	n, err := c.Ack([]string{f.ID})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, cloud, visitOf(t, c, v.ID))
}
