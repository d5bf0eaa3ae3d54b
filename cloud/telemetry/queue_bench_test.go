package telemetry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/telemetry"
)

// BenchmarkScrape_PendingDeliveries times a whole scrape whose queue and
// fleet figures are read from the store each time (StatsMaxAge 1 ns),
// with 10,000 webhook deliveries pending (100 endpoints, 100 events):
// the backlog of an outage, the query's worst case, since finished
// deliveries are not read at all. docs/performance.md, "The queue's and
// the fleet's series (issue 19)".
func BenchmarkScrape_PendingDeliveries(b *testing.B) {
	for _, tc := range []struct {
		name string
		open func(t testing.TB) cloud.Store
	}{{"sqlite", openSQLite}, {"postgres", func(t testing.TB) cloud.Store { return postgrestest.New(t) }}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, tc.open(b), telemetry.Config{StatsMaxAge: time.Nanosecond})
			tenant := cloud.Tenant{OrgID: e.seed.Organisation.ID, Mode: cloud.ModeTest}
			url := "https://hooks.example.com/in"
			for range 100 {
				_, err := e.svc.CreateWebhookEndpoint(b.Context(), cloud.Actor{Tenant: tenant, Plan: cloud.PlanPro},
					cloud.WebhookInput{URL: &url, EventTypes: []string{"person.created"}})
				require.NoError(b, err)
			}
			for range 100 {
				_, err := e.svc.CreatePerson(b.Context(), tenant, cloud.PersonInput{Name: cloud.Optional[string]{Set: true, Value: "Ada Lovelace"}})
				require.NoError(b, err)
			}
			q, err := e.store.WebhookQueue(b.Context(), time.Now())
			require.NoError(b, err)
			require.Equal(b, int64(10_000), q.Due)
			b.Run("query", func(b *testing.B) {
				for b.Loop() {
					if _, err := e.store.WebhookQueue(b.Context(), time.Now()); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("fleet", func(b *testing.B) {
				for b.Loop() {
					if _, err := e.store.FleetTotals(b.Context(), time.Now(), telemetry.FeedLagSites); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("scrape", func(b *testing.B) {
				for b.Loop() {
					e.scrape()
				}
			})
		})
	}
}
