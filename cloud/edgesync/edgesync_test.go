package edgesync_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/edgesync"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/mqttsync"
	"github.com/svc-vms/svc/sync/protocol"
)

type env struct {
	svc    *cloud.Service
	tenant cloud.Tenant
	site   protocol.Site
	gate   string
	edge   cloud.Edge
	secret string
}

func newEnv(t *testing.T) env {
	t.Helper()
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	svc := cloud.NewService(store, time.Now)
	res, err := svc.Seed(t.Context(), "Acme", cloud.PlanPro)
	require.NoError(t, err)
	tn := cloud.Tenant{OrgID: res.Organisation.ID, Mode: cloud.ModeTest}
	site := res.Test.Sites[0]
	e, secret, err := svc.CreateEdge(t.Context(), tn, site.ID, "")
	require.NoError(t, err)
	return env{svc: svc, tenant: tn, site: cloud.EdgeSite(tn, site.ID), gate: site.Gates[0], edge: e, secret: secret}
}

func TestAuthenticator(t *testing.T) {
	e := newEnv(t)
	pass, err := edgesync.CloudPassword(t.Context(), e.svc)
	require.NoError(t, err)
	again, err := edgesync.CloudPassword(t.Context(), e.svc)
	require.NoError(t, err)
	require.Equal(t, pass, again, "every process sharing the store agrees on it")
	auth := edgesync.Authenticator(e.svc, pass)

	acc, err := auth.Authenticate(t.Context(), edgesync.CloudUsername, pass)
	require.NoError(t, err)
	require.Equal(t, broker.Access{Cloud: true}, acc)
	acc, err = auth.Authenticate(t.Context(), e.edge.Username, e.secret)
	require.NoError(t, err)
	require.Equal(t, broker.Access{Site: e.site, EdgeID: e.edge.ID}, acc)

	for _, c := range [][2]string{
		{edgesync.CloudUsername, pass + "x"},
		{edgesync.CloudUsername, ""},
		{e.edge.Username, pass},
		{e.edge.Username, e.secret + "x"},
		{ids.New(ids.Edge), e.secret},
	} {
		_, err := auth.Authenticate(t.Context(), c[0], c[1])
		require.ErrorIs(t, err, cloud.ErrUnauthorized, "%q", c)
	}
}

// The service's refusals are the cloud half's ErrRejected, so a fact the
// cloud can never apply stays in its edge's outbox; an applied one is nil
// every time.
func TestStore_ApplyFact(t *testing.T) {
	e := newEnv(t)
	s := edgesync.Store{Service: e.svc}
	f := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactRefused, EdgeID: e.edge.ID, Counter: 1,
		At: time.Now().UTC().Truncate(time.Microsecond), GateID: e.gate, Reason: protocol.ReasonInvalidToken}
	require.NoError(t, s.ApplyFact(t.Context(), e.site, f))
	require.NoError(t, s.ApplyFact(t.Context(), e.site, f), "applied before")

	stranger := f
	stranger.ID, stranger.EdgeID = ids.New(ids.Fact), ids.New(ids.Edge)
	require.ErrorIs(t, s.ApplyFact(t.Context(), e.site, stranger), mqttsync.ErrRejected)
	elsewhere := e.site
	elsewhere.SiteID = ids.New(ids.Site)
	f.ID = ids.New(ids.Fact)
	require.ErrorIs(t, s.ApplyFact(t.Context(), elsewhere, f), mqttsync.ErrRejected)
	_, err := e.svc.Store().EdgeFact(t.Context(), e.tenant, f.ID)
	require.ErrorIs(t, err, cloud.ErrNotFound, "a rejected fact is not recorded")

	st := protocol.Status{EdgeID: ids.New(ids.Edge), State: "online", At: f.At}
	require.ErrorIs(t, s.EdgeStatus(t.Context(), e.site, st), mqttsync.ErrRejected)
	st.EdgeID = e.edge.ID
	require.NoError(t, s.EdgeStatus(t.Context(), e.site, st))
}

func TestStore_Snapshot(t *testing.T) {
	e := newEnv(t)
	snap, err := edgesync.Store{Service: e.svc}.Snapshot(t.Context(), e.site)
	require.NoError(t, err)
	require.NotNil(t, snap.Settings)
	require.Equal(t, "Europe/London", snap.Settings.Timezone)
	require.Len(t, snap.Gates, 2)
	require.Zero(t, snap.Part, "unsplit")
	_, err = edgesync.Store{Service: e.svc}.Snapshot(t.Context(), protocol.Site{})
	require.Error(t, err)
}
