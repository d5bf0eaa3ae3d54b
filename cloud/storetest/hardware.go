package storetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// hardwareDoc is a hardware document for gateID, its defaults filled in as
// the API stores them.
func hardwareDoc(gateID, listen string) *hardware.Document {
	doc := &hardware.Document{Gates: []hardware.Gate{{ID: gateID,
		Readers: []hardware.Reader{{Kind: hardware.TCP, Listen: listen}, {Kind: hardware.Serial, Device: "/dev/ttyACM0"}},
		Relay:   hardware.Relay{Pin: "GPIO17", ActiveLow: true}, Door: &hardware.Door{Pin: "GPIO27", Pull: "up"}}},
		Kiosk: &hardware.Kiosk{Printer: "192.168.1.50:9100"}}
	doc.Defaults()
	return doc
}

// changesAfter is the site's feed after seq.
func (e *env) changesAfter(t testing.TB, tn cloud.Tenant, siteID string, seq uint64) ([]protocol.Change, uint64) {
	t.Helper()
	cs, head, err := e.s.SiteChanges(t.Context(), tn, siteID, seq, protocol.MaxChanges)
	require.NoError(t, err)
	return cs, head
}

// UpdateEdge stores an edge's name and hardware; a hardware that changes
// goes out on the edge's site's feed alone, addressed to the edge, in the
// same transaction, and one that does not change sends nothing.
func testEdgeHardware(t *testing.T, e *env) {
	s, other := e.newSite(t, e.a), e.newSite(t, e.a)
	g := e.newGate(t, e.a, s.ID)
	ed := e.newEdge(t, e.a, s.ID)
	e.newEdge(t, e.a, other.ID)
	_, head := e.changesAfter(t, e.a, s.ID, 0)
	_, otherHead := e.changesAfter(t, e.a, other.ID, 0)
	doc := hardwareDoc(g.ID, "0.0.0.0:9001")

	at := e.tick()
	got, err := e.s.UpdateEdge(t.Context(), e.a, ed.ID, at, func(x *cloud.Edge) error {
		x.Hardware = doc
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, doc, got.Hardware)
	require.Equal(t, head+1, got.Head, "the edge is returned with the feed head its change moved")
	stored, err := e.s.Edge(t.Context(), ed.ID)
	require.NoError(t, err)
	require.Equal(t, doc, stored.Hardware)
	cs, _ := e.changesAfter(t, e.a, s.ID, head)
	require.Len(t, cs, 1)
	require.Equal(t, head+1, cs[0].Seq)
	require.True(t, at.Equal(cs[0].At))
	require.Equal(t, &protocol.EdgeHardware{EdgeID: ed.ID, Hardware: doc}, cs[0].Hardware)
	head = cs[0].Seq
	_, h := e.changesAfter(t, e.a, other.ID, 0)
	require.Equal(t, otherHead, h, "another site's feed carries nothing")

	got, err = e.s.UpdateEdge(t.Context(), e.a, ed.ID, e.tick(), func(x *cloud.Edge) error {
		x.Name = "Gatehouse"
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "Gatehouse", got.Name)
	require.Equal(t, doc, got.Hardware, "the hardware stays")
	same := hardwareDoc(g.ID, "0.0.0.0:9001")
	_, err = e.s.UpdateEdge(t.Context(), e.a, ed.ID, e.tick(), func(x *cloud.Edge) error {
		x.Hardware = same
		return nil
	})
	require.NoError(t, err)
	cs, _ = e.changesAfter(t, e.a, s.ID, head)
	require.Empty(t, cs, "a name, or the same hardware again, sends nothing")

	boom := errors.New("boom")
	_, err = e.s.UpdateEdge(t.Context(), e.a, ed.ID, e.tick(), func(x *cloud.Edge) error {
		x.Name, x.Hardware = "Lost", hardwareDoc(g.ID, "0.0.0.0:9009")
		return boom
	})
	require.ErrorIs(t, err, boom)
	stored, err = e.s.Edge(t.Context(), ed.ID)
	require.NoError(t, err)
	require.Equal(t, "Gatehouse", stored.Name, "fn's error stores nothing")
	require.Equal(t, doc, stored.Hardware)
	cs, _ = e.changesAfter(t, e.a, s.ID, head)
	require.Empty(t, cs)

	got, err = e.s.UpdateEdge(t.Context(), e.a, ed.ID, e.tick(), func(x *cloud.Edge) error {
		x.Hardware = nil
		return nil
	})
	require.NoError(t, err)
	require.Nil(t, got.Hardware)
	cs, _ = e.changesAfter(t, e.a, s.ID, head)
	require.Len(t, cs, 1)
	require.Equal(t, &protocol.EdgeHardware{EdgeID: ed.ID}, cs[0].Hardware, "cleared: the appliance goes back to its file")

	for _, c := range []struct {
		tn cloud.Tenant
		id string
	}{{e.b, ed.ID}, {e.c, ed.ID}, {e.a, ids.New(ids.Edge)}} {
		_, err := e.s.UpdateEdge(t.Context(), c.tn, c.id, e.tick(), func(x *cloud.Edge) error {
			t.Fatal("fn called for an edge the tenant does not have")
			return nil
		})
		requireNotFound(t, err)
	}
}

// A site's snapshot carries the hardware of its edge that is not revoked,
// and none once that edge is revoked.
func testEdgeHardwareSnapshot(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	g := e.newGate(t, e.a, s.ID)
	ed := e.newEdge(t, e.a, s.ID)
	snap, err := e.s.SiteSnapshot(t.Context(), e.a, s.ID, e.now)
	require.NoError(t, err)
	require.Nil(t, snap.Hardware, "none until the cloud holds one")

	doc := hardwareDoc(g.ID, "127.0.0.1:9001")
	_, err = e.s.UpdateEdge(t.Context(), e.a, ed.ID, e.tick(), func(x *cloud.Edge) error {
		x.Hardware = doc
		return nil
	})
	require.NoError(t, err)
	snap, err = e.s.SiteSnapshot(t.Context(), e.a, s.ID, e.now)
	require.NoError(t, err)
	require.Equal(t, &protocol.EdgeHardware{EdgeID: ed.ID, Hardware: doc}, snap.Hardware)

	_, err = e.s.RevokeEdge(t.Context(), e.a, ed.ID, e.tick())
	require.NoError(t, err)
	e.newEdge(t, e.a, s.ID)
	snap, err = e.s.SiteSnapshot(t.Context(), e.a, s.ID, e.now)
	require.NoError(t, err)
	require.Nil(t, snap.Hardware, "the revoked edge's hardware is not the new edge's")
}

// An online status says what went wrong applying the hardware, or that
// nothing did; the last will leaves what the last online status said.
func testEdgeHardwareError(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	ed := e.newEdge(t, e.a, s.ID)
	st := protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOnline, At: e.tick(), HardwareError: "gate x: tcp reader: address in use"}
	require.NoError(t, e.s.RecordEdgeStatus(t.Context(), e.a, s.ID, st, e.tick()))
	got, err := e.s.Edge(t.Context(), ed.ID)
	require.NoError(t, err)
	require.Equal(t, st.HardwareError, got.HardwareError)
	will := protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOffline, At: e.tick()}
	require.NoError(t, e.s.RecordEdgeStatus(t.Context(), e.a, s.ID, will, e.tick()))
	got, err = e.s.Edge(t.Context(), ed.ID)
	require.NoError(t, err)
	require.Equal(t, st.HardwareError, got.HardwareError)
	st.HardwareError = ""
	require.NoError(t, e.s.RecordEdgeStatus(t.Context(), e.a, s.ID, st, e.tick()))
	got, err = e.s.Edge(t.Context(), ed.ID)
	require.NoError(t, err)
	require.Empty(t, got.HardwareError)
}
