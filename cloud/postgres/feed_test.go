package postgres_test

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// twoProcesses opens two stores on one fresh schema: two API processes
// sharing a database, each with its own pool.
func twoProcesses(t *testing.T) (*postgres.Store, *postgres.Store) {
	t.Helper()
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	var stores [2]*postgres.Store
	for i := range stores {
		s, err := postgrestest.OpenIn(t, url, schema)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	return stores[0], stores[1]
}

type fixture struct {
	tn    cloud.Tenant
	sites []cloud.Site
	now   time.Time
}

// newFixture makes an organisation with sites, each with one visit.
func newFixture(t *testing.T, s cloud.Store, sites int) (fixture, []cloud.Visit) {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	org := cloud.Organisation{ID: ids.New(ids.Organisation), Name: "Acme", Plan: cloud.PlanPro, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreateOrganisation(ctx, org))
	f := fixture{tn: cloud.Tenant{OrgID: org.ID, Mode: cloud.ModeLive}, now: now}
	var visits []cloud.Visit
	for range sites {
		site := cloud.Site{ID: ids.New(ids.Site), Tenant: f.tn, Name: "HQ", Timezone: "Europe/London", CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.CreateSite(ctx, site))
		f.sites = append(f.sites, site)
		v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: f.tn, Status: cloud.VisitExpected, Type: "meeting", SiteID: site.ID,
			CreatedAt: now, UpdatedAt: now}
		require.NoError(t, s.CreateVisit(ctx, v, cloud.VisitWrites{}))
		visits = append(visits, v)
	}
	return f, visits
}

// allChanges reads a site's whole feed.
func allChanges(t *testing.T, s cloud.Store, tn cloud.Tenant, site string) ([]protocol.Change, uint64) {
	t.Helper()
	var out []protocol.Change
	var after, head uint64
	for {
		cs, h, err := s.SiteChanges(t.Context(), tn, site, after, 0)
		require.NoError(t, err)
		head = h
		if len(cs) == 0 {
			return out, head
		}
		out = append(out, cs...)
		after = cs[len(cs)-1].Seq
	}
}

// TestFeed_TwoProcesses writes to one site's feed from two stores at once,
// with pass keys (every site) and visits of two sites in one transaction
// among the writes: the sequences have no gaps and none is used twice,
// and no write deadlocks another.
func TestFeed_TwoProcesses(t *testing.T) {
	p1, p2 := twoProcesses(t)
	fx, visits := newFixture(t, p1, 3)
	const workers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*each)
	for w := range workers {
		store := []cloud.Store{p1, p2}[w%2]
		wg.Go(func() {
			for i := range each {
				var err error
				switch {
				case w == 0 && i%5 == 0:
					_, priv, _ := ed25519.GenerateKey(nil)
					err = store.CreatePassKey(t.Context(), cloud.PassKey{ID: fmt.Sprintf("%08x", rand.Uint32()), Tenant: fx.tn, Private: priv, CreatedAt: fx.now})
				default:
					v := visits[(w+i)%len(visits)]
					_, err = store.UpdateVisit(t.Context(), fx.tn, v.ID, func(x *cloud.Visit, vw *cloud.VisitWrites) error {
						x.Pass.Uses++
						// A visit at another site in the same transaction:
						// two feeds' heads, locked in site order.
						other := fx.sites[(w+i+1)%len(fx.sites)]
						vw.Visits = append(vw.Visits, cloud.Visit{ID: ids.New(ids.Visit), Tenant: fx.tn, Status: cloud.VisitExpected,
							Type: "meeting", SiteID: other.ID, CreatedAt: fx.now, UpdatedAt: fx.now})
						return nil
					})
				}
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total := 0
	for _, site := range fx.sites {
		cs, head := allChanges(t, p2, fx.tn, site.ID)
		require.Equal(t, uint64(len(cs)), head)
		for i, c := range cs {
			require.Equal(t, uint64(i+1), c.Seq, "site %s", site.ID)
		}
		total += len(cs)
	}
	// Per site: settings and its first visit; then per write either a key
	// in every site or two visits.
	keys := (each + 4) / 5
	require.Equal(t, len(fx.sites)*2+keys*len(fx.sites)+(workers*each-keys)*2, total)
}

// TestPublishFeeds_TwoProcesses publishes from two stores at once while a
// third writes: every change reaches fn once, each site's in order.
func TestPublishFeeds_TwoProcesses(t *testing.T) {
	p1, p2 := twoProcesses(t)
	fx, visits := newFixture(t, p1, 4)
	var mu sync.Mutex
	got := map[protocol.Site][]uint64{}
	fn := func(site protocol.Site, cs []protocol.Change) error {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			got[site] = append(got[site], c.Seq)
		}
		return nil
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := range 60 {
			v := visits[i%len(visits)]
			if _, err := p1.UpdateVisit(t.Context(), fx.tn, v.ID, func(x *cloud.Visit, _ *cloud.VisitWrites) error {
				x.Pass.Uses++
				return nil
			}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for _, s := range []*postgres.Store{p1, p2} {
		wg.Go(func() {
			for {
				finished := false
				select {
				case <-done:
					finished = true
				default:
				}
				n, err := s.PublishFeeds(t.Context(), 1, fn)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 && finished {
					return
				}
			}
		})
	}
	wg.Wait()
	n, err := p2.PublishFeeds(t.Context(), 100, fn)
	require.NoError(t, err)
	require.Zero(t, n)
	for _, site := range fx.sites {
		_, head := allChanges(t, p1, fx.tn, site.ID)
		want := make([]uint64, head)
		for i := range want {
			want[i] = uint64(i + 1)
		}
		require.Equal(t, want, got[cloud.EdgeSite(fx.tn, site.ID)], "site %s", site.ID)
	}
}

// TestApplyFact_TwoProcesses delivers each fact to two stores at once, as
// a broker may after a reconnect: each is applied once.
func TestApplyFact_TwoProcesses(t *testing.T) {
	p1, p2 := twoProcesses(t)
	fx, visits := newFixture(t, p1, 1)
	v := visits[0]
	const facts = 20
	for i := range facts {
		f := protocol.Fact{V: protocol.Version, ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, EdgeID: ids.New(ids.Edge),
			Counter: uint64(i + 1), At: fx.now, GateID: ids.New(ids.Gate), VisitID: v.ID}
		ef := cloud.EdgeFact{Tenant: fx.tn, SiteID: v.SiteID, Fact: f, ReceivedAt: fx.now}
		var wg sync.WaitGroup
		applied := make(chan bool, 2)
		start := make(chan struct{})
		for _, s := range []*postgres.Store{p1, p2} {
			wg.Go(func() {
				<-start
				ok, err := s.ApplyFact(t.Context(), ef, func(load func(string) (cloud.Visit, error), w *cloud.FactWrites) error {
					x, err := load(v.ID)
					if err != nil {
						return err
					}
					x.Pass.Uses++
					w.Visits = append(w.Visits, x)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
				applied <- ok
			})
		}
		close(start)
		wg.Wait()
		close(applied)
		n := 0
		for ok := range applied {
			if ok {
				n++
			}
		}
		require.Equal(t, 1, n, "fact %d applied once", i)
	}
	got, err := p2.Visit(t.Context(), fx.tn, v.ID)
	require.NoError(t, err)
	require.Equal(t, facts, got.Pass.Uses)
	cs, _ := allChanges(t, p1, fx.tn, v.SiteID)
	require.Len(t, cs, 2+facts, "settings, the visit, and one change per fact")
}
