package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/shared/ids"
)

// TestAtomic_ContextEndedInTheCommitBatchCommitsNothing: a write whose
// commit batch waits for a site's feed head (another transaction holds
// its row) and whose context ends in the wait fails, and nothing of it
// commits once the wait is over: the call stops its batch (stopCommit)
// before it returns. Unstopped, PostgreSQL ran the COMMIT queued behind
// the wait when the lock was released, and committed the visit and its
// stored reply after the call had reported failure.
func TestAtomic_ContextEndedInTheCommitBatchCommitsNothing(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	s, err := postgrestest.OpenIn(t, url, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	tn, site := orgWithSite(t, s)
	now := time.Now().UTC().Truncate(time.Microsecond)
	visit := func() (cloud.Visit, cloud.VisitWrites) {
		vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: tn, Name: "Ada", Email: ids.New("x") + "@example.com", CreatedAt: now, UpdatedAt: now}
		v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitExpected, Type: "meeting", SiteID: site.ID,
			VisitorID: vr.ID, CreatedAt: now, UpdatedAt: now}
		return v, cloud.VisitWrites{Visitor: &vr}
	}
	v0, w0 := visit()
	require.NoError(t, s.CreateVisit(ctx, v0, w0)) // the site's feed head row

	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["search_path"] = schema
	holder, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close(context.Background()) })
	var holderPID int
	require.NoError(t, holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holderPID))
	blockedBy := func() (pids []int) {
		rows, err := holder.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holderPID)
		require.NoError(t, err)
		pids, err = pgx.CollectRows(rows, pgx.RowTo[int])
		require.NoError(t, err)
		return pids
	}
	alive := func(pid int) bool {
		var n int
		require.NoError(t, holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n))
		return n > 0
	}

	for attempt := range 8 {
		tx, err := holder.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT 1 FROM site_feed_heads WHERE site_id = $1 FOR UPDATE`, site.ID)
		require.NoError(t, err)

		v, w := visit()
		rec := cloud.IdempotencyRecord{Tenant: tn, Key: fmt.Sprintf("00000000-0000-4000-8000-%012d", attempt), Fingerprint: []byte("fp"),
			Method: "POST", Path: "/v1/visits", RequestID: ids.New(ids.Request), CreatedAt: now,
			Response: cloud.StoredResponse{Status: 201, Header: map[string]string{}, Body: []byte(`{}`)}}
		reply := cloud.NewReply(rec)
		reply.Set(rec.Response)
		callCtx, cancel := context.WithCancel(cloud.WithReply(context.Background(), reply))
		done := make(chan error, 1)
		go func() {
			done <- s.Atomic(callCtx, func(ctx context.Context) error { return s.CreateVisit(ctx, v, w) })
		}()
		var waiting []int
		require.Eventually(t, func() bool { waiting = blockedBy(); return len(waiting) == 1 }, 10*time.Second, time.Millisecond,
			"the call's commit batch waits for the feed head")
		cancel()
		require.Error(t, <-done, "attempt %d: the call failed", attempt)
		require.False(t, reply.Stored())

		require.NoError(t, tx.Rollback(ctx)) // the wait ends
		require.Eventually(t, func() bool { return !alive(waiting[0]) }, 10*time.Second, time.Millisecond,
			"the dropped connection's backend ends")
		_, err = s.Visit(ctx, tn, v.ID)
		require.ErrorIs(t, err, cloud.ErrNotFound, "attempt %d: the call reported failure and its visit committed after", attempt)
		_, err = s.IdempotencyRecord(ctx, tn, rec.Key, now.Add(-time.Hour))
		require.ErrorIs(t, err, cloud.ErrNotFound, "attempt %d: its reply committed after", attempt)
	}
}

// TestAtomic_DeferredVisitRows: inside Atomic, CreateVisit's rows go with
// the call's next statement (pipeTx.deferWrites). A read later in the call
// sees them; a failure of theirs fails the call, also when fn goes on past
// the read it surfaced at, and nothing of the call commits.
func TestAtomic_DeferredVisitRows(t *testing.T) {
	url := postgrestest.URL(t)
	s, err := postgrestest.OpenIn(t, url, postgrestest.NewSchema(t, url))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	tn, site := orgWithSite(t, s)
	now := time.Now().UTC().Truncate(time.Microsecond)
	visit := func(siteID string) (cloud.Visit, cloud.VisitWrites) {
		vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: tn, Name: "Ada", CreatedAt: now, UpdatedAt: now}
		return cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitExpected, Type: "meeting", SiteID: siteID,
			VisitorID: vr.ID, CreatedAt: now, UpdatedAt: now}, cloud.VisitWrites{Visitor: &vr}
	}

	v, w := visit(site.ID)
	require.NoError(t, s.Atomic(ctx, func(ctx context.Context) error {
		if err := s.CreateVisit(ctx, v, w); err != nil {
			return err
		}
		got, err := s.Visit(ctx, tn, v.ID)
		require.NoError(t, err, "the call reads its own visit back")
		require.Equal(t, v.ID, got.ID)
		return nil
	}))
	_, err = s.Visit(ctx, tn, v.ID)
	require.NoError(t, err, "committed")

	for _, readAfter := range []bool{false, true} {
		bad, bw := visit(site.ID)
		bad.ID = v.ID // the visit's primary key is taken: its insert fails
		err := s.Atomic(ctx, func(ctx context.Context) error {
			require.NoError(t, s.CreateVisit(ctx, bad, bw), "the rows are not sent yet")
			if readAfter {
				_, err := s.Site(ctx, tn, site.ID)
				require.ErrorIs(t, err, cloud.ErrConflict, "the deferred rows' failure, at the next statement")
			}
			return nil // fn ignores it
		})
		require.ErrorIs(t, err, cloud.ErrConflict, "read after: %v", readAfter)
		_, err = s.Visitor(ctx, tn, bw.Visitor.ID)
		require.ErrorIs(t, err, cloud.ErrNotFound, "nothing of the call committed")
	}
}
