package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
)

const eventCols = `id, type, object_type, object_id, request_id, data, created_at`

// queueEvents queues in b what was recorded for the write ctx goes with:
// with withReply, the reply to store (cloud.TakeReply), which fails the
// batch with replyHeld when a reply to the same key is stored already;
// the events (cloud.TakeEvents) with their webhook deliveries; and the
// audit entries (cloud.TakeAudit). It returns the reply queued.
func queueEvents(ctx context.Context, b *pgx.Batch, keys *kek.Ring, withReply bool) *cloud.IdempotencyRecord {
	events, audit := cloud.TakeEvents(ctx), cloud.TakeAudit(ctx)
	var reply *cloud.IdempotencyRecord
	if withReply {
		reply = cloud.TakeReply(ctx)
	}
	if reply != nil {
		sql, args := replyInsert(keys, reply)
		b.Queue(`WITH stored AS (`+sql+` RETURNING 1) SELECT idempotency_key_free(EXISTS (SELECT 1 FROM stored))`, args...)
	}
	for _, e := range events {
		b.Queue(`INSERT INTO events (org_id, mode, `+eventCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			e.Tenant.OrgID, string(e.Tenant.Mode), e.ID, e.Type, e.ObjectType, e.ObjectID, null(e.RequestID),
			[]byte(e.Data), e.CreatedAt)
		b.Queue(qFanOut, e.Tenant.OrgID, string(e.Tenant.Mode), e.ID, e.Type, e.CreatedAt)
	}
	for _, a := range audit {
		b.Queue(qInsertAudit, auditArgs(a.Tenant, a)...)
	}
	return reply
}

func scanEvent(row scanner, t cloud.Tenant) (cloud.Event, error) {
	e := cloud.Event{Tenant: t}
	var request pgtype.Text
	var data []byte
	if err := row.Scan(&e.ID, &e.Type, &e.ObjectType, &e.ObjectID, &request, &data, &e.CreatedAt); err != nil {
		return cloud.Event{}, err
	}
	e.RequestID, e.Data, e.CreatedAt = request.String, data, e.CreatedAt.UTC()
	return e, nil
}

// ListEvents implements cloud.Store.
func (s *Store) ListEvents(ctx context.Context, t cloud.Tenant, f cloud.EventFilter, p cloud.Page) ([]cloud.Event, bool, error) {
	l := newList(eventCols, "events", t)
	if f.Type != "" {
		l.where("type = $%d", f.Type)
	}
	if f.ObjectID != "" {
		l.where("object_id = $%d", f.ObjectID)
	}
	if f.CreatedGTE != nil {
		l.where("created_at >= $%d", *f.CreatedGTE)
	}
	if f.CreatedLT != nil {
		l.where("created_at < $%d", *f.CreatedLT)
	}
	if f.CreatedAfter != nil {
		l.where("created_at > $%d", *f.CreatedAfter)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.Event, error) {
		return scanEvent(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list events: %w", err)
	}
	return out, more, nil
}

// Event implements cloud.Store.
func (s *Store) Event(ctx context.Context, t cloud.Tenant, id string) (cloud.Event, error) {
	e, err := scanEvent(s.pool.QueryRow(ctx, `SELECT `+eventCols+` FROM events WHERE org_id = $1 AND mode = $2 AND id = $3`,
		t.OrgID, string(t.Mode), id), t)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Event{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Event{}, fmt.Errorf("get event: %w", err)
	}
	return e, nil
}

// scrubEvents rewrites the earlier events of the objects an erasure
// changed (cloud.TakeScrubs), so no event keeps the erased personal data.
func scrubEvents(ctx context.Context, tx pgx.Tx) error {
	t, scrubs, err := cloud.TakeScrubs(ctx)
	if err != nil {
		return fmt.Errorf("scrub events: %w", err)
	}
	for objectID, erased := range scrubs {
		type row struct {
			org, mode, id string
			data          []byte
		}
		rows, _ := tx.Query(ctx, `SELECT org_id, mode, id, data FROM events WHERE org_id = $1 AND mode = $2 AND object_id = $3`,
			t.OrgID, string(t.Mode), objectID)
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.org, &x.mode, &x.id, &x.data)
			return x, err
		})
		if err != nil {
			return fmt.Errorf("scrub events: %w", err)
		}
		for _, r := range found {
			data, err := cloud.ScrubEventData(r.data, erased)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE events SET data = $4 WHERE org_id = $1 AND mode = $2 AND id = $3`,
				r.org, r.mode, r.id, data); err != nil {
				return translate("scrub events", err)
			}
		}
	}
	return nil
}
