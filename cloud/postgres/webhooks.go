package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
)

// qFanOut queues an event's deliveries: one per enabled endpoint of its
// tenant subscribed to its type (or to "*").
const qFanOut = `INSERT INTO webhook_deliveries (endpoint_id, event_id, org_id, mode, event_type, status, next_attempt_at, created_at, updated_at)
	SELECT w.id, $3, w.org_id, w.mode, $4, 'pending', $5, $5, $5 FROM webhook_endpoints w
	WHERE w.org_id = $1 AND w.mode = $2 AND w.disabled_reason IS NULL AND w.event_types && ARRAY['*', $4::text]`

const endpointCols = `id, org_id, mode, url, description, event_types, disabled_reason, secret, prev_secret, prev_until, failing_since, created_at, updated_at`

// scanEndpoint reads an endpoint, its secrets opened.
func (s *Store) scanEndpoint(r scanner) (cloud.WebhookEndpoint, error) {
	var e cloud.WebhookEndpoint
	var mode string
	var reason, prev pgtype.Text
	var prevUntil, failing pgtype.Timestamptz
	if err := r.Scan(&e.ID, &e.Tenant.OrgID, &mode, &e.URL, &e.Description, &e.EventTypes, &reason, &e.Secret, &prev, &prevUntil,
		&failing, &e.CreatedAt, &e.UpdatedAt); err != nil {
		return e, err
	}
	e.Tenant.Mode, e.Disabled, e.DisabledReason, e.PrevSecret = cloud.Mode(mode), reason.Valid, reason.String, prev.String
	e.PrevUntil, e.FailingSince = timePtr(prevUntil), timePtr(failing)
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	var err error
	if e.Secret, err = storedoc.WebhookSecret.OpenString(s.kek, e.Secret, e.ID); err != nil {
		return e, err
	}
	if e.PrevSecret != "" {
		if e.PrevSecret, err = storedoc.WebhookPrevSecret.OpenString(s.kek, e.PrevSecret, e.ID); err != nil {
			return e, err
		}
	}
	return e, nil
}

// endpointArgs are an endpoint's columns in endpointCols's order, its
// secrets sealed.
func (s *Store) endpointArgs(e cloud.WebhookEndpoint) []any {
	var reason any
	if e.Disabled {
		reason = e.DisabledReason
	}
	secret := storedoc.WebhookSecret.SealString(s.kek, e.Secret, e.ID)
	var prev string
	if e.PrevSecret != "" {
		prev = storedoc.WebhookPrevSecret.SealString(s.kek, e.PrevSecret, e.ID)
	}
	return []any{e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.URL, e.Description, e.EventTypes, reason, secret,
		null(prev), nullTime(e.PrevUntil), nullTime(e.FailingSince), e.CreatedAt, e.UpdatedAt}
}

// CreateWebhookEndpoint implements cloud.Store.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, e cloud.WebhookEndpoint) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_endpoints (`+endpointCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			s.endpointArgs(e)...); err != nil {
			return translate("create webhook endpoint", err)
		}
		return nil
	})
}

func (s *Store) getEndpoint(ctx context.Context, q querier, t cloud.Tenant, id string, lock bool) (cloud.WebhookEndpoint, error) {
	sql := `SELECT ` + endpointCols + ` FROM webhook_endpoints WHERE org_id = $1 AND mode = $2 AND id = $3`
	if lock {
		sql += ` FOR UPDATE`
	}
	e, err := s.scanEndpoint(q.QueryRow(ctx, sql, t.OrgID, string(t.Mode), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, cloud.ErrNotFound
	}
	if err != nil {
		return e, fmt.Errorf("get webhook endpoint: %w", err)
	}
	return e, nil
}

// WebhookEndpoint implements cloud.Store.
func (s *Store) WebhookEndpoint(ctx context.Context, t cloud.Tenant, id string) (cloud.WebhookEndpoint, error) {
	return s.getEndpoint(ctx, s.pool, t, id, false)
}

func (s *Store) updateEndpointRow(ctx context.Context, tx pgx.Tx, e cloud.WebhookEndpoint) error {
	a := s.endpointArgs(e)
	if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET url = $4, description = $5, event_types = $6, disabled_reason = $7,
			secret = $8, prev_secret = $9, prev_until = $10, failing_since = $11, updated_at = $13
		WHERE id = $1 AND org_id = $2 AND mode = $3 AND created_at = $12`, a...); err != nil {
		return translate("update webhook endpoint", err)
	}
	return nil
}

// UpdateWebhookEndpoint implements cloud.Store.
func (s *Store) UpdateWebhookEndpoint(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.WebhookEndpoint) error) (cloud.WebhookEndpoint, error) {
	var out cloud.WebhookEndpoint
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		e, err := s.getEndpoint(ctx, tx, t, id, true)
		if err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
		out = e
		return s.updateEndpointRow(ctx, tx, e)
	})
	return out, err
}

// DeleteWebhookEndpoint implements cloud.Store. Its deliveries and
// attempts go with it (ON DELETE CASCADE).
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, t cloud.Tenant, id string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		r, err := tx.Exec(ctx, `DELETE FROM webhook_endpoints WHERE org_id = $1 AND mode = $2 AND id = $3`, t.OrgID, string(t.Mode), id)
		if err != nil {
			return translate("delete webhook endpoint", err)
		}
		if r.RowsAffected() == 0 {
			return cloud.ErrNotFound
		}
		return nil
	})
}

// ListWebhookEndpoints implements cloud.Store.
func (s *Store) ListWebhookEndpoints(ctx context.Context, t cloud.Tenant, p cloud.Page) ([]cloud.WebhookEndpoint, bool, error) {
	l := newList(endpointCols, "webhook_endpoints", t)
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.WebhookEndpoint, error) {
		return s.scanEndpoint(row)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list webhook endpoints: %w", err)
	}
	return out, more, nil
}

const deliveryCols = `org_id, mode, endpoint_id, event_id, event_type, status, attempts, step, next_attempt_at, last_attempt_at, last_status_code, created_at, updated_at`

func scanDelivery(r scanner) (cloud.WebhookDelivery, error) {
	var d cloud.WebhookDelivery
	var mode, status string
	var next, last pgtype.Timestamptz
	var code pgtype.Int4
	if err := r.Scan(&d.Tenant.OrgID, &mode, &d.EndpointID, &d.EventID, &d.EventType, &status, &d.Attempts, &d.Step, &next, &last,
		&code, &d.CreatedAt, &d.UpdatedAt); err != nil {
		return d, err
	}
	d.Tenant.Mode, d.Status, d.LastStatusCode = cloud.Mode(mode), cloud.DeliveryStatus(status), int(code.Int32)
	d.NextAttemptAt, d.LastAttemptAt = timePtr(next), timePtr(last)
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, nil
}

// ClaimWebhookDeliveries implements cloud.Store: the due rows are locked
// with FOR UPDATE SKIP LOCKED, so claimants in other processes skip what
// this one is claiming instead of waiting for it, then marked claimed
// until the lease ends, so none claims them again before.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, now, until time.Time, claim string, limit int) ([]cloud.WebhookJob, error) {
	var jobs []cloud.WebhookJob
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `WITH due AS (
				SELECT d.endpoint_id, d.event_id FROM webhook_deliveries d
				WHERE d.status = 'pending' AND d.next_attempt_at <= $1
					AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.id = d.endpoint_id AND w.disabled_reason IS NULL)
				ORDER BY d.next_attempt_at LIMIT $4
				FOR UPDATE OF d SKIP LOCKED)
			UPDATE webhook_deliveries d SET next_attempt_at = $2, claim = $3
			FROM due WHERE d.endpoint_id = due.endpoint_id AND d.event_id = due.event_id
			RETURNING `+qualified("d.", deliveryCols), now, until, claim, limit)
		ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.WebhookDelivery, error) { return scanDelivery(row) })
		if err != nil {
			return fmt.Errorf("claim webhook deliveries: %w", err)
		}
		endpoints := map[string]cloud.WebhookEndpoint{}
		for _, d := range ds {
			e, ok := endpoints[d.EndpointID]
			if !ok {
				if e, err = s.getEndpoint(ctx, tx, d.Tenant, d.EndpointID, false); err != nil {
					return fmt.Errorf("read claimed webhook deliveries: %w", err)
				}
				endpoints[d.EndpointID] = e
			}
			ev, err := scanEvent(tx.QueryRow(ctx, `SELECT `+eventCols+` FROM events WHERE org_id = $1 AND mode = $2 AND id = $3`,
				d.Tenant.OrgID, string(d.Tenant.Mode), d.EventID), d.Tenant)
			if err != nil {
				return fmt.Errorf("read claimed webhook deliveries: event %s: %w", d.EventID, err)
			}
			jobs = append(jobs, cloud.WebhookJob{Delivery: d, Endpoint: e, Event: ev, Claim: claim})
		}
		return nil
	})
	return jobs, err
}

// qualified prefixes each column of a ", "-separated list with p.
func qualified(p, cols string) string { return p + strings.ReplaceAll(cols, ", ", ", "+p) }

// CompleteWebhookDelivery implements cloud.Store.
func (s *Store) CompleteWebhookDelivery(ctx context.Context, claim string, a *cloud.WebhookAttempt, fn func(*cloud.WebhookDelivery, *cloud.WebhookEndpoint) error) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var held pgtype.Text
		d, err := scanDelivery(heldBy{tx.QueryRow(ctx, `SELECT `+deliveryCols+`, claim FROM webhook_deliveries
			WHERE endpoint_id = $1 AND event_id = $2 FOR UPDATE`, a.EndpointID, a.EventID), &held})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the endpoint was deleted meanwhile: nothing to record it on
		}
		if err != nil {
			return fmt.Errorf("complete webhook delivery: %w", err)
		}
		if held.String == claim && d.Status == cloud.DeliveryPending {
			// The endpoint is read without a lock and written only when fn
			// changed it (a failure, a first success after failures): the
			// common success neither waits for other completions of the
			// endpoint nor holds up the events that queue deliveries to it.
			e, err := s.getEndpoint(ctx, tx, d.Tenant, d.EndpointID, false)
			if err != nil {
				return err
			}
			before := e
			if err := fn(&d, &e); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = $3, attempts = $4, step = $5, next_attempt_at = $6,
					claim = NULL, last_attempt_at = $7, last_status_code = $8, updated_at = $9
				WHERE endpoint_id = $1 AND event_id = $2`, d.EndpointID, d.EventID, string(d.Status), d.Attempts, d.Step,
				nullTime(d.NextAttemptAt), nullTime(d.LastAttemptAt), nullInt(d.LastStatusCode), d.UpdatedAt); err != nil {
				return translate("complete webhook delivery", err)
			}
			if endpointChanged(before, e) {
				if err := s.updateEndpointRow(ctx, tx, e); err != nil {
					return err
				}
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (id, endpoint_id, event_id, org_id, mode, created_at, duration_us,
				status_code, error, succeeded, next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			a.ID, a.EndpointID, a.EventID, a.Tenant.OrgID, string(a.Tenant.Mode), a.AttemptedAt, a.Duration.Microseconds(),
			nullInt(a.StatusCode), null(a.Error), a.Succeeded, nullTime(a.NextAttemptAt)); err != nil {
			return translate("insert webhook attempt", err)
		}
		return nil
	})
}

// heldBy scans a delivery row followed by its claim column.
type heldBy struct {
	row   scanner
	claim *pgtype.Text
}

func (h heldBy) Scan(dest ...any) error { return h.row.Scan(append(dest, h.claim)...) }

// endpointChanged reports whether completing a delivery changed what is
// stored of its endpoint.
func endpointChanged(a, b cloud.WebhookEndpoint) bool {
	return a.Disabled != b.Disabled || a.DisabledReason != b.DisabledReason || !sameTime(a.FailingSince, b.FailingSince) ||
		!a.UpdatedAt.Equal(b.UpdatedAt)
}

func sameTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

func nullInt(v int) any {
	if v == 0 {
		return nil
	}
	return v
}

// WebhookDelivery implements cloud.Store.
func (s *Store) WebhookDelivery(ctx context.Context, t cloud.Tenant, endpointID, eventID string) (cloud.WebhookDelivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries
		WHERE org_id = $1 AND mode = $2 AND endpoint_id = $3 AND event_id = $4`, t.OrgID, string(t.Mode), endpointID, eventID))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, cloud.ErrNotFound
	}
	if err != nil {
		return d, fmt.Errorf("get webhook delivery: %w", err)
	}
	return d, nil
}

// ListWebhookDeliveries implements cloud.Store.
func (s *Store) ListWebhookDeliveries(ctx context.Context, t cloud.Tenant, endpointID string, f cloud.DeliveryFilter, p cloud.Page) ([]cloud.WebhookDelivery, bool, error) {
	l := newListOn(deliveryCols, "webhook_deliveries", "", "event_id", t)
	l.where("endpoint_id = $%d", endpointID)
	if f.Status != "" {
		l.where("status = $%d", string(f.Status))
	}
	if f.EventID != "" {
		l.where("event_id = $%d", f.EventID)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.WebhookDelivery, error) {
		return scanDelivery(row)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return out, more, nil
}

func scanAttempt(r scanner) (cloud.WebhookAttempt, error) {
	var a cloud.WebhookAttempt
	var mode string
	var code pgtype.Int4
	var errText pgtype.Text
	var next pgtype.Timestamptz
	var dur int64
	if err := r.Scan(&a.ID, &a.EndpointID, &a.EventID, &a.Tenant.OrgID, &mode, &a.AttemptedAt, &dur, &code, &errText, &a.Succeeded, &next); err != nil {
		return a, err
	}
	a.Tenant.Mode, a.AttemptedAt, a.Duration = cloud.Mode(mode), a.AttemptedAt.UTC(), time.Duration(dur)*time.Microsecond
	a.StatusCode, a.Error, a.NextAttemptAt = int(code.Int32), errText.String, timePtr(next)
	return a, nil
}

// ListWebhookAttempts implements cloud.Store.
func (s *Store) ListWebhookAttempts(ctx context.Context, t cloud.Tenant, endpointID string, f cloud.AttemptFilter, p cloud.Page) ([]cloud.WebhookAttempt, bool, error) {
	l := newList(`id, endpoint_id, event_id, org_id, mode, created_at, duration_us, status_code, error, succeeded, next_attempt_at`,
		"webhook_attempts", t)
	l.where("endpoint_id = $%d", endpointID)
	if f.EventID != "" {
		l.where("event_id = $%d", f.EventID)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.WebhookAttempt, error) {
		return scanAttempt(row)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list webhook attempts: %w", err)
	}
	return out, more, nil
}

// ResendWebhookDeliveries implements cloud.Store.
func (s *Store) ResendWebhookDeliveries(ctx context.Context, t cloud.Tenant, endpointID string, f cloud.ResendFilter, now time.Time, step int, fn func(int64) error) (int64, error) {
	q := `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $5, step = $6, claim = NULL, updated_at = $5
		WHERE org_id = $1 AND mode = $2 AND endpoint_id = $3`
	args := []any{t.OrgID, string(t.Mode), endpointID}
	switch {
	case f.EventID != "":
		q += ` AND event_id = $4 AND status <> 'pending'`
		args = append(args, f.EventID)
	case f.Since != nil:
		q += ` AND status = 'failed' AND created_at >= $4`
		args = append(args, *f.Since)
	default:
		return 0, errors.New("resend webhook deliveries: no event and no time given")
	}
	args = append(args, now, step)
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		r, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return translate("resend webhook deliveries", err)
		}
		n = r.RowsAffected()
		if fn != nil {
			return fn(n)
		}
		return nil
	})
	return n, err
}
