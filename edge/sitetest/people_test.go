package sitetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/sync/protocol"
)

// A person made in the cloud reaches the edge; their personal pass punches
// them in, and the punch reaches the cloud's facts; a reissue replaces the
// pass at the gate and a deactivation shuts it out, each once the edge has
// the change; edge and cloud end converged.
func TestSite_PersonalPassPunch(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		ctx := context.Background()
		svc := w.Svc()

		p, err := svc.CreatePerson(ctx, w.Tenant, cloud.PersonInput{Name: cloud.Some("Erin Employee")})
		require.NoError(t, err)
		old, _, err := svc.PersonPass(ctx, w.Tenant, p.ID)
		require.NoError(t, err)
		waitPerson(t, e, p.ID, func(got protocol.Person) bool { return got.Active })

		res := e.Scan(t, w.Entry, old)
		require.True(t, res.Admitted, "%+v", res)
		require.Equal(t, string(protocol.FactPunch), res.Kind)
		require.Equal(t, protocol.DirectionIn, res.Direction)
		sitetest.Eventually(t, settle, func() bool { _, ok := w.EdgeFact(t, res.FactID); return ok },
			"the punch did not reach the cloud")
		rec, _ := w.EdgeFact(t, res.FactID)
		require.Equal(t, protocol.FactPunch, rec.Fact.Kind)
		require.Empty(t, rec.Conflict)

		tok, issued, err := svc.ReissuePersonPass(ctx, w.Tenant, p.ID)
		require.NoError(t, err)
		waitPerson(t, e, p.ID, func(got protocol.Person) bool { return got.PassIssuedAt == issued.Unix() })
		require.Equal(t, protocol.ReasonPassReplaced, e.Scan(t, w.Exit, old).Reason)
		out := e.Scan(t, w.Exit, tok)
		require.True(t, out.Admitted, "%+v", out)
		require.Equal(t, protocol.DirectionOut, out.Direction)

		_, err = svc.SetPersonActive(ctx, w.Tenant, p.ID, false)
		require.NoError(t, err)
		waitPerson(t, e, p.ID, func(got protocol.Person) bool { return !got.Active })
		require.Equal(t, protocol.ReasonPersonInactive, e.Scan(t, w.Entry, tok).Reason)

		var diff string
		sitetest.Eventually(t, heal, func() bool {
			diff = w.CacheDiff(t, e.View())
			return e.Outbox() == 0 && diff == ""
		}, "edge and cloud did not converge: %s", lastDiff(func() string { return diff }))
	})
}

// waitPerson waits until the edge holds the person as ok wants them.
func waitPerson(t *testing.T, e *sitetest.Edge, id string, ok func(protocol.Person) bool) {
	t.Helper()
	sitetest.Eventually(t, settle, func() bool {
		p, found := e.View().Person(id)
		return found && ok(p) && !e.View().SyncedAt().IsZero()
	}, "person %s did not reach the edge as expected", id)
}

// lastDiff prints the difference found last, when a wait fails.
type lastDiff func() string

func (d lastDiff) String() string { return d() }
