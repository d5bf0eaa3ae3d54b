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
	"github.com/svc-vms/svc/shared/ids"
)

// TestMigration6_FillsEdgeUntil takes a file back to before migration 6
// with visits in it, opens it again and checks the migration filled their
// edge_until from the documents, so a snapshot picks the same visits as
// for visits written after it.
func TestMigration6_FillsEdgeUntil(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tn := cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeLive}
	site := cloud.Site{ID: ids.New(ids.Site), Tenant: tn, Name: "HQ", Timezone: "Europe/London", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreateSite(ctx, site))
	visit := func(edit func(*cloud.Visit)) cloud.Visit {
		v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitExpected, Type: "meeting", SiteID: site.ID,
			CreatedAt: now, UpdatedAt: now}
		edit(&v)
		require.NoError(t, s.CreateVisit(ctx, v, cloud.VisitWrites{}))
		return v
	}
	at := func(d time.Duration) *time.Time { x := now.Add(d).Add(123456 * time.Microsecond); return &x }
	day := 24 * time.Hour
	in := []cloud.Visit{
		visit(func(v *cloud.Visit) { v.ExpectedAt, v.ExpectedUntil = at(-7*day-time.Hour), at(-7*day) }),
		visit(func(v *cloud.Visit) { v.Status, v.CheckedInAt = cloud.VisitCheckedIn, at(-2*day) }),
		visit(func(*cloud.Visit) {}),
	}
	out := []cloud.Visit{
		visit(func(v *cloud.Visit) { v.ExpectedAt, v.ExpectedUntil = at(-9*day-time.Hour), at(-9*day) }),
		visit(func(v *cloud.Visit) { v.Status, v.CheckedInAt = cloud.VisitCheckedIn, at(-10*day) }),
	}
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	for _, q := range []string{
		`DROP TABLE edge_facts`, `DROP TABLE edges`, `DROP TABLE enrolments`, `DROP TABLE enrolment_failures`, `DROP TABLE site_feed_cursors`, `DROP TABLE site_feed`,
		`DROP TABLE site_feed_heads`, `DROP INDEX visits_edge`, `ALTER TABLE visits DROP COLUMN edge_until`,
		// The later migrations of the tables 6 makes run again after it.
		`DELETE FROM schema_migrations WHERE version IN (6, 14, 19, 30, 43, 44)`,
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	s, err = sqlite.Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	defer s.Close()
	snap, err := s.SiteSnapshot(ctx, tn, site.ID, now)
	require.NoError(t, err)
	var got []string
	for _, v := range snap.Visits {
		got = append(got, v.ID)
	}
	require.ElementsMatch(t, []string{in[0].ID, in[1].ID, in[2].ID}, got, "left out: %s, %s", out[0].ID, out[1].ID)

	db, err = sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	for _, v := range append(in, out...) {
		var until sql.NullInt64
		require.NoError(t, db.QueryRowContext(ctx, `SELECT edge_until FROM visits WHERE id = ?`, v.ID).Scan(&until))
		want := cloud.EdgeUntil(v)
		if want == nil {
			require.False(t, until.Valid)
			continue
		}
		require.True(t, until.Valid)
		require.InDelta(t, want.UnixMicro(), until.Int64, 1000, "edge_until of %s to the millisecond", v.ID)
	}
}

// TestMigration10_PassIssuedAt takes a file back to before migration 10
// with people in it and checks the migration gave each a pass issued at
// their creation, cut to the second, as a person made after it gets.
func TestMigration10_PassIssuedAt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	tn := cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeLive}
	created := time.Date(2026, 5, 1, 12, 0, 7, 987654000, time.UTC)
	var people []cloud.Person
	for i, active := range []bool{true, false} {
		at := created.Add(time.Duration(i) * time.Hour)
		p := cloud.Person{ID: ids.New(ids.Person), Tenant: tn, Name: "P", Active: active, CreatedAt: at, UpdatedAt: at}
		require.NoError(t, s.CreatePerson(ctx, p))
		people = append(people, p)
	}
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	for _, q := range []string{`ALTER TABLE people DROP COLUMN pass_issued_at`, `DELETE FROM schema_migrations WHERE version = 10`} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	s, err = sqlite.Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	defer s.Close()
	for _, p := range people {
		got, err := s.Person(ctx, tn, p.ID)
		require.NoError(t, err)
		require.Equal(t, p.CreatedAt.Truncate(time.Second), got.PassIssuedAt)
	}
}

// TestMigration24_WaitReminders takes a file back to before migration 24
// with sites and visits in it, opens it again and checks the migration
// gave the site the default wait limit and filled remind_from from the
// documents: the waiting visits, one stored before waiting_since among
// them, are found overdue, the others not.
func TestMigration24_WaitReminders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tn := cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeLive}
	site := cloud.Site{ID: ids.New(ids.Site), Tenant: tn, Name: "HQ", Timezone: "Europe/London", WaitLimitMinutes: 30,
		CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreateSite(ctx, site))
	at := func(m int) *time.Time { x := now.Add(-time.Duration(m) * time.Minute); return &x }
	visit := func(edit func(*cloud.Visit)) string {
		v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitCheckedIn, Type: "meeting", SiteID: site.ID,
			NeedsSomeone: true, CreatedAt: now, UpdatedAt: now}
		edit(&v)
		require.NoError(t, s.CreateVisit(ctx, v, cloud.VisitWrites{}))
		return v.ID
	}
	waiting := visit(func(v *cloud.Visit) { v.CheckedInAt, v.WaitingSince = at(40), at(12) })
	legacy := visit(func(v *cloud.Visit) { v.CheckedInAt = at(11) })
	visit(func(v *cloud.Visit) { v.CheckedInAt, v.WaitingSince = at(9), at(9) }) // not yet
	visit(func(v *cloud.Visit) { v.CheckedInAt, v.WaitingSince, v.NeedsSomeone = at(20), at(20), false })
	visit(func(v *cloud.Visit) { v.Status, v.NeedsSomeone = cloud.VisitExpected, false })
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	for _, q := range []string{
		`DROP INDEX visits_remind`, `ALTER TABLE visits DROP COLUMN remind_from`,
		`ALTER TABLE sites DROP COLUMN wait_limit_minutes`, `DELETE FROM schema_migrations WHERE version = 24`,
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	s, err = sqlite.Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Site(ctx, tn, site.ID)
	require.NoError(t, err)
	require.Equal(t, cloud.DefaultWaitLimitMinutes, got.WaitLimitMinutes)
	due, err := s.OverdueWaits(ctx, now.Add(-cloud.WaitReminderHorizon), now, 10)
	require.NoError(t, err)
	var dueIDs []string
	for _, d := range due {
		dueIDs = append(dueIDs, d.VisitID)
	}
	require.Equal(t, []string{waiting, legacy}, dueIDs)
}

// TestReady_SchemaBehind takes the newest migration's row away under an
// open store (a file restored from before it): Ready says the schema is
// behind, and is ready again once the row is back.
func TestReady_SchemaBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Ready(ctx))

	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	defer db.Close()
	var newest, applied int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT version, applied_at FROM schema_migrations ORDER BY version DESC LIMIT 1`).Scan(&newest, &applied))
	_, err = db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = ?`, newest)
	require.NoError(t, err)
	require.ErrorIs(t, s.Ready(ctx), cloud.ErrSchemaBehind)

	_, err = db.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, newest, applied)
	require.NoError(t, err)
	require.NoError(t, s.Ready(ctx))
}
