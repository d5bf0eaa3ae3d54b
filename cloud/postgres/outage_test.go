package postgres_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/poll"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/shared/ids"
)

// Outages at the store (docs/decisions.md, "Database outages (issue
// 15)"): whatever call meets a server that is gone, restarting or
// stalled returns, in time, an error wrapping cloud.ErrUnavailable.
// cloud/httpapi's outage tests show what requests answer meanwhile.

func newSite(t testing.TB, tn cloud.Tenant) cloud.Site {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return cloud.Site{ID: ids.New(ids.Site), Tenant: tn, Name: "Site", Timezone: "UTC", CreatedAt: now, UpdatedAt: now}
}

// orgWithSite makes a test-mode organisation with a site in s.
func orgWithSite(t testing.TB, s cloud.Store) (cloud.Tenant, cloud.Site) {
	t.Helper()
	tn := cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeTest}
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, s.CreateOrganisation(t.Context(), cloud.Organisation{ID: tn.OrgID, Name: "Org", Plan: cloud.PlanEnterprise, CreatedAt: now}))
	site := newSite(t, tn)
	require.NoError(t, s.CreateSite(t.Context(), site))
	return tn, site
}

// requireUnavailableCalls runs a read and a write within limit and
// requires both to fail with cloud.ErrUnavailable in time.
func requireUnavailableCalls(t *testing.T, s cloud.Store, tn cloud.Tenant, siteID string, ctxTimeout, limit time.Duration) {
	t.Helper()
	for name, call := range map[string]func(context.Context) error{
		"read":  func(ctx context.Context) error { _, err := s.Site(ctx, tn, siteID); return err },
		"write": func(ctx context.Context) error { return s.CreateSite(ctx, newSite(t, tn)) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), ctxTimeout)
		start := time.Now()
		err := call(ctx)
		cancel()
		require.ErrorIs(t, err, cloud.ErrUnavailable, name)
		require.Less(t, time.Since(start), limit, "%s: %v", name, err)
	}
}

func TestOutage_ServerStoppedAndRestarted(t *testing.T) {
	srv := postgrestest.NewServer(t)
	s, err := postgres.Open(context.Background(), srv.URL, kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	tn := cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeTest}
	site := newSite(t, tn)
	require.NoError(t, s.CreateSite(context.Background(), site))

	srv.Stop()
	// Connections refused: no need to wait for any deadline.
	requireUnavailableCalls(t, s, tn, site.ID, time.Minute, 5*time.Second)

	srv.Start()
	require.True(t, poll.Until(30*time.Second, 50*time.Millisecond, func() bool {
		_, err = s.Site(context.Background(), tn, site.ID)
		if err != nil {
			require.ErrorIs(t, err, cloud.ErrUnavailable, "until it is back")
		}
		return err == nil
	}), "still failing 30 s after the restart: %v", err)
	require.NoError(t, s.CreateSite(context.Background(), newSite(t, tn)))
}

func TestOutage_StalledConnection(t *testing.T) {
	base := postgrestest.URL(t)
	u, err := url.Parse(base)
	require.NoError(t, err)
	proxy := postgrestest.NewProxy(t, u.Host)
	u.Host = proxy.Addr
	s, err := postgrestest.OpenIn(t, u.String(), postgrestest.NewSchema(t, base))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	tn := cloud.Tenant{OrgID: ids.New(ids.Organisation), Mode: cloud.ModeTest}
	site := newSite(t, tn)
	require.NoError(t, s.CreateSite(context.Background(), site))

	proxy.Pause()
	// Nothing answers: each call gives up at its context's deadline.
	requireUnavailableCalls(t, s, tn, site.ID, time.Second, 5*time.Second)
	proxy.Resume()
	require.NoError(t, s.CreateSite(context.Background(), newSite(t, tn)))
}

// TestOpen_Timeouts: every connection the store opens has a statement
// timeout and gives up idle transactions, unless the URL says otherwise.
func TestOpen_Timeouts(t *testing.T) {
	base := postgrestest.URL(t)
	for _, tc := range []struct {
		url                 string
		statement, idleInTx string
	}{
		{base, "30s", "30s"},
		{base + sep(base) + "statement_timeout=1500", "1500ms", "30s"},
	} {
		s, err := postgrestest.OpenIn(t, tc.url, postgrestest.NewSchema(t, base))
		require.NoError(t, err)
		statement, err := s.Setting(context.Background(), "statement_timeout")
		require.NoError(t, err)
		idle, err := s.Setting(context.Background(), "idle_in_transaction_session_timeout")
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.Equal(t, tc.statement, statement, tc.url)
		require.Equal(t, tc.idleInTx, idle, tc.url)
	}
}

func sep(url string) string {
	for _, c := range url {
		if c == '?' {
			return "&"
		}
	}
	return "?"
}
