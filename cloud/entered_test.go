package cloud_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// checkedInAtDesk is a visit checked in by the API without a gate, ten
// minutes before now.
func (e *edgeEnv) checkedInAtDesk(t *testing.T) cloud.Visit {
	t.Helper()
	v := e.visit(t)
	v, err := e.svc.CheckIn(t.Context(), e.actor, v.ID, cloud.CheckInInput{})
	require.NoError(t, err)
	require.Empty(t, v.GateID)
	e.clock.Advance(10 * time.Minute)
	return v
}

// entered is the edge's entered fact for v at its entry gate, a minute
// before now.
func (e *edgeEnv) entered(v cloud.Visit) protocol.Fact {
	f := e.fact(protocol.FactEntered, v.ID)
	f.PassVisitID = v.ID
	return f
}

// A visit checked in at the desk goes out on the feed at_desk; the gate's
// entered fact, however often delivered, sets its gate_id once and
// nothing else (the check-in's time and the pass's uses stay), fires
// visit.updated once (what the API shows changed: gate_id), and goes out
// on the feed with its gate, no longer at the desk.
func TestApplyFact_EnteredOnce(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		e.svc.SetEventRenderer(httpapi.RenderEvent)
		before := e.head(t)
		v := e.checkedInAtDesk(t)
		cs := e.changesAfter(t, before)
		require.NotEmpty(t, cs)
		sent := cs[len(cs)-1].Visit
		require.True(t, sent.AtDesk, "checked in with no gate: at the desk")
		require.Empty(t, sent.GateID)
		typesBefore, _ := e.events(t, v.ID)

		f := e.entered(v)
		before = e.head(t)
		e.applyTwice(t, f)
		got := e.get(t, v.ID)
		require.Equal(t, e.entry, got.GateID)
		require.Equal(t, cloud.VisitCheckedIn, got.Status)
		require.True(t, v.CheckedInAt.Equal(*got.CheckedInAt), "the desk's check-in stands")
		require.Equal(t, v.Pass.Uses, got.Pass.Uses, "no new use")
		require.Empty(t, e.recorded(t, f.ID).Conflict)
		require.Empty(t, e.conflicts(t, v.ID))
		cs = e.changesAfter(t, before)
		require.Len(t, cs, 1)
		require.Equal(t, cloud.EdgeVisit(got), *cs[0].Visit)
		require.Equal(t, e.entry, cs[0].Visit.GateID)
		require.False(t, cs[0].Visit.AtDesk)
		types, _ := e.events(t, v.ID)
		require.Equal(t, append(typesBefore, cloud.EventVisitUpdated), types, "visit.updated, once")

		// The API shows the gate.
		shown, err := e.svc.Visit(t.Context(), e.actor, v.ID)
		require.NoError(t, err)
		require.Equal(t, e.entry, shown.GateID)
	})
}

// An entered fact that disagrees with the cloud is recorded, flagged and
// audited like the other gate facts; the cloud's state stands where it
// must.
func TestApplyFact_EnteredConflicts(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		for _, tc := range []struct {
			name     string
			setup    func(t *testing.T) (cloud.Visit, protocol.Fact)
			conflict string
			check    func(t *testing.T, v, got cloud.Visit)
		}{
			{"checked out in the cloud before the passage", func(t *testing.T) (cloud.Visit, protocol.Fact) {
				v := e.checkedInAtDesk(t)
				_, err := e.svc.CheckOut(t.Context(), e.actor, v.ID)
				require.NoError(t, err)
				e.clock.Advance(2 * time.Minute)
				return v, e.entered(v) // a minute after the check-out
			}, cloud.ConflictAlreadyCheckedOut, func(t *testing.T, v, got cloud.Visit) {
				require.Equal(t, cloud.VisitCheckedOut, got.Status)
				require.Empty(t, got.GateID, "not the gate they came in through")
			}},
			{"checked out after the passage: both in order", func(t *testing.T) (cloud.Visit, protocol.Fact) {
				v := e.checkedInAtDesk(t)
				f := e.entered(v) // a minute before the check-out
				_, err := e.svc.CheckOut(t.Context(), e.actor, v.ID)
				require.NoError(t, err)
				return v, f
			}, "", func(t *testing.T, v, got cloud.Visit) {
				require.Equal(t, cloud.VisitCheckedOut, got.Status)
				require.Equal(t, e.entry, got.GateID)
			}},
			{"cancelled", func(t *testing.T) (cloud.Visit, protocol.Fact) {
				v := e.visit(t)
				_, err := e.svc.Cancel(t.Context(), e.actor, v.ID)
				require.NoError(t, err)
				return v, e.entered(v)
			}, cloud.ConflictEnded, func(t *testing.T, v, got cloud.Visit) {
				require.Equal(t, cloud.VisitCancelled, got.Status)
				require.Empty(t, got.GateID)
			}},
			{"expected in the cloud: checked in at the gate, the visitor is on site", func(t *testing.T) (cloud.Visit, protocol.Fact) {
				v := e.visit(t)
				return v, e.entered(v)
			}, cloud.ConflictNotCheckedIn, func(t *testing.T, v, got cloud.Visit) {
				require.Equal(t, cloud.VisitCheckedIn, got.Status)
				require.Equal(t, e.entry, got.GateID)
				require.Equal(t, v.Pass.Uses+1, got.Pass.Uses)
			}},
			{"came in through a gate already: the first gate stays", func(t *testing.T) (cloud.Visit, protocol.Fact) {
				v := e.visit(t)
				v, err := e.svc.CheckIn(t.Context(), e.actor, v.ID, cloud.CheckInInput{GateID: e.entry})
				require.NoError(t, err)
				e.clock.Advance(time.Minute)
				f := e.entered(v)
				f.GateID = e.exit // another of the site's gates
				return v, f
			}, cloud.ConflictAlreadyCheckedIn, func(t *testing.T, v, got cloud.Visit) {
				require.Equal(t, e.entry, got.GateID)
			}},
			{"a gate that is not the site's", func(t *testing.T) (cloud.Visit, protocol.Fact) {
				v := e.checkedInAtDesk(t)
				f := e.entered(v)
				f.GateID = ids.New(ids.Gate)
				return v, f
			}, cloud.ConflictUnknownGate, func(t *testing.T, v, got cloud.Visit) {
				require.Equal(t, cloud.VisitCheckedIn, got.Status)
				require.Empty(t, got.GateID)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				v, f := tc.setup(t)
				e.applyTwice(t, f)
				got := e.get(t, v.ID)
				require.Equal(t, tc.conflict, e.recorded(t, f.ID).Conflict)
				tc.check(t, v, got)
				audit := e.conflicts(t, v.ID)
				if tc.conflict == "" {
					require.Empty(t, audit)
					return
				}
				require.Len(t, audit, 1, "audited once")
				d := detailOf(t, audit[0])
				require.Equal(t, tc.conflict, d["conflict"])
				require.Equal(t, string(protocol.FactEntered), d["kind"])
				require.Equal(t, f.ID, d["fact_id"])
			})
		}

		t.Run("unknown visit", func(t *testing.T) {
			f := e.fact(protocol.FactEntered, ids.New(ids.Visit))
			f.PassVisitID = f.VisitID
			e.applyTwice(t, f)
			require.Equal(t, cloud.ConflictUnknownVisit, e.recorded(t, f.ID).Conflict)
		})
	})
}

// The gate's relay failed after it recorded the entered fact: the
// refusal that voids it takes the gate back (the visitor is still at the
// desk's side of the entrance), audited, and the next passage sets it.
func TestApplyFact_EnteredVoided(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.checkedInAtDesk(t)
		in := e.entered(v)
		void := e.voids(in)
		errs, err := e.svc.ApplyFacts(t.Context(), e.site, []protocol.Fact{in, void})
		require.NoError(t, err)
		require.Empty(t, slices.DeleteFunc(errs, func(err error) bool { return err == nil }))
		got := e.get(t, v.ID)
		require.Empty(t, got.GateID)
		require.Equal(t, cloud.VisitCheckedIn, got.Status)
		require.True(t, v.CheckedInAt.Equal(*got.CheckedInAt))
		require.Empty(t, e.recorded(t, void.ID).Conflict)
		audit := e.voided(t, v.ID)
		require.Len(t, audit, 1)
		require.NotContains(t, detailOf(t, audit[0]), "conflict")

		e.clock.Advance(time.Minute)
		again := e.entered(v)
		e.applyTwice(t, again)
		require.Equal(t, e.entry, e.get(t, v.ID).GateID)
	})
}
