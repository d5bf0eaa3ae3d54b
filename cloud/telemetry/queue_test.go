package telemetry_test

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/telemetry"
	"github.com/svc-vms/svc/cloud/webhook"
	"github.com/svc-vms/svc/shared/promtest"
	"github.com/svc-vms/svc/sync/protocol"
)

// TestMetrics_WebhooksAndFleet: a webhook delivery that succeeds and one
// that fails are counted by result, the failed one waits in the queue
// with its age, and an edge's status shows in the fleet's series; the
// store's figures are reused for StatsMaxAge, then read again.
func TestMetrics_WebhooksAndFleet(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t testing.TB) cloud.Store
	}{{"sqlite", openSQLite}, {"postgres", func(t testing.TB) cloud.Store { return postgrestest.New(t) }}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			scrapeAt := time.Now()
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return scrapeAt }
			e := newEnv(t, tc.open(t), telemetry.Config{Now: clock, StatsMaxAge: time.Minute})
			e.svc.SetWebhookPolicy(cloud.WebhookPolicy{AllowLoopbackInTest: true})
			ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			t.Cleanup(ok.Close)
			down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
			t.Cleanup(down.Close)
			for _, url := range []string{ok.URL, down.URL} {
				body, _ := json.Marshal(map[string]any{"url": url + "/hooks", "event_types": []string{"person.created"}})
				resp := e.do(http.MethodPost, "/v1/webhook-endpoints", string(body), "Idempotency-Key", newKey())
				require.Equal(t, http.StatusCreated, resp.Code, resp.Body.String())
			}
			person := func() {
				t.Helper()
				resp := e.do(http.MethodPost, "/v1/people", `{"name":"Ada Lovelace"}`, "Idempotency-Key", newKey())
				require.Equal(t, http.StatusCreated, resp.Code, resp.Body.String())
			}
			before := time.Now()
			person()
			d := &webhook.Dispatcher{Service: e.svc, Body: httpapi.EventBody, Observe: e.tel.ObserveWebhook}
			n, err := d.RunOnce(t.Context())
			require.NoError(t, err)
			require.Equal(t, 2, n)

			tenant := cloud.Tenant{OrgID: e.seed.Organisation.ID, Mode: cloud.ModeTest}
			site := e.seed.Test.Sites[0].ID
			ed, _, err := e.svc.CreateEdge(t.Context(), tenant, site, "Reception")
			require.NoError(t, err)
			require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), cloud.EdgeSite(tenant, site),
				protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOnline, At: time.Now(), Seq: 0, Outbox: 4}))
			edges, err := e.svc.Edges(t.Context(), tenant, site)
			require.NoError(t, err)
			require.Len(t, edges, 1)
			lag := edges[0].Head - edges[0].Seq
			require.Positive(t, lag, "the seeded site has changes the edge has not applied")
			// Two more online edges (a site has one at a time): one a
			// change behind at the second site, one caught up at the third,
			// which has no series.
			online := func(site, name string, behind uint64) {
				t.Helper()
				ed, _, err := e.svc.CreateEdge(t.Context(), tenant, site, name)
				require.NoError(t, err)
				edges, err := e.svc.Edges(t.Context(), tenant, site)
				require.NoError(t, err)
				head := edges[0].Head
				require.GreaterOrEqual(t, head, behind)
				require.NoError(t, e.svc.RecordEdgeStatus(t.Context(), cloud.EdgeSite(tenant, site),
					protocol.Status{V: 1, EdgeID: ed.ID, State: cloud.EdgeOnline, At: time.Now(), Seq: head - behind}))
			}
			site2, site3 := e.seed.Test.Sites[1].ID, e.seed.Test.Sites[2].ID
			online(site2, "Lobby", 1)
			online(site3, "Front door", 0)
			require.NotEqual(t, uint64(1), lag, "the two sites behind differ")

			mu.Lock()
			scrapeAt = time.Now()
			mu.Unlock()
			scrape := e.scrape()
			mfs := families(t, scrape)
			requireValue(t, mfs, "svc_cloud_webhook_attempts_total", map[string]string{"result": "succeeded"}, 1)
			requireValue(t, mfs, "svc_cloud_webhook_attempts_total", map[string]string{"result": "status_5xx"}, 1)
			requireValue(t, mfs, "svc_cloud_webhook_attempts_total", map[string]string{"result": "refused"}, 0)
			requireValue(t, mfs, "svc_cloud_webhook_deliveries_pending", map[string]string{"state": "waiting"}, 1)
			requireValue(t, mfs, "svc_cloud_webhook_deliveries_pending", map[string]string{"state": "due"}, 0)
			requireValue(t, mfs, "svc_cloud_webhook_deliveries_pending", map[string]string{"state": "held"}, 0)
			age, found := value(mfs, "svc_cloud_webhook_oldest_pending_age_seconds", map[string]string{})
			require.True(t, found)
			require.Positive(t, age)
			require.LessOrEqual(t, age, scrapeAt.Sub(before).Seconds(), "from the event, not before it")
			requireValue(t, mfs, "svc_cloud_edges", map[string]string{"state": "online"}, 3)
			requireValue(t, mfs, "svc_cloud_edges", map[string]string{"state": "offline"}, 0)
			requireValue(t, mfs, "svc_cloud_edges", map[string]string{"state": "revoked"}, 0)
			requireValue(t, mfs, "svc_cloud_mqtt_facts_pending", map[string]string{}, 4)
			requireValue(t, mfs, "svc_cloud_mqtt_facts_pending_oldest_age_seconds", map[string]string{}, 0)
			requireValue(t, mfs, "svc_cloud_feed_lag_max", map[string]string{}, float64(lag))
			requireValue(t, mfs, "svc_cloud_feed_lag", map[string]string{"site_id": site}, float64(lag))
			requireValue(t, mfs, "svc_cloud_feed_lag", map[string]string{"site_id": site2}, 1)
			require.Len(t, mfs["svc_cloud_feed_lag"].GetMetric(), 2, "no series for the site that has caught up")
			requireValue(t, mfs, "svc_cloud_feed_lag_sites_omitted", map[string]string{}, 0)
			t.Run("promtool", func(t *testing.T) { promtest.CheckMetrics(t, scrape) })

			// Another event queues two more; a scrape within StatsMaxAge
			// shows the figures read before, a later one the new ones.
			person()
			requireValue(t, families(t, e.scrape()), "svc_cloud_webhook_deliveries_pending", map[string]string{"state": "due"}, 0)
			mu.Lock()
			scrapeAt = scrapeAt.Add(time.Minute)
			mu.Unlock()
			mfs = families(t, e.scrape())
			requireValue(t, mfs, "svc_cloud_webhook_deliveries_pending", map[string]string{"state": "due"}, 3)
			requireValue(t, mfs, "svc_cloud_webhook_deliveries_pending", map[string]string{"state": "waiting"}, 0)
		})
	}
}

// newKey returns a new random UUID for an Idempotency-Key.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
