package sitetest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/sync/protocol"
)

// A pass-signing key rotation (issue 15 item 8): passes signed before it
// still admit at the edge, passes signed after carry the new key and
// admit too, and once the old key's retire time has come (by the edge's
// own clock) its passes are refused as invalid_token while the same
// person's pass under the new key admits.
func TestPassKeyRotation_OldPassesVerifyUntilRetired(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{FailOpen: true})
		e.Start()
		ctx := t.Context()
		svc := w.Svc()

		person, err := svc.CreatePerson(ctx, w.Tenant, cloud.PersonInput{Name: cloud.Some("Rosa Rotation")})
		require.NoError(t, err)
		oldPersonal, _, err := svc.PersonPass(ctx, w.Tenant, person.ID)
		require.NoError(t, err)
		before := w.NewVisit(t)
		oldVisit := w.Token(t, before.ID)

		newKey, retiring, err := svc.RotatePassKey(ctx, w.Tenant, 0)
		require.NoError(t, err)
		require.Len(t, retiring, 1, "the key made with the organisation is set to retire")
		retireAt := *retiring[0].RetiredAt
		require.False(t, retireAt.Before(before.ExpectedUntil.Add(7*24*time.Hour).Truncate(time.Second)),
			"not before the last pass it signed can have expired (%v)", retireAt)

		newPersonal, _, err := svc.PersonPass(ctx, w.Tenant, person.ID)
		require.NoError(t, err)
		require.NotEqual(t, oldPersonal, newPersonal, "the same pass signed again, by the new key")
		after := w.NewVisit(t)
		newVisit := w.Token(t, after.ID)
		set, err := svc.PassKeySet(ctx, w.Tenant)
		require.NoError(t, err)
		require.Len(t, set, 2, "both keys verify in the cloud")

		waitVisit(t, e, after.ID)
		w.WaitConverged(t, e, settle)
		require.Contains(t, e.View().Keys(), newKey.ID)

		res := e.Scan(t, w.Entry, oldVisit)
		require.True(t, res.Admitted, "a visit pass signed before the rotation: %+v", res)
		require.Equal(t, string(protocol.FactCheckIn), res.Kind)
		res = e.Scan(t, w.Entry, newVisit)
		require.True(t, res.Admitted, "a visit pass signed after: %+v", res)
		res = e.Scan(t, w.Entry, oldPersonal)
		require.True(t, res.Admitted, "a personal pass signed before the rotation: %+v", res)
		require.Equal(t, "in", res.Direction)

		// The old key's retire time, by the edge's clock: the cloud need
		// not be reachable for the edge to drop it.
		e.Proxy.Cut()
		e.Clock.Set(retireAt.Add(-time.Second))
		res = e.Scan(t, w.Exit, oldPersonal)
		require.True(t, res.Admitted, "a second before retiring, the old key still verifies: %+v", res)
		e.Clock.Set(retireAt)
		res = e.Scan(t, w.Entry, oldPersonal)
		require.False(t, res.Admitted)
		require.Equal(t, protocol.ReasonInvalidToken, res.Reason, "the old key has retired")
		res = e.Scan(t, w.Exit, newPersonal)
		require.True(t, res.Admitted, "the same person's pass under the new key: %+v", res)
		e.Clock.Real()
		e.Proxy.Restore()
	})
}
