package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite/sqlitetest"
	"github.com/svc-vms/svc/shared/ids"
)

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

	now := time.Now().UTC().Truncate(time.Microsecond)
	org := cloud.Organisation{ID: ids.New(ids.Organisation), Name: "Org", Plan: cloud.PlanPro, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreateOrganisation(ctx, org))
	tn := cloud.Tenant{OrgID: org.ID, Mode: cloud.ModeLive}
	site := cloud.Site{ID: ids.New(ids.Site), Tenant: tn, Name: "Site", Timezone: "Europe/London", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreateSite(ctx, site))
	visit := func() (cloud.Visit, cloud.VisitWrites) {
		vr := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: tn, Name: "Ada", CreatedAt: now, UpdatedAt: now}
		return cloud.Visit{ID: ids.New(ids.Visit), Tenant: tn, Status: cloud.VisitExpected, Type: "meeting", SiteID: site.ID,
			VisitorID: vr.ID, CreatedAt: now, UpdatedAt: now}, cloud.VisitWrites{Visitor: &vr}
	}
	v1, w1 := visit()
	v2, w2 := visit()
	v3, w3 := visit()
	m := cloud.Message{ID: ids.New(ids.Message), Tenant: tn, VisitID: v3.ID, Channel: cloud.ChannelEmail, To: "a@example.com",
		Subject: "s", Body: "b", Status: cloud.MessageQueued, CreatedAt: now}
	w3.Messages = []cloud.Message{m, m} // the second insert fails

	entered, release := make(chan struct{}), make(chan struct{})
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[0] = s.Atomic(ctx, func(ctx context.Context) error {
			if err := s.CreateVisit(ctx, v1, w1); err != nil {
				return err
			}
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
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
	close(release)
	wg.Wait()
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
