package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// WebhookQueue implements cloud.Store. The condition status = 'pending'
// is the partial index webhook_deliveries_due's, so the plan reads the
// pending rows only, each with its endpoint by primary key.
func (s *Store) WebhookQueue(ctx context.Context, now time.Time) (cloud.WebhookQueueStats, error) {
	var q cloud.WebhookQueueStats
	err := s.pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE w.disabled_reason IS NULL AND d.next_attempt_at <= $1),
			count(*) FILTER (WHERE w.disabled_reason IS NULL AND d.next_attempt_at > $1),
			count(*) FILTER (WHERE w.disabled_reason IS NOT NULL),
			min(d.created_at) FILTER (WHERE w.disabled_reason IS NULL)
		FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
		WHERE d.status = 'pending'`, now).Scan(&q.Due, &q.Waiting, &q.Held, &q.Oldest)
	if err != nil {
		return cloud.WebhookQueueStats{}, fmt.Errorf("webhook queue: %w", classify(err))
	}
	if q.Oldest != nil {
		o := q.Oldest.UTC()
		q.Oldest = &o
	}
	return q, nil
}

// FleetTotals implements cloud.Store: one pass over the edges, each with
// its site's feed head by primary key, grouped by site; the totals are
// summed from the sites, and the sites behind, the most behind first, are
// the statement's rows, each beside the totals (one row with no site when
// none is behind).
func (s *Store) FleetTotals(ctx context.Context, silentBefore time.Time, lagSites int) (cloud.FleetTotals, error) {
	rows, err := s.pool.Query(ctx, `WITH s AS MATERIALIZED (
			SELECT e.site_id, count(*) AS n,
				count(*) FILTER (WHERE e.revoked_at IS NOT NULL) AS revoked,
				count(*) FILTER (WHERE e.revoked_at IS NULL AND e.state = 'online' AND (e.last_seen_at IS NULL OR e.last_seen_at >= $1)) AS online,
				coalesce(sum(e.outbox) FILTER (WHERE e.revoked_at IS NULL), 0) AS outbox,
				min(e.outbox_oldest) FILTER (WHERE e.revoked_at IS NULL AND e.outbox > 0) AS oldest,
				max(coalesce(h.seq, 0) - e.seq) FILTER (WHERE e.revoked_at IS NULL AND e.state = 'online'
					AND (e.last_seen_at IS NULL OR e.last_seen_at >= $1)) AS lag
			FROM edges e LEFT JOIN site_feed_heads h ON h.org_id = e.org_id AND h.mode = e.mode AND h.site_id = e.site_id
			GROUP BY e.org_id, e.mode, e.site_id
		), t AS (
			SELECT coalesce(sum(n), 0)::bigint AS n, coalesce(sum(revoked), 0)::bigint AS revoked,
				coalesce(sum(online), 0)::bigint AS online, coalesce(sum(outbox), 0)::bigint AS outbox,
				min(oldest) AS oldest, max(lag) AS lag, count(*) FILTER (WHERE lag > 0) AS behind
			FROM s
		)
		SELECT t.n, t.revoked, t.online, t.outbox, t.oldest, t.lag, t.behind, b.site_id, b.lag
		FROM t LEFT JOIN (SELECT site_id, lag FROM s WHERE lag > 0 ORDER BY lag DESC, site_id LIMIT $2) b ON true
		ORDER BY b.lag DESC, b.site_id`,
		silentBefore, lagSites)
	if err != nil {
		return cloud.FleetTotals{}, fmt.Errorf("fleet totals: %w", classify(err))
	}
	defer rows.Close()
	var f cloud.FleetTotals
	var total, behind int64
	var lag, siteLag *int64
	var site *string
	for rows.Next() {
		if err := rows.Scan(&total, &f.Revoked, &f.Online, &f.Outbox, &f.OutboxOldest, &lag, &behind, &site, &siteLag); err != nil {
			return cloud.FleetTotals{}, fmt.Errorf("fleet totals: %w", classify(err))
		}
		if site != nil && siteLag != nil {
			f.Behind = append(f.Behind, cloud.SiteLag{SiteID: *site, Lag: uint64(*siteLag)})
		}
	}
	if err := rows.Err(); err != nil {
		return cloud.FleetTotals{}, fmt.Errorf("fleet totals: %w", classify(err))
	}
	f.Offline = total - f.Revoked - f.Online
	if f.OutboxOldest != nil {
		o := f.OutboxOldest.UTC()
		f.OutboxOldest = &o
	}
	if lag != nil && *lag > 0 {
		f.MaxLag = uint64(*lag)
	}
	f.BehindOmitted = behind - int64(len(f.Behind))
	return f, nil
}
