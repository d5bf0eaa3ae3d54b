package telemetry

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-vms/svc/cloud"
)

// DefaultStatsMaxAge is how long the queue's and the fleet's figures are
// reused before the store is asked again: a scrape from each of two or
// three Prometheus servers every 15 s costs one pair of queries, not one
// pair each.
const DefaultStatsMaxAge = 5 * time.Second

// FeedLagSites is the most sites svc_cloud_feed_lag has a series for at a
// scrape, the most behind: a broker down with every site behind makes at
// most this many series, and svc_cloud_feed_lag_sites_omitted counts the
// sites behind beyond them.
const FeedLagSites = 100

// queueCollector reads the webhook queue and the fleet's totals from the
// store at scrape time (cloud.Store.WebhookQueue, FleetTotals): each an
// aggregate over every tenant, so the series have no tenant label, and
// their number does not grow with the customers. The one exception is
// svc_cloud_feed_lag, by site_id, for the sites behind at the scrape
// only, at most FeedLagSites of them.
type queueCollector struct {
	store   cloud.Store
	now     func() time.Time
	maxAge  time.Duration
	timeout time.Duration
	log     *slog.Logger

	mu     sync.Mutex // held while the store is asked: concurrent scrapes wait and share the answer
	at     time.Time  // when the figures below were read; zero before the first
	queue  *cloud.WebhookQueueStats
	fleet  *cloud.FleetTotals
	readAt time.Time // the clock's time at the read, for the ages
}

var (
	descPending = prometheus.NewDesc("svc_cloud_webhook_deliveries_pending",
		"Webhook deliveries not finished, by state: due (to be sent as soon as a dispatcher claims them), waiting "+
			"(a retry's wait, or being sent), held (their endpoint is disabled).", []string{"state"}, nil)
	descOldest = prometheus.NewDesc("svc_cloud_webhook_oldest_pending_age_seconds",
		"Age of the oldest webhook delivery not finished to an enabled endpoint, from its event; 0 when there is none.", nil, nil)
	descEdges = prometheus.NewDesc("svc_cloud_edges",
		"Edges by state: online (its last status said so within the last 3 minutes), offline, revoked.", []string{"state"}, nil)
	descFactsPending = prometheus.NewDesc("svc_cloud_mqtt_facts_pending",
		"Facts the edges not revoked said, in their last status, they had not had acknowledged yet, summed.", nil, nil)
	descFactsOldest = prometheus.NewDesc("svc_cloud_mqtt_facts_pending_oldest_age_seconds",
		"Age of the oldest of those facts, as the edges said; 0 when there is none.", nil, nil)
	descLagMax = prometheus.NewDesc("svc_cloud_feed_lag_max",
		"The most changes an online edge is behind its site's feed (the feed's head minus the last change it said it applied).", nil, nil)
	descLag = prometheus.NewDesc("svc_cloud_feed_lag",
		"Changes a site's online edge is behind the site's feed (the largest, if several), for the sites behind at the scrape only, "+
			"the "+strconv.Itoa(FeedLagSites)+" most behind; a site that has caught up has no series.", []string{"site_id"}, nil)
	descLagOmitted = prometheus.NewDesc("svc_cloud_feed_lag_sites_omitted",
		"Sites behind at the scrape beyond the "+strconv.Itoa(FeedLagSites)+" that svc_cloud_feed_lag shows.", nil, nil)
)

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPending, descOldest, descEdges, descFactsPending, descFactsOldest, descLagMax, descLag, descLagOmitted} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	q, f, now := c.read()
	age := func(t *time.Time) float64 {
		if t == nil || !now.After(*t) {
			return 0
		}
		return now.Sub(*t).Seconds()
	}
	if q != nil {
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(q.Due), "due")
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(q.Waiting), "waiting")
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(q.Held), "held")
		ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, age(q.Oldest))
	}
	if f != nil {
		ch <- prometheus.MustNewConstMetric(descEdges, prometheus.GaugeValue, float64(f.Online), "online")
		ch <- prometheus.MustNewConstMetric(descEdges, prometheus.GaugeValue, float64(f.Offline), "offline")
		ch <- prometheus.MustNewConstMetric(descEdges, prometheus.GaugeValue, float64(f.Revoked), "revoked")
		ch <- prometheus.MustNewConstMetric(descFactsPending, prometheus.GaugeValue, float64(f.Outbox))
		ch <- prometheus.MustNewConstMetric(descFactsOldest, prometheus.GaugeValue, age(f.OutboxOldest))
		ch <- prometheus.MustNewConstMetric(descLagMax, prometheus.GaugeValue, float64(f.MaxLag))
		for _, s := range f.Behind {
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(s.Lag), s.SiteID)
		}
		ch <- prometheus.MustNewConstMetric(descLagOmitted, prometheus.GaugeValue, float64(f.BehindOmitted))
	}
}

// read returns the figures, asking the store when they are older than
// maxAge. A query that fails leaves its series out of the scrape (the
// rest, the database pool's among them, is what an operator needs during
// an outage) and is logged; it is asked again at the next scrape.
func (c *queueCollector) read() (*cloud.WebhookQueueStats, *cloud.FleetTotals, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !c.at.IsZero() && now.Sub(c.at) < c.maxAge && !now.Before(c.at) {
		return c.queue, c.fleet, c.readAt
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.queue, c.fleet = nil, nil
	if q, err := c.store.WebhookQueue(ctx, now); err == nil {
		c.queue = &q
	} else {
		c.log.Warn("metrics: read the webhook queue", "err", err)
	}
	if f, err := c.store.FleetTotals(ctx, now.Add(-cloud.EdgeSilentAfter), FeedLagSites); err == nil {
		c.fleet = &f
	} else {
		c.log.Warn("metrics: read the fleet's totals", "err", err)
	}
	c.readAt = now
	if c.queue != nil && c.fleet != nil {
		c.at = now // a failure is not cached
	} else {
		c.at = time.Time{}
	}
	return c.queue, c.fleet, now
}
