package gate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

func TestDecideAtDesk(t *testing.T) {
	onlyCarPark := visit(func(v *protocol.Visit) { v.Rules.GateIDs = []string{ids.New(ids.Gate)} })
	early := visit(func(v *protocol.Visit) {
		v.ExpectedAt, v.ExpectedUntil = ptr(t0.Add(5*time.Hour)), ptr(t0.Add(8*time.Hour))
	})
	in := visit(func(v *protocol.Visit) {
		v.Status, v.CheckedInAt = string(passrule.CheckedIn), ptr(t0.Add(-time.Minute))
	})
	cancelled := visit(func(v *protocol.Visit) { v.Status = string(passrule.Cancelled) })
	unseen := visit()
	f := newFixture(t, onlyCarPark, early, in, cancelled)
	// An hour past the offline limit: a gate failing secure would refuse;
	// the desk decides on.
	at := t0.Add(2 * time.Hour)
	for _, tc := range []struct {
		name   string
		text   string
		kind   protocol.FactKind
		reason string
	}{
		{"gate_ids do not restrict the desk", f.token(onlyCarPark), protocol.FactCheckIn, ""},
		{"too early", f.token(early), protocol.FactRefused, string(passrule.NotYet)},
		{"already in", f.token(in), protocol.FactRefused, protocol.ReasonAlreadyIn},
		{"the cache's cancellation wins over the token", f.token(cancelled), protocol.FactRefused, string(passrule.Ended)},
		{"a visit the edge never received, by its token", f.token(unseen), protocol.FactCheckIn, ""},
		{"not a pass", "hello", protocol.FactRefused, protocol.ReasonInvalidToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := gate.DecideAtDesk(f.State(), f.siteID, tc.text, at)
			require.Equal(t, tc.kind, d.Kind)
			require.Equal(t, tc.reason, d.Reason)
			if d.Admit() {
				require.Len(t, d.Visits, 1)
				require.Equal(t, string(passrule.CheckedIn), d.Visits[0].Status)
				require.Equal(t, at, *d.Visits[0].CheckedInAt)
			}
		})
	}
	t.Run("another site's pass", func(t *testing.T) {
		d := gate.DecideAtDesk(f.State(), ids.New(ids.Site), f.token(onlyCarPark), at)
		require.Equal(t, string(passrule.WrongGate), d.Reason)
	})
	t.Run("by visit", func(t *testing.T) {
		require.Equal(t, protocol.FactCheckIn, gate.DecideVisitAtDesk(f.State(), f.siteID, onlyCarPark.ID, at).Kind)
		require.Equal(t, string(passrule.NotYet), gate.DecideVisitAtDesk(f.State(), f.siteID, early.ID, at).Reason)
		require.Equal(t, string(passrule.Ended), gate.DecideVisitAtDesk(f.State(), f.siteID, unseen.ID, at).Reason)
	})
}
