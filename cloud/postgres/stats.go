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
// its site's feed head by primary key.
func (s *Store) FleetTotals(ctx context.Context, silentBefore time.Time) (cloud.FleetTotals, error) {
	var f cloud.FleetTotals
	var total int64
	var lag *int64
	err := s.pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE e.revoked_at IS NOT NULL),
			count(*) FILTER (WHERE e.revoked_at IS NULL AND e.state = 'online' AND (e.last_seen_at IS NULL OR e.last_seen_at >= $1)),
			coalesce(sum(e.outbox) FILTER (WHERE e.revoked_at IS NULL), 0)::bigint,
			min(e.outbox_oldest) FILTER (WHERE e.revoked_at IS NULL AND e.outbox > 0),
			max(coalesce(h.seq, 0) - e.seq) FILTER (WHERE e.revoked_at IS NULL AND e.state = 'online'
				AND (e.last_seen_at IS NULL OR e.last_seen_at >= $1))
		FROM edges e LEFT JOIN site_feed_heads h ON h.org_id = e.org_id AND h.mode = e.mode AND h.site_id = e.site_id`,
		silentBefore).Scan(&total, &f.Revoked, &f.Online, &f.Outbox, &f.OutboxOldest, &lag)
	if err != nil {
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
	return f, nil
}
