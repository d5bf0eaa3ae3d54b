package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/sync/protocol"
)

// seeded is a store in a file with a seeded organisation, for tests that
// act through the service and read the file's rows as they are.
type seeded struct {
	store *sqlite.Store
	svc   *cloud.Service
	seed  cloud.SeedResult
	actor cloud.Actor // the organisation's test mode, on its plan
	db    *sql.DB     // the file, read-only
}

func seededFile(t *testing.T, name string) seeded {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cloud.db")
	s, err := sqlite.Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	svc := cloud.NewService(s, time.Now)
	seed, err := svc.Seed(ctx, name, cloud.PlanEnterprise)
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return seeded{store: s, svc: svc, seed: seed, db: db,
		actor: cloud.Actor{Tenant: cloud.Tenant{OrgID: seed.Organisation.ID, Mode: cloud.ModeTest}, Plan: cloud.PlanEnterprise}}
}

// TestCreateVisit_FeedRowIsTheStoredVisit makes visits through the
// service as POST /visits does (hosted, a walk-in nobody hosts, a second
// visit of a known visitor) and checks, byte for byte, that the row each
// appends to its site's feed is the change a read of the stored visit
// gives: a new visit with a new visitor goes on the feed as written,
// without being read back, and must not differ from what a read-back
// would have put there.
func TestCreateVisit_FeedRowIsTheStoredVisit(t *testing.T) {
	ctx := context.Background()
	f := seededFile(t, "Feed")
	s, svc, seed, a, db := f.store, f.svc, f.seed, f.actor, f.db
	tn, site := a.Tenant, seed.Test.Sites[0].ID

	at := time.Now().Add(time.Hour)
	visitor := func(email string) cloud.Optional[*cloud.VisitorInput] {
		return cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Ada Lovelace"), Email: cloud.Some(email),
			Company: cloud.Some("Analytical Engines")})
	}
	for _, c := range []struct {
		name string
		in   cloud.VisitInput
	}{
		{"hosted", cloud.VisitInput{SiteID: cloud.Some(site), HostID: cloud.Some(seed.Test.People[0]), Type: cloud.Some("meeting"),
			Visitor: visitor("ada@example.org"), ExpectedAt: cloud.Some(&at), Purpose: cloud.Some("Engines")}},
		{"walk-in at the desk", cloud.VisitInput{SiteID: cloud.Some(site), Type: cloud.Some("meeting"),
			Visitor: visitor("grace@example.org"), WalkIn: cloud.Some(true)}},
		{"known visitor", cloud.VisitInput{SiteID: cloud.Some(site), HostID: cloud.Some(seed.Test.People[1]), Type: cloud.Some("meeting"),
			Visitor: visitor("ada@example.org"), ExpectedAt: cloud.Some(&at)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := svc.CreateVisit(ctx, a, c.in)
			require.NoError(t, err)
			var atMicros int64
			var body string
			require.NoError(t, db.QueryRowContext(ctx, `SELECT at, body FROM site_feed WHERE org_id = ? AND mode = ? AND visit_id = ?
				ORDER BY seq DESC LIMIT 1`, tn.OrgID, string(tn.Mode), v.ID).Scan(&atMicros, &body))
			stored, err := s.Visit(ctx, tn, v.ID)
			require.NoError(t, err)
			pv := cloud.EdgeVisit(stored)
			want, err := storedoc.EncodeChange(protocol.Change{Visit: &pv})
			require.NoError(t, err)
			require.JSONEq(t, string(want), body)
			require.Equal(t, string(want), body, "the same bytes, not only the same JSON")
			require.Equal(t, stored.UpdatedAt.UnixMicro(), atMicros)
		})
	}
}
