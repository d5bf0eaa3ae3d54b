package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// WebhookQueue implements cloud.Store. It walks the pending rows through
// the partial index webhook_deliveries_due (status = 'pending'), each
// with its endpoint by primary key: the finished deliveries, which are
// most of the table, are not read.
func (s *Store) WebhookQueue(ctx context.Context, now time.Time) (cloud.WebhookQueueStats, error) {
	var q cloud.WebhookQueueStats
	var oldest sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT
			coalesce(sum(w.disabled_reason IS NULL AND d.next_attempt_at <= ?1), 0),
			coalesce(sum(w.disabled_reason IS NULL AND d.next_attempt_at > ?1), 0),
			coalesce(sum(w.disabled_reason IS NOT NULL), 0),
			min(CASE WHEN w.disabled_reason IS NULL THEN d.created_at END)
		FROM webhook_deliveries d INDEXED BY webhook_deliveries_due JOIN webhook_endpoints w ON w.id = d.endpoint_id
		WHERE d.status = 'pending'`, micros(now)).Scan(&q.Due, &q.Waiting, &q.Held, &oldest)
	if err != nil {
		return cloud.WebhookQueueStats{}, fmt.Errorf("webhook queue: %w", classify(err))
	}
	q.Oldest = fromNullMicros(oldest)
	return q, nil
}

// FleetTotals implements cloud.Store: one pass over the edges, each with
// its site's feed head by primary key, grouped by site (the index
// edges_site's order); the totals are summed from the sites, and the
// sites behind, the most behind first, are the statement's rows, each
// beside the totals (one row with no site when none is behind).
func (s *Store) FleetTotals(ctx context.Context, silentBefore time.Time, lagSites int) (cloud.FleetTotals, error) {
	rows, err := s.r.QueryContext(ctx, `WITH s AS MATERIALIZED (
			SELECT e.site_id AS site_id, count(*) AS n,
				coalesce(sum(e.revoked_at IS NOT NULL), 0) AS revoked,
				coalesce(sum(e.revoked_at IS NULL AND e.state = 'online' AND (e.last_seen_at IS NULL OR e.last_seen_at >= ?1)), 0) AS online,
				coalesce(sum(CASE WHEN e.revoked_at IS NULL THEN e.outbox ELSE 0 END), 0) AS outbox,
				min(CASE WHEN e.revoked_at IS NULL AND e.outbox > 0 THEN e.outbox_oldest END) AS oldest,
				max(CASE WHEN e.revoked_at IS NULL AND e.state = 'online' AND (e.last_seen_at IS NULL OR e.last_seen_at >= ?1)
					THEN coalesce(h.seq, 0) - e.seq END) AS lag
			FROM edges e LEFT JOIN site_feed_heads h ON h.org_id = e.org_id AND h.mode = e.mode AND h.site_id = e.site_id
			GROUP BY e.org_id, e.mode, e.site_id
		), t AS (
			SELECT coalesce(sum(n), 0) AS n, coalesce(sum(revoked), 0) AS revoked, coalesce(sum(online), 0) AS online,
				coalesce(sum(outbox), 0) AS outbox, min(oldest) AS oldest, max(lag) AS lag, coalesce(sum(lag > 0), 0) AS behind
			FROM s
		)
		SELECT t.n, t.revoked, t.online, t.outbox, t.oldest, t.lag, t.behind, b.site_id, b.lag
		FROM t LEFT JOIN (SELECT site_id, lag FROM s WHERE lag > 0 ORDER BY lag DESC, site_id LIMIT ?2) b ON 1
		ORDER BY b.lag DESC, b.site_id`,
		micros(silentBefore), lagSites)
	if err != nil {
		return cloud.FleetTotals{}, fmt.Errorf("fleet totals: %w", classify(err))
	}
	defer rows.Close()
	var f cloud.FleetTotals
	var total, behind int64
	var lag, oldest, siteLag sql.NullInt64
	var site sql.NullString
	for rows.Next() {
		if err := rows.Scan(&total, &f.Revoked, &f.Online, &f.Outbox, &oldest, &lag, &behind, &site, &siteLag); err != nil {
			return cloud.FleetTotals{}, fmt.Errorf("fleet totals: %w", classify(err))
		}
		if site.Valid {
			f.Behind = append(f.Behind, cloud.SiteLag{SiteID: site.String, Lag: uint64(siteLag.Int64)})
		}
	}
	if err := rows.Err(); err != nil {
		return cloud.FleetTotals{}, fmt.Errorf("fleet totals: %w", classify(err))
	}
	f.Offline = total - f.Revoked - f.Online
	f.OutboxOldest = fromNullMicros(oldest)
	if lag.Int64 > 0 {
		f.MaxLag = uint64(lag.Int64)
	}
	f.BehindOmitted = behind - int64(len(f.Behind))
	return f, nil
}
