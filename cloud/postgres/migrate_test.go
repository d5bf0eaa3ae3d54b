package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/shared/ids"
)

// TestMigration6_FillsEdgeUntil takes a schema back to before migration 6
// with visits in it, opens it again and checks the migration filled their
// edge_until from the documents, exactly as visits written after it get it.
func TestMigration6_FillsEdgeUntil(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	ctx := context.Background()
	s, err := postgrestest.OpenIn(t, url, schema)
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
	_ = s.Close()

	for _, q := range []string{
		`DROP TABLE edge_updates, release_chunks, releases, rollouts`,
		`DROP TABLE edge_facts, edges, site_feed_cursors, site_feed, site_feed_heads, enrolments, enrolment_failures`,
		`ALTER TABLE visits DROP COLUMN edge_until`,
		// The later migrations of the tables 6 makes run again after it
		// (40's tables refer to edges).
		`DELETE FROM schema_migrations WHERE version IN (6, 14, 19, 30, 40, 43, 44)`,
	} {
		postgrestest.Exec(t, url, `SET search_path TO `+schema+`; `+q)
	}

	s, err = postgrestest.OpenIn(t, url, schema)
	require.NoError(t, err)
	defer s.Close()
	snap, err := s.SiteSnapshot(ctx, tn, site.ID, now)
	require.NoError(t, err)
	var got []string
	for _, v := range snap.Visits {
		got = append(got, v.ID)
	}
	require.ElementsMatch(t, []string{in[0].ID, in[1].ID, in[2].ID}, got, "left out: %s, %s", out[0].ID, out[1].ID)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, v := range append(in, out...) {
		var until *time.Time
		require.NoError(t, conn.QueryRow(ctx, `SELECT edge_until FROM `+schema+`.visits WHERE id = $1`, v.ID).Scan(&until))
		want := cloud.EdgeUntil(v)
		if want == nil {
			require.Nil(t, until)
			continue
		}
		require.NotNil(t, until)
		require.True(t, want.Equal(*until), "edge_until of %s: %v, want %v", v.ID, until, want)
	}
}

// TestMigration10_PassIssuedAt takes a schema back to before migration 10
// with people in it and checks the migration gave each a pass issued at
// their creation, cut to the second, as a person made after it gets.
func TestMigration10_PassIssuedAt(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	ctx := context.Background()
	s, err := postgrestest.OpenIn(t, url, schema)
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
	_ = s.Close()
	for _, q := range []string{`ALTER TABLE people DROP COLUMN pass_issued_at`, `DELETE FROM schema_migrations WHERE version = 10`} {
		postgrestest.Exec(t, url, `SET search_path TO `+schema+`; `+q)
	}

	s, err = postgrestest.OpenIn(t, url, schema)
	require.NoError(t, err)
	defer s.Close()
	for _, p := range people {
		got, err := s.Person(ctx, tn, p.ID)
		require.NoError(t, err)
		require.Equal(t, p.CreatedAt.Truncate(time.Second), got.PassIssuedAt)
	}
}

// TestMigration24_WaitReminders takes a schema back to before migration
// 24 with sites and visits in it, opens it again and checks the migration
// gave the site the default wait limit and filled remind_from from the
// documents: the waiting visits, one stored before waiting_since among
// them, are found overdue, the others not.
func TestMigration24_WaitReminders(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	ctx := context.Background()
	s, err := postgrestest.OpenIn(t, url, schema)
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
	_ = s.Close()

	for _, q := range []string{
		`DROP INDEX visits_remind`, `ALTER TABLE visits DROP COLUMN remind_from`,
		`ALTER TABLE sites DROP COLUMN wait_limit_minutes`, `DELETE FROM schema_migrations WHERE version = 24`,
	} {
		postgrestest.Exec(t, url, `SET search_path TO `+schema+`; `+q)
	}

	s, err = postgrestest.OpenIn(t, url, schema)
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
// open store (a database restored from before it): Ready says the schema
// is behind, and is ready again once the row is back.
func TestReady_SchemaBehind(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	ctx := context.Background()
	s, err := postgrestest.OpenIn(t, url, schema)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Ready(ctx))

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var newest int
	require.NoError(t, conn.QueryRow(ctx, `SELECT max(version) FROM `+schema+`.schema_migrations`).Scan(&newest))
	_, err = conn.Exec(ctx, `DELETE FROM `+schema+`.schema_migrations WHERE version = $1`, newest)
	require.NoError(t, err)
	require.ErrorIs(t, s.Ready(ctx), cloud.ErrSchemaBehind)

	_, err = conn.Exec(ctx, `INSERT INTO `+schema+`.schema_migrations (version) VALUES ($1)`, newest)
	require.NoError(t, err)
	require.NoError(t, s.Ready(ctx))
}
