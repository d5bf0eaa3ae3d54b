package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
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
// writer, and returns once it does: release lets the call commit, done
// gives its error when it returns, and runs counts how often its function
// ran. A safe call writes in a savepoint, as a call run again does.
func holdWriter(ctx context.Context, s *Store, v cloud.Visit, w cloud.VisitWrites, safe bool) (release func(), done <-chan error, runs *atomic.Int32) {
	entered, let, errc := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	runs = new(atomic.Int32)
	fn := func(ctx context.Context) error {
		runs.Add(1)
		if err := s.CreateVisit(ctx, v, w); err != nil {
			return err
		}
		once.Do(func() { close(entered) })
		<-let
		return nil
	}
	go func() {
		if safe {
			errc <- s.atomic(ctx, fn, true)
		} else {
			errc <- s.Atomic(ctx, fn)
		}
	}()
	select {
	case <-entered:
	case err := <-errc: // failed before it held the writer: done still gives the error
		errc <- err
	}
	return func() { close(let) }, errc, runs
}

// groupOf holds the writer with a call writing the first of vws (safe or
// not), starts an Atomic call for each of the others, waits until they
// all wait for the writer, and lets them go: it returns each call's
// error, how many commits the file made meanwhile, and how often the
// first call's function ran.
func groupOf(t *testing.T, s *Store, commits *atomic.Int64, safe bool, vws ...visitWrites) ([]error, int64, int32) {
	t.Helper()
	ctx := context.Background()
	release, held, runs := holdWriter(ctx, s, vws[0].v, vws[0].w, safe)
	errs := make([]error, len(vws))
	var wg sync.WaitGroup
	before := commits.Load()
	for i, vw := range vws[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = s.Atomic(ctx, func(ctx context.Context) error {
				if vw.fn != nil {
					return vw.fn(ctx)
				}
				return s.CreateVisit(ctx, vw.v, vw.w)
			})
		}()
	}
	require.Eventually(t, func() bool { return len(s.writer.waiting) == len(vws)-1 }, 10*time.Second, time.Millisecond,
		"the calls wait for the writer")
	require.Equal(t, before, commits.Load(), "nothing committed while the first call holds the writer")
	release()
	wg.Wait()
	errs[0] = <-held
	return errs, commits.Load() - before, runs.Load()
}

// visitWrites is a visit and its writes for groupOf, or a function to
// run instead.
type visitWrites struct {
	v  cloud.Visit
	w  cloud.VisitWrites
	fn func(context.Context) error
}

// groupStore opens a store in a new file, with a counter of its commits
// and a maker of new visits.
func groupStore(t *testing.T) (*Store, *atomic.Int64, cloud.Tenant, time.Time, func() visitWrites) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.db")
	commits := sqlitetest.CommitCounter(path)
	s, err := Open(context.Background(), path, kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	tn, now, visit := siteVisits(t, s)
	return s, commits, tn, now, func() visitWrites {
		v, w := visit()
		return visitWrites{v: v, w: w}
	}
}

// failing makes vw's writes fail after its visit and first message are
// written: the same message twice.
func failing(vw visitWrites, tn cloud.Tenant, now time.Time) visitWrites {
	m := cloud.Message{ID: ids.New(ids.Message), Tenant: tn, VisitID: vw.v.ID, Channel: cloud.ChannelEmail, To: "a@example.com",
		Subject: "s", Body: "b", Status: cloud.MessageQueued, CreatedAt: now}
	vw.w.Messages = []cloud.Message{m, m}
	return vw
}

func requireVisits(t *testing.T, s *Store, tn cloud.Tenant, present []visitWrites, absent ...visitWrites) {
	t.Helper()
	ctx := context.Background()
	for _, vw := range present {
		_, err := s.Visit(ctx, tn, vw.v.ID)
		require.NoError(t, err)
	}
	for _, vw := range absent {
		_, err := s.Visit(ctx, tn, vw.v.ID)
		require.ErrorIs(t, err, cloud.ErrNotFound, "the failed call's writes are rolled back")
		_, err = s.Visitor(ctx, tn, vw.w.Visitor.ID)
		require.ErrorIs(t, err, cloud.ErrNotFound)
	}
}

// TestAtomic_GroupCommit holds the writer in one Atomic call while two
// more wait for it, then lets them run: the three share one commit, no
// call returns before it, and each call's function runs once.
func TestAtomic_GroupCommit(t *testing.T) {
	s, commits, tn, _, visit := groupStore(t)
	vws := []visitWrites{visit(), visit(), visit()}
	errs, n, runs := groupOf(t, s, commits, false, vws...)
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, int64(1), n, "one commit for the three calls")
	require.Equal(t, int32(1), runs)
	requireVisits(t, s, tn, vws)
}

// TestAtomic_FailedCallRunsItsBatchMatesAgain: a call that fails after
// writing, with no savepoint, rolls back the transaction that holds an
// earlier call's released writes; that call runs again, alone, and
// commits; nothing of the failed call is left.
func TestAtomic_FailedCallRunsItsBatchMatesAgain(t *testing.T) {
	s, commits, tn, now, visit := groupStore(t)
	first, bad := visit(), failing(visit(), tn, now)
	errs, n, runs := groupOf(t, s, commits, false, first, bad)
	require.NoError(t, errs[0])
	require.Error(t, errs[1])
	require.NotErrorIs(t, errs[1], errBatchRolledBack, "the failed call reports its own failure")
	require.Equal(t, int32(2), runs, "the first call runs again")
	require.Equal(t, int64(1), n, "one commit: the first call's second run")
	requireVisits(t, s, tn, []visitWrites{first}, bad)
}

// TestAtomic_SafeBatchRollsBackTheFailedCallAlone: in a batch a safe call
// began (one run again), every call writes in a savepoint, so a call that
// fails rolls back to its own and the others commit, each run once.
func TestAtomic_SafeBatchRollsBackTheFailedCallAlone(t *testing.T) {
	s, commits, tn, now, visit := groupStore(t)
	first, second, bad := visit(), visit(), failing(visit(), tn, now)
	errs, n, runs := groupOf(t, s, commits, true, first, second, bad)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Error(t, errs[2])
	require.Equal(t, int32(1), runs, "no call runs again")
	require.Equal(t, int64(1), n, "one commit for the three calls")
	requireVisits(t, s, tn, []visitWrites{first, second}, bad)
}

// TestAtomic_SafeAfterARollback: once a failed call has rolled back
// others' writes, the batches after it are safe for a while (an hour
// here): a failure in the next one rolls back its own savepoint and runs
// no call again.
func TestAtomic_SafeAfterARollback(t *testing.T) {
	s, commits, tn, now, visit := groupStore(t)
	s.writer.safeFor = time.Hour
	first, bad := visit(), failing(visit(), tn, now)
	_, _, runs := groupOf(t, s, commits, false, first, bad)
	require.Equal(t, int32(2), runs, "the first rollback runs its batch-mate again")

	next, second, bad2 := visit(), visit(), failing(visit(), tn, now)
	errs, n, runs := groupOf(t, s, commits, false, next, second, bad2)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Error(t, errs[2])
	require.Equal(t, int32(1), runs, "no call runs again")
	require.Equal(t, int64(1), n)
	requireVisits(t, s, tn, []visitWrites{first, next, second}, bad, bad2)
}

// TestAtomic_LoneFailureRollsBackBeforeTheNextCall: a call that fails
// after writing, with no other call's writes in the transaction, rolls
// the transaction back before the call waiting for the writer gets it:
// that call commits alone, and nothing of the failed one with it.
func TestAtomic_LoneFailureRollsBackBeforeTheNextCall(t *testing.T) {
	s, commits, tn, _, visit := groupStore(t)
	ctx := context.Background()
	bad, next := visit(), visit()
	failed := errors.New("failed after writing")
	entered, let, badErr := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		badErr <- s.Atomic(ctx, func(ctx context.Context) error {
			if err := s.CreateVisit(ctx, bad.v, bad.w); err != nil {
				return err
			}
			close(entered)
			<-let
			return failed
		})
	}()
	select {
	case <-entered:
	case err := <-badErr:
		t.Fatalf("the first call failed before holding the writer: %v", err)
	}
	before := commits.Load()
	nextErr := make(chan error, 1)
	go func() {
		nextErr <- s.Atomic(ctx, func(ctx context.Context) error { return s.CreateVisit(ctx, next.v, next.w) })
	}()
	require.Eventually(t, func() bool { return len(s.writer.waiting) == 1 }, 10*time.Second, time.Millisecond,
		"the next call waits for the writer")
	close(let)
	require.ErrorIs(t, <-badErr, failed)
	require.NoError(t, <-nextErr)
	require.Equal(t, int64(1), commits.Load()-before)
	requireVisits(t, s, tn, []visitWrites{next}, bad)
}

// TestAtomic_FailureWithoutWritesKeepsItsBatch: a call that takes the
// writer and fails before changing a row (as a transition refused on the
// visit it read) leaves the transaction as it found it: the calls before
// it commit, run once.
func TestAtomic_FailureWithoutWritesKeepsItsBatch(t *testing.T) {
	s, commits, tn, _, visit := groupStore(t)
	first := visit()
	refused := errors.New("refused")
	reader := visitWrites{fn: func(ctx context.Context) error {
		return s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM visits`).Scan(&n); err != nil {
				return err
			}
			return refused
		})
	}}
	errs, n, runs := groupOf(t, s, commits, false, first, reader)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], refused)
	require.Equal(t, int32(1), runs, "the first call is not run again")
	require.Equal(t, int64(1), n)
	requireVisits(t, s, tn, []visitWrites{first})
}

// TestAtomic_ConstraintFailureKeepsItsBatch: a call whose first write
// fails on a unique key changed no row (SQLite undoes a statement that
// fails on a constraint), so the calls before it commit, run once.
func TestAtomic_ConstraintFailureKeepsItsBatch(t *testing.T) {
	s, commits, tn, _, visit := groupStore(t)
	first := visit()
	again := first
	again.w = cloud.VisitWrites{} // the same visit again, without its new visitor: the visit's own key fails
	errs, n, runs := groupOf(t, s, commits, false, first, again)
	require.NoError(t, errs[0])
	require.Error(t, errs[1])
	require.NotErrorIs(t, errs[1], errBatchRolledBack)
	require.Equal(t, int32(1), runs, "the first call is not run again")
	require.Equal(t, int64(1), n)
	requireVisits(t, s, tn, []visitWrites{first})
}

// cancel_once() ends the context waiting in cancels, if one is, and
// answers 1.
var (
	cancels            = make(chan context.CancelFunc, 1)
	registerCancelOnce sync.Once
)

// TestAtomic_CancelMidStatementFailsOnlyItsCall ends a call's context
// while its statement runs in the writer's transaction, which already
// holds another call's released writes, in a batch a safe call began (so
// every call in it has a savepoint): the statement runs to its end, the
// call fails at its next statement and rolls back its own savepoint, and
// the other call's writes commit. (Interrupted by SQLite instead, an
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

	release, held, runs := holdWriter(ctx, s, v, w, true)
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
	require.Equal(t, int32(1), runs.Load(), "the first call ran once")
	require.ErrorIs(t, second, context.Canceled)
	_, err = s.Visit(ctx, tn, v.ID)
	require.NoError(t, err)
	var n int
	require.NoError(t, s.w.QueryRowContext(ctx, `SELECT count(*) FROM temp.sqlite_master WHERE name = 'scratch'`).Scan(&n))
	require.Zero(t, n, "the cancelled call's savepoint is rolled back, its table with it")
}

// TestAtomic_ReplyRenderedAgainIsStoredAsRendered: a call seals the reply
// its request rendered before it takes the writer; when the response is
// rendered again after that (an update renders inside the store's
// function), with another body or other headers, the record stored holds
// the response as it was last rendered, not the one sealed early.
func TestAtomic_ReplyRenderedAgainIsStoredAsRendered(t *testing.T) {
	s, _, tn, now, visit := groupStore(t)
	ctx := context.Background()
	early := cloud.StoredResponse{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"early":true}`)}
	for name, late := range map[string]cloud.StoredResponse{
		"body":   {Status: 200, Header: early.Header, Body: []byte(`{"late":true}`)},
		"header": {Status: 200, Header: map[string]string{"Content-Type": "application/json", "Etag": `"2"`}, Body: early.Body},
	} {
		t.Run(name, func(t *testing.T) {
			vw := visit()
			require.NoError(t, s.CreateVisit(ctx, vw.v, vw.w))
			rec := cloud.IdempotencyRecord{Tenant: tn, Key: name, Fingerprint: []byte{1}, Method: "PATCH", Path: "/v1/visits/" + vw.v.ID,
				RequestID: ids.New(ids.Request), CreatedAt: now, Response: early}
			r := cloud.NewReply(rec)
			r.Set(early)
			err := s.Atomic(cloud.WithReply(ctx, r), func(ctx context.Context) error {
				_, err := s.UpdateVisit(ctx, tn, vw.v.ID, func(v *cloud.Visit, _ *cloud.VisitWrites) error {
					v.UpdatedAt = now.Add(time.Second)
					r.Set(late)
					return nil
				})
				return err
			})
			require.NoError(t, err)
			got, err := s.IdempotencyRecord(ctx, tn, name, now.Add(-time.Hour))
			require.NoError(t, err)
			require.Equal(t, late, got.Response)
		})
	}
}

// TestAtomic_FeedStaysContiguousAfterASavepointRollback: in a batch a
// safe call began, a call that appended to the site's feed and then
// failed rolls back to its savepoint, taking its sequence back; the next
// call's change takes that sequence, so the feed has no gap and its head
// is its last row.
func TestAtomic_FeedStaysContiguousAfterASavepointRollback(t *testing.T) {
	s, commits, tn, _, visit := groupStore(t)
	ctx := context.Background()
	first, second, last := visit(), visit(), visit()
	after := errors.New("failed after its writes")
	undone := visitWrites{v: second.v, w: second.w, fn: func(ctx context.Context) error {
		if err := s.CreateVisit(ctx, second.v, second.w); err != nil {
			return err
		}
		return after
	}}
	errs, n, _ := groupOf(t, s, commits, true, first, undone, last)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], after)
	require.NoError(t, errs[2])
	require.Equal(t, int64(1), n)
	requireVisits(t, s, tn, []visitWrites{first, last}, second)

	site := first.v.SiteID
	seqs, err := all(ctx, s.w, func(r scanner) (int64, error) {
		var seq int64
		err := r.Scan(&seq)
		return seq, err
	}, `SELECT seq FROM site_feed WHERE org_id = ? AND mode = ? AND site_id = ? ORDER BY seq`, tn.OrgID, string(tn.Mode), site)
	require.NoError(t, err)
	require.NotEmpty(t, seqs)
	for i, seq := range seqs {
		require.Equal(t, int64(i+1), seq, "the feed's sequences run without a gap: %v", seqs)
	}
	var head int64
	require.NoError(t, s.w.QueryRowContext(ctx, `SELECT seq FROM site_feed_heads WHERE org_id = ? AND mode = ? AND site_id = ?`,
		tn.OrgID, string(tn.Mode), site).Scan(&head))
	require.Equal(t, seqs[len(seqs)-1], head)
}

// TestAtomic_PanicInAWriteGivesTheTurnBack: a call that panics after its
// first write (a bug in a write's callback; the server's recover turns it
// into a 500 and goes on) gives the writer's turn back, undoing its
// writes as a failure would: the call whose writes it shared a
// transaction with is run again and commits, and later writes go on. It
// kept the turn, with the transaction open, and both waited for ever.
func TestAtomic_PanicInAWriteGivesTheTurnBack(t *testing.T) {
	s, _, tn, _, visit := groupStore(t)
	ctx := context.Background()
	first, bad, next := visit(), visit(), visit()

	// first holds the writer until bad waits behind it, so that its
	// writes are released into the transaction bad then writes in.
	release, firstDone, runs := holdWriter(ctx, s, first.v, first.w, false)
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = s.Atomic(ctx, func(ctx context.Context) error {
			if err := s.CreateVisit(ctx, bad.v, bad.w); err != nil {
				return err
			}
			panic("a bug after the write")
		})
	}()
	require.Eventually(t, func() bool { return len(s.writer.waiting) == 1 }, 10*time.Second, time.Millisecond)
	release()
	require.Equal(t, "a bug after the write", <-panicked, "the panic goes on up")

	select {
	case err := <-firstDone:
		require.NoError(t, err)
		require.Equal(t, int32(2), runs.Load(), "the call sharing the transaction ran again")
	case <-time.After(10 * time.Second):
		t.Fatal("the call sharing the transaction never returned")
	}
	nextDone := make(chan error, 1)
	go func() {
		nextDone <- s.Atomic(ctx, func(ctx context.Context) error { return s.CreateVisit(ctx, next.v, next.w) })
	}()
	select {
	case err := <-nextDone:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a later write waits for ever: the panicking call kept the writer's turn")
	}
	requireVisits(t, s, tn, []visitWrites{first, next}, bad)
}

// endsAfterFirstCheck is a context whose Err is nil the first time it is
// asked (writer.take's check once the call has the turn) and Canceled
// after: a request's deadline passing just after the call took the
// writer, before its first statement.
type endsAfterFirstCheck struct {
	context.Context
	asked atomic.Int32
}

func (c *endsAfterFirstCheck) Err() error {
	if c.asked.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

// TestAtomic_ContextEndedBeforeTheSavepointFailsTheCallAlone: a call in a
// savepoint (a store write outside Atomic, or any call for a second after
// a rollback) whose context ends once it has the writer's turn has
// written nothing: it fails at its first statement, alone. Its SAVEPOINT
// ran on that context, failed, and poisoned the batch: the call sharing
// the transaction was rolled back and failed with it.
func TestAtomic_ContextEndedBeforeTheSavepointFailsTheCallAlone(t *testing.T) {
	s, _, tn, _, visit := groupStore(t)
	ctx := context.Background()
	first := visit()

	release, firstDone, _ := holdWriter(ctx, s, first.v, first.w, false)
	ended := &endsAfterFirstCheck{Context: ctx}
	safeErr := make(chan error, 1)
	go func() {
		safeErr <- s.tx(ended, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ended, `UPDATE organisations SET name = name WHERE id = ?`, tn.OrgID)
			return err
		})
	}()
	require.Eventually(t, func() bool { return len(s.writer.waiting) == 1 }, 10*time.Second, time.Millisecond)
	release()
	require.ErrorIs(t, <-safeErr, context.Canceled)
	require.NoError(t, <-firstDone, "the call sharing the transaction commits")
	requireVisits(t, s, tn, []visitWrites{first})
}
