package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	msqlite "modernc.org/sqlite"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite/sqlitetest"
	"github.com/svc-vms/svc/shared/ids"
)

// siteVisits makes an organisation with a site in s and returns its live
// tenant, the time its rows carry, and a maker of new visits at the site,
// each with the new visitor to write with it.
func siteVisits(t *testing.T, s *Store) (cloud.Tenant, time.Time, func() (cloud.Visit, cloud.VisitWrites)) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	org := cloud.Organisation{ID: ids.New(ids.Organisation), Name: "Org", Plan: cloud.PlanPro, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreateOrganisation(ctx, org))
	tn := cloud.Tenant{OrgID: org.ID, Mode: cloud.ModeLive}
	site := cloud.Site{ID: ids.New(ids.Site), Tenant: tn, Name: "Site", Timezone: "Europe/London", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreateSite(ctx, site))
	return tn, now, func() (cloud.Visit, cloud.VisitWrites) {
		vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: tn, Name: "Ada", CreatedAt: now, UpdatedAt: now}
		return cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitExpected, Type: "meeting", SiteID: site.ID,
			VisitorID: vr.ID, CreatedAt: now, UpdatedAt: now}, cloud.VisitWrites{Visitor: &vr}
	}
}

// holdWriter starts an Atomic call that writes v and then holds the
// writer, and returns once it does: release lets the call commit, and
// done gives its error when it returns.
func holdWriter(ctx context.Context, s *Store, v cloud.Visit, w cloud.VisitWrites) (release func(), done <-chan error) {
	entered, let, errc := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		errc <- s.Atomic(ctx, func(ctx context.Context) error {
			if err := s.CreateVisit(ctx, v, w); err != nil {
				return err
			}
			close(entered)
			<-let
			return nil
		})
	}()
	select {
	case <-entered:
	case err := <-errc: // failed before it held the writer: done still gives the error
		errc <- err
	}
	return func() { close(let) }, errc
}

// TestAtomic_GroupCommit holds the writer in one Atomic call while two
// more wait for it, then lets them run: the three share one commit, the
// one that fails is rolled back to its savepoint alone, and no call
// returns before that commit.
func TestAtomic_GroupCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cloud.db")
	commits := sqlitetest.CommitCounter(path)
	s, err := Open(ctx, path, kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })

	tn, now, visit := siteVisits(t, s)
	v1, w1 := visit()
	v2, w2 := visit()
	v3, w3 := visit()
	m := cloud.Message{ID: ids.New(ids.Message), Tenant: tn, VisitID: v3.ID, Channel: cloud.ChannelEmail, To: "a@example.com",
		Subject: "s", Body: "b", Status: cloud.MessageQueued, CreatedAt: now}
	w3.Messages = []cloud.Message{m, m} // the second insert fails

	release, held := holdWriter(ctx, s, v1, w1)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	before := commits.Load()
	for i, vw := range []struct {
		v cloud.Visit
		w cloud.VisitWrites
	}{{v2, w2}, {v3, w3}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = s.Atomic(ctx, func(ctx context.Context) error { return s.CreateVisit(ctx, vw.v, vw.w) })
		}()
	}
	require.Eventually(t, func() bool { return len(s.writer.waiting) == 2 }, 10*time.Second, time.Millisecond,
		"both calls wait for the writer")
	require.Equal(t, before, commits.Load(), "nothing committed while the first call holds the writer")
	release()
	wg.Wait()
	errs[0] = <-held
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Error(t, errs[2])
	require.Equal(t, before+1, commits.Load(), "one commit for the three calls")
	for _, id := range []string{v1.ID, v2.ID} {
		_, err := s.Visit(ctx, tn, id)
		require.NoError(t, err)
	}
	_, err = s.Visit(ctx, tn, v3.ID)
	require.ErrorIs(t, err, cloud.ErrNotFound, "the failed call's writes are rolled back")
	_, err = s.Visitor(ctx, tn, w3.Visitor.ID)
	require.ErrorIs(t, err, cloud.ErrNotFound)
}

// cancel_once() ends the context waiting in cancels, if one is, and
// answers 1.
var (
	cancels            = make(chan context.CancelFunc, 1)
	registerCancelOnce sync.Once
)

// TestAtomic_CancelMidStatementFailsOnlyItsCall ends a call's context
// while its statement runs in the writer's transaction, which already
// holds another call's released writes: the statement runs to its end,
// the call fails at its next statement and rolls back its own savepoint,
// and the other call's writes commit. (Interrupted by SQLite instead, an
// INSERT inside a transaction rolls the whole transaction back, and both
// calls would fail.)
func TestAtomic_CancelMidStatementFailsOnlyItsCall(t *testing.T) {
	registerCancelOnce.Do(func() {
		msqlite.MustRegisterScalarFunction("cancel_once", 0, func(*msqlite.FunctionContext, []driver.Value) (driver.Value, error) {
			select {
			case cancel := <-cancels:
				cancel()
			default:
			}
			return int64(1), nil
		})
	})
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })

	tn, _, visit := siteVisits(t, s)
	v, w := visit()

	release, held := holdWriter(ctx, s, v, w)
	var second error
	var wg sync.WaitGroup
	wg.Add(1)
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	cancels <- cancel
	go func() {
		defer wg.Done()
		second = s.Atomic(cctx, func(ctx context.Context) error {
			return s.tx(ctx, func(tx *sql.Tx) error {
				// Enough rows after the cancel for SQLite's interrupt, were
				// it sent, to land while the INSERT runs.
				if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS scratch (i INTEGER)`); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO scratch WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
					SELECT i FROM n WHERE cancel_once() = 1`, 300000); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, `INSERT INTO scratch (i) VALUES (?)`, 0)
				return err
			})
		})
	}()
	require.Eventually(t, func() bool { return len(s.writer.waiting) == 1 }, 10*time.Second, time.Millisecond,
		"the second call waits for the writer")
	release()
	wg.Wait()
	require.NoError(t, <-held, "the first call's writes commit")
	require.ErrorIs(t, second, context.Canceled)
	_, err = s.Visit(ctx, tn, v.ID)
	require.NoError(t, err)
	var n int
	require.NoError(t, s.w.QueryRowContext(ctx, `SELECT count(*) FROM temp.sqlite_master WHERE name = 'scratch'`).Scan(&n))
	require.Zero(t, n, "the cancelled call's savepoint is rolled back, its table with it")
}
