package gate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// atDesk is a visit checked in at the desk 10 minutes before t0, as the
// cloud sends one checked in by the API without a gate.
func atDesk(mod ...func(*protocol.Visit)) protocol.Visit {
	return visit(append([]func(*protocol.Visit){func(v *protocol.Visit) {
		v.Status, v.CheckedInAt, v.Uses, v.AtDesk = string(passrule.CheckedIn), ptr(t0.Add(-10*time.Minute)), 1, true
	}}, mod...)...)
}

// A visitor checked in at the desk passes the entrance once: an entered
// fact, the visit's gate becomes the entrance, its uses and check-in time
// unchanged. The pass then opens no entry gate again (already_in, the
// same gate or another), and the exit checks the visit out.
func TestScan_EnteredOnceAfterTheDesk(t *testing.T) {
	v := atDesk()
	f := newFixture(t, v)
	r, p := newRelay(t)
	entry, entry2, exit := f.newGate(f.entry, false, r), f.newGate(f.entry2, false, r), f.newGate(f.exit, false, r)

	res := scan(entry, f.token(v), t0)
	require.True(t, res.Admitted, "reason %q", res.Reason)
	require.Equal(t, protocol.FactEntered, res.Kind)
	require.Equal(t, v.ID, res.VisitID)
	require.NoError(t, res.Err)
	require.Equal(t, 1, p.pulses())
	want := v
	want.GateID, want.AtDesk = f.entry, false
	require.Equal(t, want, f.visitOf(v.ID))
	out := f.outbox()
	require.Len(t, out, 1)
	require.Equal(t, protocol.FactEntered, out[0].Kind)
	require.Equal(t, f.entry, out[0].GateID)
	require.Equal(t, v.ID, out[0].VisitID)
	require.Equal(t, v.ID, out[0].PassVisitID)
	require.Equal(t, t0, out[0].At)

	for _, g := range []*gate.Gate{entry, entry2} {
		again := scan(g, f.token(v), t0.Add(time.Minute))
		require.False(t, again.Admitted)
		require.Equal(t, protocol.ReasonAlreadyIn, again.Reason)
	}
	f.reopen()
	require.Equal(t, want, f.visitOf(v.ID), "stored")
	require.Equal(t, protocol.ReasonAlreadyIn, scan(entry, f.token(v), t0.Add(2*time.Minute)).Reason)

	left := scan(exit, f.token(v), t0.Add(time.Hour))
	require.Equal(t, protocol.FactCheckOut, left.Kind)
	gone := f.visitOf(v.ID)
	require.Equal(t, string(passrule.CheckedOut), gone.Status)
	require.Equal(t, f.entry, gone.GateID, "the gate they came in through stays")
	require.Equal(t, 2, p.pulses())
}

// Through the desk as the kiosk does it: the desk's decision recorded with
// a desk_check_in fact marks the visit at the desk; the entrance then lets
// it in once.
func TestScan_EnteredAfterTheKiosksCheckIn(t *testing.T) {
	v := visit()
	f := newFixture(t, v)
	at := t0.Add(-5 * time.Minute)
	d := gate.DecideAtDesk(f.State(), f.siteID, f.token(v), at)
	require.Equal(t, protocol.FactCheckIn, d.Kind)
	require.Empty(t, d.Visits[0].GateID, "the desk is no gate")
	_, err := f.Record(gate.Change{Visits: d.Visits}, protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactDeskCheckIn, At: at,
		VisitID: v.ID, DeviceID: "kiosk-1"})
	require.NoError(t, err)
	require.True(t, f.visitOf(v.ID).AtDesk)

	// The desk again: already in; the desk is not an entrance.
	require.Equal(t, protocol.ReasonAlreadyIn, gate.DecideAtDesk(f.State(), f.siteID, f.token(v), at.Add(time.Second)).Reason)

	r, _ := newRelay(t)
	g := f.newGate(f.entry, false, r)
	require.Equal(t, protocol.FactEntered, scan(g, f.token(v), t0).Kind)
	require.Equal(t, protocol.ReasonAlreadyIn, scan(g, f.token(v), t0.Add(time.Second)).Reason)
}

// A gate used both ways: a visit checked in at the desk is coming in, not
// leaving; once in through the gate, its next scan takes it out.
func TestScan_EnteredAtAGateUsedBothWays(t *testing.T) {
	v := atDesk()
	f := newFixture(t, v)
	r, p := newRelay(t)
	g := f.newGate(f.both, false, r)

	in := scan(g, f.token(v), t0)
	require.Equal(t, protocol.FactEntered, in.Kind, "reason %q", in.Reason)
	require.Equal(t, f.both, f.visitOf(v.ID).GateID)
	require.Equal(t, string(passrule.CheckedIn), f.visitOf(v.ID).Status)

	out := scan(g, f.token(v), t0.Add(time.Hour))
	require.Equal(t, protocol.FactCheckOut, out.Kind)
	require.Equal(t, string(passrule.CheckedOut), f.visitOf(v.ID).Status)
	require.Equal(t, 2, p.pulses())
}

// The rules an entry gate applies to a visit checked in at the desk.
func TestScan_EnteredRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		v      protocol.Visit
		gate   func(f *fixture) string
		kind   protocol.FactKind
		reason string
	}{
		{"a single-use pass used at the desk still opens the entrance: the same admission",
			atDesk(func(v *protocol.Visit) { v.Rules.SingleUse = true }), func(f *fixture) string { return f.entry }, protocol.FactEntered, ""},
		{"a single-use pass used twice does not",
			atDesk(func(v *protocol.Visit) { v.Rules.SingleUse, v.Uses = true, 2 }), func(f *fixture) string { return f.entry }, "", string(passrule.Used)},
		{"the pass's gate_ids still hold", atDesk(func(v *protocol.Visit) { v.Rules.GateIDs = []string{ids.New(ids.Gate)} }),
			func(f *fixture) string { return f.entry }, "", string(passrule.WrongGate)},
		{"an expired pass does not", atDesk(func(v *protocol.Visit) {
			v.ExpectedAt, v.ExpectedUntil = ptr(t0.Add(-5*time.Hour)), ptr(t0.Add(-2*time.Hour))
		}),
			func(f *fixture) string { return f.entry }, "", string(passrule.Expired)},
		{"a revoked pass does not", atDesk(func(v *protocol.Visit) { v.Revoked = true }),
			func(f *fixture) string { return f.entry }, "", string(passrule.Ended)},
		{"an exit gate checks a visit at the desk out", atDesk(), func(f *fixture) string { return f.exit }, protocol.FactCheckOut, ""},
		// A visit checked in with no gate_id but not said to be at the desk
		// (a cloud or a cache older than at_desk): anti-passback as before.
		{"checked in, gate unknown, not at the desk: already_in",
			visit(func(v *protocol.Visit) {
				v.Status, v.CheckedInAt, v.Uses = string(passrule.CheckedIn), ptr(t0.Add(-time.Hour)), 1
			}),
			func(f *fixture) string { return f.entry }, "", protocol.ReasonAlreadyIn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.v)
			r, _ := newRelay(t)
			res := scan(f.newGate(tc.gate(f), false, r), f.token(tc.v), t0)
			want := tc.kind
			if want == "" {
				want = protocol.FactRefused
			}
			require.Equal(t, want, res.Kind, "reason %q", res.Reason)
			require.Equal(t, tc.reason, res.Reason)
			got := f.visitOf(tc.v.ID)
			if res.Admitted {
				require.False(t, got.AtDesk, "no admit leaves a visit at the desk")
				require.Equal(t, tc.v.Uses, got.Uses, "entering is no new use")
			} else {
				require.Equal(t, tc.v, got, "a refusal changes nothing")
			}
		})
	}
}

// The relay fails after the entered fact was recorded: a relay_failed
// refusal voids it and puts the visit back at the desk, so the next scan
// lets the visitor in.
func TestScan_EnteredRelayFailureUndoes(t *testing.T) {
	v := atDesk()
	f := newFixture(t, v)
	stuck, err := relay.New(stuckOutput{}, relay.Config{Pin: "GPIO17", Pulse: time.Millisecond})
	require.NoError(t, err)

	res := scan(f.newGate(f.entry, false, stuck), f.token(v), t0)
	require.False(t, res.Admitted)
	require.Equal(t, protocol.ReasonRelayFailed, res.Reason)
	require.ErrorIs(t, res.Err, gate.ErrRelay)
	require.Equal(t, v, f.visitOf(v.ID), "put back: at the desk, no gate")
	out := f.outbox()
	require.Len(t, out, 2)
	require.Equal(t, protocol.FactEntered, out[0].Kind)
	require.Equal(t, protocol.FactRefused, out[1].Kind)
	require.Equal(t, out[0].ID, out[1].Voids)
	require.Equal(t, v.ID, out[1].VisitID)
	require.Equal(t, out[0].At, out[1].At, "the void carries the admit's scan time")

	r, _ := newRelay(t)
	again := scan(f.newGate(f.entry, false, r), f.token(v), t0.Add(time.Minute))
	require.Equal(t, protocol.FactEntered, again.Kind)
	require.Equal(t, f.entry, f.visitOf(v.ID).GateID)
}

// A check-in and a re-entry at a gate name the gate; neither is at the
// desk.
func TestScan_CheckInNamesTheGate(t *testing.T) {
	v := visit()
	f := newFixture(t, v)
	r, _ := newRelay(t)
	require.Equal(t, protocol.FactCheckIn, scan(f.newGate(f.entry2, false, r), f.token(v), t0).Kind)
	got := f.visitOf(v.ID)
	require.Equal(t, f.entry2, got.GateID)
	require.False(t, got.AtDesk)
	require.Equal(t, protocol.FactCheckOut, scan(f.newGate(f.exit, false, r), f.token(v), t0.Add(time.Minute)).Kind)
	// The pass still admits today: a re-entry, through the first entrance.
	re := scan(f.newGate(f.entry, false, r), f.token(v), t0.Add(2*time.Minute))
	require.Equal(t, protocol.FactReEntry, re.Kind)
	require.Equal(t, f.entry, f.visitOf(re.VisitID).GateID)
	require.Equal(t, f.entry2, f.visitOf(v.ID).GateID, "the first visit keeps its own")
}
