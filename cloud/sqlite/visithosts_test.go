package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// TestVisitHosts_CarryTheVisitsCreation makes a visit, then changes its
// hosts, and checks that every visit_hosts row carries its visit's
// created_at (the host filter reads the visits in that order), as written
// with the row rather than by a trigger.
func TestVisitHosts_CarryTheVisitsCreation(t *testing.T) {
	ctx := context.Background()
	f := seededFile(t, "Hosts")
	s, svc, seed, a, db := f.store, f.svc, f.seed, f.actor, f.db
	tn := a.Tenant

	at := time.Now().Add(time.Hour)
	v, err := svc.CreateVisit(ctx, a, cloud.VisitInput{SiteID: cloud.Some(seed.Test.Sites[0].ID), Type: cloud.Some("meeting"),
		HostIDs: cloud.Some(seed.Test.People[:2]), ExpectedAt: cloud.Some(&at),
		Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Ada Lovelace"), Email: cloud.Some("ada@example.org")})})
	require.NoError(t, err)
	check := func(want int) {
		t.Helper()
		var n, same int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(h.created_at IS v.created_at), 0)
			FROM visit_hosts h JOIN visits v ON v.id = h.visit_id WHERE h.visit_id = ?`, v.ID).Scan(&n, &same))
		require.Equal(t, want, n)
		require.Equal(t, n, same, "every host row carries the visit's created_at")
	}
	check(2)

	// New hosts: the rows are written again, with the same time.
	_, err = s.UpdateVisit(ctx, tn, v.ID, func(x *cloud.Visit, _ *cloud.VisitWrites) error {
		x.Hosts = append(x.Hosts, cloud.Host{ID: seed.Test.People[2], Role: cloud.HostRoleCoHost, State: cloud.HostStateInvited})
		x.UpdatedAt = x.UpdatedAt.Add(time.Second)
		return nil
	})
	require.NoError(t, err)
	check(3)
}
