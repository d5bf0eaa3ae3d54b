package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Outages (docs/decisions.md, "Database outages (issue 15)"): a call
// whose deadline has passed before the database answered returns an
// error wrapping cloud.ErrUnavailable, reads and writes alike. The
// engines' own outages (a server gone, a stalled connection, a locked
// file) are tested beside each store.

func outageTests() []test {
	return []test{
		{"DeadlinePassed", testOutageDeadlinePassed},
	}
}

func testOutageDeadlinePassed(t *testing.T, e *env) {
	site := e.newSite(t, e.a)
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()

	_, err := e.s.Site(ctx, e.a, site.ID)
	require.ErrorIs(t, err, cloud.ErrUnavailable, "a read")
	_, _, err = e.s.ListSites(ctx, e.a, cloud.SiteFilter{}, cloud.Page{Limit: 10})
	require.ErrorIs(t, err, cloud.ErrUnavailable, "a list")
	err = e.s.CreateSite(ctx, cloud.Site{ID: ids.New(ids.Site), Tenant: e.a, Name: "Late", Timezone: "UTC", CreatedAt: e.now, UpdatedAt: e.now})
	require.ErrorIs(t, err, cloud.ErrUnavailable, "a write")
	_, err = e.s.UpdateSite(ctx, e.a, site.ID, func(s *cloud.Site) error { s.Name = "Late"; return nil })
	require.ErrorIs(t, err, cloud.ErrUnavailable, "an update")
	_, err = e.s.IdempotencyRecord(ctx, e.a, "key", e.now)
	require.ErrorIs(t, err, cloud.ErrUnavailable, "an idempotency record")
	_, err = e.s.KeyByHash(ctx, []byte("hash"))
	require.ErrorIs(t, err, cloud.ErrUnavailable, "a key")

	got, err := e.s.Site(t.Context(), e.a, site.ID)
	require.NoError(t, err)
	require.Equal(t, site.Name, got.Name, "nothing changed")
}
