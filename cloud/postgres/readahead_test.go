package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/shared/ids"
)

// roundTrips counts what the client sends the server: a statement on its
// own, or a batch (however many statements it holds).
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TestReadAhead_OneRoundTrip: the four reads that plan a visit, named to
// ReadAhead at the start of an Atomic call, go to the server in one round
// trip, BEGIN with them, and the reads themselves send nothing.
func TestReadAhead_OneRoundTrip(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	trips := &roundTrips{}
	cfg.ConnConfig.Tracer = trips
	s, err := postgres.OpenConfig(t.Context(), cfg, kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	ctx := t.Context()
	tn, site := orgWithSite(t, s)
	now := time.Now().UTC().Truncate(time.Microsecond)
	host := cloud.Person{ID: ids.New(ids.Person), Tenant: tn, Name: "Host", Email: "host@example.com", Active: true,
		PassIssuedAt: now, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreatePerson(ctx, host))
	vt := cloud.VisitType{Tenant: tn, Key: "meeting", Name: "Meeting", Enabled: true, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.PutVisitType(ctx, vt))

	err = s.Atomic(ctx, func(ctx context.Context) error {
		before := trips.n.Load()
		s.ReadAhead(ctx, tn, cloud.ReadsAhead{Site: site.ID, People: []string{host.ID}, VisitType: "meeting", VisitorEmail: "new@example.com"})
		require.Equal(t, int64(1), trips.n.Load()-before, "one round trip for the four reads and BEGIN")
		got, err := s.Site(ctx, tn, site.ID)
		require.NoError(t, err)
		require.Equal(t, site.Name, got.Name)
		people, err := s.People(ctx, tn, []string{host.ID})
		require.NoError(t, err)
		require.Len(t, people, 1)
		typ, err := s.VisitType(ctx, tn, "meeting")
		require.NoError(t, err)
		require.Equal(t, vt.Name, typ.Name)
		_, err = s.FindVisitor(ctx, tn, "new@example.com", "")
		require.ErrorIs(t, err, cloud.ErrNotFound)
		require.Equal(t, int64(1), trips.n.Load()-before, "the reads answered from what was read ahead")
		_, err = s.Site(ctx, tn, site.ID)
		require.NoError(t, err)
		require.Equal(t, int64(2), trips.n.Load()-before, "each answer once: the second read goes to the server")
		return nil
	})
	require.NoError(t, err)
}
