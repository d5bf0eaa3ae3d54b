package edgesync_test

import (
	"context"
	"crypto/ed25519"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/edgesync"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/shared/fakeclock"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker/dynsec"
	"github.com/svc-vms/svc/sync/broker/dynsec/dynsectest"
	"github.com/svc-vms/svc/sync/protocol"
)

// accEnv is a cloud service that keeps its edges' accounts at a private
// Mosquitto, with a seeded organisation.
type accEnv struct {
	clock  *fakeclock.Clock
	svc    *cloud.Service
	store  cloud.Store
	b      *dynsectest.Broker
	ctl    *dynsec.Control
	tenant cloud.Tenant
	site   string // a site with gates
	site2  string
}

func newAccEnv(t *testing.T, store cloud.Store) accEnv {
	t.Helper()
	b := dynsectest.Start(t)
	e := accEnv{clock: fakeclock.New(time.Now()), store: store, b: b, ctl: newControl(t, b)}
	e.svc = e.newService(t)
	res, err := e.svc.Seed(t.Context(), "Acme", cloud.PlanPro)
	require.NoError(t, err)
	e.tenant = cloud.Tenant{OrgID: res.Organisation.ID, Mode: cloud.ModeTest}
	e.site, e.site2 = res.Test.Sites[0].ID, res.Test.Sites[1].ID
	return e
}

func newControl(t *testing.T, b *dynsectest.Broker) *dynsec.Control {
	t.Helper()
	ctl, err := dynsec.New(dynsec.Config{BrokerURL: b.URL, Username: dynsectest.Admin, Password: b.AdminPassword})
	require.NoError(t, err)
	t.Cleanup(ctl.Close)
	return ctl
}

// newService is another cloud process on the same store and broker: a
// service with a Control of its own.
func (e accEnv) newService(t *testing.T) *cloud.Service {
	svc := cloud.NewService(e.store, e.clock.Now)
	svc.SetBrokerAccounts(edgesync.Accounts{Control: newControl(t, e.b)})
	return svc
}

// edgeOpts are the edge's credentials at the broker.
func edgeOpts(e cloud.Edge, password string) dynsectest.DialOptions {
	return dynsectest.DialOptions{Username: e.Username, Password: password, ClientID: e.ID}
}

// account returns the plugin's client of the edge, and whether it has one.
func (e accEnv) account(t *testing.T, edgeID string) (dynsec.Client, bool) {
	t.Helper()
	clients, err := e.ctl.ListClients(t.Context())
	require.NoError(t, err)
	i := slices.IndexFunc(clients, func(c dynsec.Client) bool { return c.Username == edgeID })
	if i < 0 {
		return dynsec.Client{}, false
	}
	return clients[i], true
}

// runReconciler runs a Reconciler, reconciling every 50 ms, until the
// test ends.
func (e accEnv) runReconciler(t *testing.T, svc *cloud.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r := &edgesync.Reconciler{Service: svc, Control: newControl(t, e.b), Every: 50 * time.Millisecond}
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// TestAccounts_EnrolByCode: an appliance enrolled by code collects
// credentials that Mosquitto accepts, with its own topics alone; revoked,
// it is disconnected at once and refused.
func TestAccounts_EnrolByCode(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newAccEnv(t, store)
		ctx := t.Context()
		e.runReconciler(t, e.svc)
		pub, _, err := ed25519.GenerateKey(nil)
		require.NoError(t, err)
		code, _, err := e.svc.RequestEnrolment(ctx, pub, "127.0.0.1", 0)
		require.NoError(t, err)
		edge, err := e.svc.ClaimEnrolment(ctx, e.tenant, code, e.site, "Lobby")
		require.NoError(t, err)
		acc, ok := e.account(t, edge.ID)
		require.True(t, ok, "the claim made the edge's account")
		require.False(t, acc.Disabled)

		poll, err := e.svc.PollEnrolment(ctx, pub, 0)
		require.NoError(t, err)
		require.Equal(t, cloud.EnrolmentClaimed, poll.State)
		site := cloud.EdgeSite(e.tenant, e.site)
		c := dynsectest.MustDial(t, e.b.URL, edgeOpts(edge, poll.Password))
		require.Equal(t, byte(1), c.Sub(t, site.Changes()))
		require.Equal(t, byte(1), c.Sub(t, site.Replies(edge.ID)))
		require.Equal(t, byte(0x80), c.Sub(t, cloud.EdgeSite(e.tenant, e.site2).Changes()), "another site's feed")
		require.Equal(t, byte(0x80), c.Sub(t, protocol.SharedFacts))

		// Each poll until it connects mints a password: the last one
		// collected is the one that works.
		again, err := e.svc.PollEnrolment(ctx, pub, 0)
		require.NoError(t, err)
		c.WaitLost(t) // a password change disconnects
		_, err = dynsectest.Dial(t, e.b.URL, edgeOpts(edge, poll.Password))
		require.Error(t, err, "the first password no longer works")
		c = dynsectest.MustDial(t, e.b.URL, edgeOpts(edge, again.Password))

		_, err = e.svc.RevokeEdge(ctx, e.tenant, edge.ID)
		require.NoError(t, err)
		c.WaitLost(t)
		_, err = dynsectest.Dial(t, e.b.URL, edgeOpts(edge, again.Password))
		require.Error(t, err, "a revoked edge's credentials are refused")
		acc, _ = e.account(t, edge.ID)
		require.True(t, acc.Disabled)
	})
}

// TestAccounts_BrokerDown: with Mosquitto down, a claim, a poll and
// edges create fail with ErrBrokerUnavailable and commit nothing; once it
// is back the same code claims the appliance.
func TestAccounts_BrokerDown(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newAccEnv(t, store)
		ctx := t.Context()
		pub, _, err := ed25519.GenerateKey(nil)
		require.NoError(t, err)
		code, _, err := e.svc.RequestEnrolment(ctx, pub, "127.0.0.1", 0)
		require.NoError(t, err)

		e.b.Stop()
		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, code, e.site, "Lobby")
		require.ErrorIs(t, err, cloud.ErrBrokerUnavailable)
		_, _, err = e.svc.CreateEdge(ctx, e.tenant, e.site2, "")
		require.ErrorIs(t, err, cloud.ErrBrokerUnavailable)
		edges, err := e.svc.Edges(ctx, e.tenant, "")
		require.NoError(t, err)
		require.Empty(t, edges, "no edge was made")
		en, err := e.store.Enrolment(ctx, pub)
		require.NoError(t, err)
		require.Nil(t, en.ClaimedAt, "the code is still unclaimed")

		e.b.Start()
		edge, err := e.svc.ClaimEnrolment(ctx, e.tenant, code, e.site, "Lobby")
		require.NoError(t, err, "the same code, once Mosquitto is back")

		e.b.Stop()
		_, err = e.svc.PollEnrolment(ctx, pub, 0)
		require.ErrorIs(t, err, cloud.ErrBrokerUnavailable, "the appliance polls again later")
		e.b.Start()
		poll, err := e.svc.PollEnrolment(ctx, pub, 0)
		require.NoError(t, err)
		dynsectest.MustDial(t, e.b.URL, edgeOpts(edge, poll.Password))
	})
}

// TestReconciler_RevokedWhileDown: an edge revoked while Mosquitto is down
// is revoked in the cloud at once; when Mosquitto is back the edge gets
// in again, until the reconcile loop disables its account and cuts it off.
func TestReconciler_RevokedWhileDown(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newAccEnv(t, store)
		ctx := t.Context()
		edge, secret, err := e.svc.CreateEdge(ctx, e.tenant, e.site, "")
		require.NoError(t, err)
		c := dynsectest.MustDial(t, e.b.URL, edgeOpts(edge, secret))

		e.b.Stop()
		c.WaitLost(t)
		_, err = e.svc.RevokeEdge(ctx, e.tenant, edge.ID)
		require.NoError(t, err, "revocation does not wait for the broker")
		e.b.Start()
		c = dynsectest.MustDial(t, e.b.URL, edgeOpts(edge, secret)) // Mosquitto has not heard of it yet

		e.runReconciler(t, e.svc)
		c.WaitLost(t)
		_, err = dynsectest.Dial(t, e.b.URL, edgeOpts(edge, secret))
		require.Error(t, err)
		acc, ok := e.account(t, edge.ID)
		require.True(t, ok, "kept, disabled")
		require.True(t, acc.Disabled)
	})
}

// TestReconcile_Orphans: one round disables the accounts of revoked edges
// and deletes those of no edge past the grace (one left by a claim whose
// code was wrong, one made by hand, whose age is unknown), leaves the
// accounts of edges that may connect, a recent account of no edge (a claim
// being committed) and other clients alone, and does nothing the second
// time; two processes reconciling at once agree.
func TestReconcile_Orphans(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newAccEnv(t, store)
		ctx := t.Context()
		live, _, err := e.svc.CreateEdge(ctx, e.tenant, e.site, "")
		require.NoError(t, err)
		revoked, _, err := e.svc.CreateEdge(ctx, e.tenant, e.site2, "")
		require.NoError(t, err)
		_, err = e.svc.RevokeEdge(ctx, e.tenant, revoked.ID)
		require.NoError(t, err)
		require.NoError(t, e.ctl.PutCloud(ctx, "svc-cloud", "pw"))

		// A wrong code: the account is made before the claim finds none.
		_, err = e.svc.ClaimEnrolment(ctx, e.tenant, "ABCD-EFGH", e.site, "")
		var v *cloud.ValidationError
		require.ErrorAs(t, err, &v)
		accounts, err := edgesync.Accounts{Control: e.ctl}.EdgeAccounts(ctx)
		require.NoError(t, err)
		var wrongCode string
		for _, a := range accounts {
			if a.EdgeID != live.ID && a.EdgeID != revoked.ID {
				wrongCode = a.EdgeID
			}
		}
		require.NotEmpty(t, wrongCode, "the failed claim left an account")

		site := cloud.EdgeSite(e.tenant, e.site)
		old, byHand, recent := ids.New(ids.Edge), ids.New(ids.Edge), ids.New(ids.Edge)
		require.NoError(t, e.ctl.PutEdge(ctx, site, old, "pw", e.clock.Now().Add(-2*time.Hour)))
		ans := e.b.Command(t, `[{"command":"createClient","username":"`+byHand+`","password":"pw"}]`) // as mosquitto_ctrl makes one
		require.JSONEq(t, `{"responses":[{"command":"createClient"}]}`, ans)
		e.clock.Advance(time.Hour)
		require.NoError(t, e.ctl.PutEdge(ctx, site, recent, "pw", e.clock.Now()))

		done, err := e.svc.ReconcileBrokerAccounts(ctx, 30*time.Minute)
		require.NoError(t, err)
		assert.Equal(t, []string{revoked.ID}, done.Disabled)
		assert.ElementsMatch(t, []string{old, byHand, wrongCode}, done.Deleted)
		for id, want := range map[string]bool{live.ID: true, revoked.ID: true, recent: true, old: false, byHand: false, wrongCode: false} {
			_, ok := e.account(t, id)
			assert.Equal(t, want, ok, "account of %s", id)
		}
		acc, _ := e.account(t, live.ID)
		assert.False(t, acc.Disabled)
		_, ok := e.account(t, "svc-cloud")
		assert.True(t, ok, "other clients are left alone")

		done, err = e.svc.ReconcileBrokerAccounts(ctx, 30*time.Minute)
		require.NoError(t, err)
		assert.Empty(t, done.Disabled, "idempotent")
		assert.Empty(t, done.Deleted, "idempotent")

		// Two processes at once, on one more revoked edge and one more
		// old orphan: no errors, and each account is dealt with.
		_, err = e.svc.RevokeEdge(ctx, e.tenant, live.ID)
		require.NoError(t, err)
		orphan := ids.New(ids.Edge)
		require.NoError(t, e.ctl.PutEdge(ctx, site, orphan, "pw", e.clock.Now().Add(-time.Hour)))
		var wg sync.WaitGroup
		for _, svc := range []*cloud.Service{e.svc, e.newService(t)} {
			wg.Go(func() {
				_, err := svc.ReconcileBrokerAccounts(ctx, 30*time.Minute)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		acc, _ = e.account(t, live.ID)
		assert.True(t, acc.Disabled)
		_, ok = e.account(t, orphan)
		assert.False(t, ok)
	})
}
