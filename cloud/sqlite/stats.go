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
// its site's feed head by primary key.
func (s *Store) FleetTotals(ctx context.Context, silentBefore time.Time) (cloud.FleetTotals, error) {
	var f cloud.FleetTotals
	var total int64
	var lag, oldest sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT count(*),
			coalesce(sum(e.revoked_at IS NOT NULL), 0),
			coalesce(sum(e.revoked_at IS NULL AND e.state = 'online' AND (e.last_seen_at IS NULL OR e.last_seen_at >= ?1)), 0),
			coalesce(sum(CASE WHEN e.revoked_at IS NULL THEN e.outbox ELSE 0 END), 0),
			min(CASE WHEN e.revoked_at IS NULL AND e.outbox > 0 THEN e.outbox_oldest END),
			max(CASE WHEN e.revoked_at IS NULL AND e.state = 'online' AND (e.last_seen_at IS NULL OR e.last_seen_at >= ?1)
				THEN coalesce(h.seq, 0) - e.seq END)
		FROM edges e LEFT JOIN site_feed_heads h ON h.org_id = e.org_id AND h.mode = e.mode AND h.site_id = e.site_id`,
		micros(silentBefore)).Scan(&total, &f.Revoked, &f.Online, &f.Outbox, &oldest, &lag)
	if err != nil {
		return cloud.FleetTotals{}, fmt.Errorf("fleet totals: %w", classify(err))
	}
	f.Offline = total - f.Revoked - f.Online
	f.OutboxOldest = fromNullMicros(oldest)
	if lag.Int64 > 0 {
		f.MaxLag = uint64(lag.Int64)
	}
	return f, nil
}
