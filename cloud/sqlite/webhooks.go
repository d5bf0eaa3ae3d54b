package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
)

// fanOut returns the statement that queues the deliveries of n events,
// given as n rows of (id, type, created_at, org_id, mode): one per event
// and enabled endpoint of its tenant subscribed to its type (or to "*"),
// event by event in the order given.
func fanOut(n int) string {
	return `WITH e (id, type, at, org_id, mode) AS (VALUES ` + rowsOf(n, 5) + `)
	INSERT INTO webhook_deliveries (endpoint_id, event_id, org_id, mode, event_type, status, next_attempt_at, created_at, updated_at)
	SELECT w.id, e.id, w.org_id, w.mode, e.type, 'pending', e.at, e.at, e.at FROM e CROSS JOIN webhook_endpoints w
	WHERE w.org_id = e.org_id AND w.mode = e.mode AND w.disabled_reason IS NULL
		AND EXISTS (SELECT 1 FROM json_each(w.event_types) WHERE value IN ('*', e.type))`
}

const endpointCols = `id, org_id, mode, url, description, event_types, disabled_reason, secret, prev_secret, prev_until, failing_since, created_at, updated_at`

// scanEndpoint reads an endpoint, its secrets opened.
func (s *Store) scanEndpoint(r scanner) (cloud.WebhookEndpoint, error) {
	var e cloud.WebhookEndpoint
	var mode, types string
	var reason, prev sql.NullString
	var prevUntil, failing sql.NullInt64
	var created, updated int64
	if err := r.Scan(&e.ID, &e.Tenant.OrgID, &mode, &e.URL, &e.Description, &types, &reason, &e.Secret, &prev, &prevUntil,
		&failing, &created, &updated); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(types), &e.EventTypes); err != nil {
		return e, fmt.Errorf("endpoint %s: event types: %w", e.ID, err)
	}
	e.Tenant.Mode, e.Disabled, e.DisabledReason, e.PrevSecret = cloud.Mode(mode), reason.Valid, reason.String, prev.String
	e.PrevUntil, e.FailingSince = fromNullMicros(prevUntil), fromNullMicros(failing)
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
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
	types, _ := json.Marshal(e.EventTypes)
	var reason any
	if e.Disabled {
		reason = e.DisabledReason
	}
	secret := storedoc.WebhookSecret.SealString(s.kek, e.Secret, e.ID)
	var prev string
	if e.PrevSecret != "" {
		prev = storedoc.WebhookPrevSecret.SealString(s.kek, e.PrevSecret, e.ID)
	}
	return []any{e.ID, e.Tenant.OrgID, string(e.Tenant.Mode), e.URL, e.Description, string(types), reason, secret,
		null(prev), nullMicros(e.PrevUntil), nullMicros(e.FailingSince), micros(e.CreatedAt), micros(e.UpdatedAt)}
}

// CreateWebhookEndpoint implements cloud.Store.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, e cloud.WebhookEndpoint) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_endpoints (`+endpointCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.endpointArgs(e)...); err != nil {
			return fmt.Errorf("insert webhook endpoint: %w", err)
		}
		return nil
	})
}

func (s *Store) getEndpoint(ctx context.Context, q rowQuerier, t cloud.Tenant, id string) (cloud.WebhookEndpoint, error) {
	e, err := s.scanEndpoint(q.QueryRowContext(ctx, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE id = ? AND org_id = ? AND mode = ?`,
		id, t.OrgID, string(t.Mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return e, cloud.ErrNotFound
	}
	if err != nil {
		return e, fmt.Errorf("get webhook endpoint: %w", err)
	}
	return e, nil
}

// rowQuerier is what the read pool and a transaction share for one row.
type rowQuerier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// WebhookEndpoint implements cloud.Store.
func (s *Store) WebhookEndpoint(ctx context.Context, t cloud.Tenant, id string) (cloud.WebhookEndpoint, error) {
	return s.getEndpoint(ctx, s.r, t, id)
}

func (s *Store) updateEndpointRow(ctx context.Context, tx *sql.Tx, e cloud.WebhookEndpoint) error {
	a := s.endpointArgs(e)
	_, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET url = ?, description = ?, event_types = ?, disabled_reason = ?,
			secret = ?, prev_secret = ?, prev_until = ?, failing_since = ?, updated_at = ?
		WHERE id = ? AND org_id = ? AND mode = ?`, append(a[3:11], a[12], a[0], a[1], a[2])...)
	if err != nil {
		return fmt.Errorf("update webhook endpoint: %w", err)
	}
	return nil
}

// UpdateWebhookEndpoint implements cloud.Store.
func (s *Store) UpdateWebhookEndpoint(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.WebhookEndpoint) error) (cloud.WebhookEndpoint, error) {
	return update(ctx, s, func(tx *sql.Tx) (cloud.WebhookEndpoint, error) { return s.getEndpoint(ctx, tx, t, id) }, fn,
		func(tx *sql.Tx, e cloud.WebhookEndpoint) error { return s.updateEndpointRow(ctx, tx, e) })
}

// DeleteWebhookEndpoint implements cloud.Store.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, t cloud.Tenant, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{`DELETE FROM webhook_attempts WHERE endpoint_id = ? AND org_id = ? AND mode = ?`,
			`DELETE FROM webhook_deliveries WHERE endpoint_id = ? AND org_id = ? AND mode = ?`} {
			if _, err := tx.ExecContext(ctx, q, id, t.OrgID, string(t.Mode)); err != nil {
				return fmt.Errorf("delete webhook endpoint: %w", err)
			}
		}
		r, err := tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
		if err != nil {
			return fmt.Errorf("delete webhook endpoint: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return cloud.ErrNotFound
		}
		return nil
	})
}

// ListWebhookEndpoints implements cloud.Store.
func (s *Store) ListWebhookEndpoints(ctx context.Context, t cloud.Tenant, p cloud.Page) ([]cloud.WebhookEndpoint, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + endpointCols + ` FROM webhook_endpoints WHERE org_id = ? AND mode = ?`)
	args := keyset(&q, []any{t.OrgID, string(t.Mode)}, p, "")
	out, more, err := list(ctx, s.r, s.scanEndpoint, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list webhook endpoints: %w", err)
	}
	return out, more, nil
}

const deliveryCols = `org_id, mode, endpoint_id, event_id, event_type, status, attempts, step, next_attempt_at, last_attempt_at, last_status_code, created_at, updated_at`

func scanDelivery(r scanner) (cloud.WebhookDelivery, error) {
	var d cloud.WebhookDelivery
	var mode, status string
	var next, last, code sql.NullInt64
	var created, updated int64
	if err := r.Scan(&d.Tenant.OrgID, &mode, &d.EndpointID, &d.EventID, &d.EventType, &status, &d.Attempts, &d.Step, &next, &last,
		&code, &created, &updated); err != nil {
		return d, err
	}
	d.Tenant.Mode, d.Status, d.LastStatusCode = cloud.Mode(mode), cloud.DeliveryStatus(status), int(code.Int64)
	d.NextAttemptAt, d.LastAttemptAt = fromNullMicros(next), fromNullMicros(last)
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	return d, nil
}

// ClaimWebhookDeliveries implements cloud.Store. SQLite has one writer at
// a time, so the claim's update is its lock.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, now, until time.Time, claim string, limit int) ([]cloud.WebhookJob, error) {
	var jobs []cloud.WebhookJob
	// The dispatcher claims after every commit with events: its call
	// writes without a savepoint, as a request's, and may run twice.
	err := s.rerunTx(ctx, func(tx *sql.Tx) error {
		jobs = nil
		r, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = ?, claim = ?
			WHERE rowid IN (SELECT d.rowid FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
				WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND w.disabled_reason IS NULL
				ORDER BY d.next_attempt_at LIMIT ?)`, micros(until), claim, micros(now), limit)
		if err != nil {
			return fmt.Errorf("claim webhook deliveries: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return nil
		}
		ds, _, err := list(ctx, tx, scanDelivery, limit, `SELECT `+deliveryCols+` FROM webhook_deliveries
			WHERE claim = ? ORDER BY created_at, event_id LIMIT ?`, claim, limit+1)
		if err != nil {
			return fmt.Errorf("read claimed webhook deliveries: %w", err)
		}
		endpoints := map[string]cloud.WebhookEndpoint{}
		for _, d := range ds {
			e, ok := endpoints[d.EndpointID]
			if !ok {
				if e, err = s.getEndpoint(ctx, tx, d.Tenant, d.EndpointID); err != nil {
					return fmt.Errorf("read claimed webhook deliveries: %w", err)
				}
				endpoints[d.EndpointID] = e
			}
			ev, err := scanEvent(tx.QueryRowContext(ctx, `SELECT `+eventCols+` FROM events WHERE id = ?`, d.EventID))
			if err != nil {
				return fmt.Errorf("read claimed webhook deliveries: event %s: %w", d.EventID, err)
			}
			jobs = append(jobs, cloud.WebhookJob{Delivery: d, Endpoint: e, Event: ev, Claim: claim})
		}
		return nil
	})
	return jobs, err
}

// CompleteWebhookDelivery implements cloud.Store.
func (s *Store) CompleteWebhookDelivery(ctx context.Context, claim string, a *cloud.WebhookAttempt, fn func(*cloud.WebhookDelivery, *cloud.WebhookEndpoint) error) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var held sql.NullString
		d, err := scanDelivery(heldBy{tx.QueryRowContext(ctx, `SELECT `+deliveryCols+`, claim FROM webhook_deliveries
			WHERE endpoint_id = ? AND event_id = ?`, a.EndpointID, a.EventID), &held})
		if errors.Is(err, sql.ErrNoRows) {
			return nil // the endpoint was deleted meanwhile: nothing to record it on
		}
		if err != nil {
			return fmt.Errorf("complete webhook delivery: %w", err)
		}
		if held.String == claim && d.Status == cloud.DeliveryPending {
			e, err := s.getEndpoint(ctx, tx, d.Tenant, d.EndpointID)
			if err != nil {
				return err
			}
			if err := fn(&d, &e); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = ?, step = ?, next_attempt_at = ?,
					claim = NULL, last_attempt_at = ?, last_status_code = ?, updated_at = ?
				WHERE endpoint_id = ? AND event_id = ?`, string(d.Status), d.Attempts, d.Step, nullMicros(d.NextAttemptAt),
				nullMicros(d.LastAttemptAt), nullInt(d.LastStatusCode), micros(d.UpdatedAt), d.EndpointID, d.EventID); err != nil {
				return fmt.Errorf("complete webhook delivery: %w", err)
			}
			if err := s.updateEndpointRow(ctx, tx, e); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts (id, endpoint_id, event_id, org_id, mode, created_at, duration_us,
				status_code, error, succeeded, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.EndpointID, a.EventID, a.Tenant.OrgID, string(a.Tenant.Mode), micros(a.AttemptedAt), a.Duration.Microseconds(),
			nullInt(a.StatusCode), null(a.Error), a.Succeeded, nullMicros(a.NextAttemptAt)); err != nil {
			return fmt.Errorf("insert webhook attempt: %w", err)
		}
		return nil
	})
}

// heldBy scans a delivery row followed by its claim column.
type heldBy struct {
	row   scanner
	claim *sql.NullString
}

func (h heldBy) Scan(dest ...any) error { return h.row.Scan(append(dest, h.claim)...) }

func nullInt(v int) any {
	if v == 0 {
		return nil
	}
	return v
}

// WebhookDelivery implements cloud.Store.
func (s *Store) WebhookDelivery(ctx context.Context, t cloud.Tenant, endpointID, eventID string) (cloud.WebhookDelivery, error) {
	d, err := scanDelivery(s.r.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries
		WHERE endpoint_id = ? AND event_id = ? AND org_id = ? AND mode = ?`, endpointID, eventID, t.OrgID, string(t.Mode)))
	if errors.Is(err, sql.ErrNoRows) {
		return d, cloud.ErrNotFound
	}
	if err != nil {
		return d, fmt.Errorf("get webhook delivery: %w", err)
	}
	return d, nil
}

// ListWebhookDeliveries implements cloud.Store.
func (s *Store) ListWebhookDeliveries(ctx context.Context, t cloud.Tenant, endpointID string, f cloud.DeliveryFilter, p cloud.Page) ([]cloud.WebhookDelivery, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE endpoint_id = ? AND org_id = ? AND mode = ?`)
	args := []any{endpointID, t.OrgID, string(t.Mode)}
	if f.Status != "" {
		q.WriteString(` AND status = ?`)
		args = append(args, string(f.Status))
	}
	if f.EventID != "" {
		q.WriteString(` AND event_id = ?`)
		args = append(args, f.EventID)
	}
	args = keysetOn(&q, args, p, "", "event_id")
	out, more, err := list(ctx, s.r, scanDelivery, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return out, more, nil
}

func scanAttempt(r scanner) (cloud.WebhookAttempt, error) {
	var a cloud.WebhookAttempt
	var mode string
	var code, next sql.NullInt64
	var errText sql.NullString
	var at, dur int64
	if err := r.Scan(&a.ID, &a.EndpointID, &a.EventID, &a.Tenant.OrgID, &mode, &at, &dur, &code, &errText, &a.Succeeded, &next); err != nil {
		return a, err
	}
	a.Tenant.Mode, a.AttemptedAt, a.Duration = cloud.Mode(mode), fromMicros(at), time.Duration(dur)*time.Microsecond
	a.StatusCode, a.Error, a.NextAttemptAt = int(code.Int64), errText.String, fromNullMicros(next)
	return a, nil
}

// ListWebhookAttempts implements cloud.Store.
func (s *Store) ListWebhookAttempts(ctx context.Context, t cloud.Tenant, endpointID string, f cloud.AttemptFilter, p cloud.Page) ([]cloud.WebhookAttempt, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT id, endpoint_id, event_id, org_id, mode, created_at, duration_us, status_code, error, succeeded, next_attempt_at
		FROM webhook_attempts WHERE endpoint_id = ? AND org_id = ? AND mode = ?`)
	args := []any{endpointID, t.OrgID, string(t.Mode)}
	if f.EventID != "" {
		q.WriteString(` AND event_id = ?`)
		args = append(args, f.EventID)
	}
	args = keyset(&q, args, p, "")
	out, more, err := list(ctx, s.r, scanAttempt, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list webhook attempts: %w", err)
	}
	return out, more, nil
}

// ResendWebhookDeliveries implements cloud.Store.
func (s *Store) ResendWebhookDeliveries(ctx context.Context, t cloud.Tenant, endpointID string, f cloud.ResendFilter, now time.Time, step int, fn func(int64) error) (int64, error) {
	q := `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, step = ?, claim = NULL, updated_at = ?
		WHERE endpoint_id = ? AND org_id = ? AND mode = ?`
	args := []any{micros(now), step, micros(now), endpointID, t.OrgID, string(t.Mode)}
	switch {
	case f.EventID != "":
		q += ` AND event_id = ? AND status <> 'pending'`
		args = append(args, f.EventID)
	case f.Since != nil:
		q += ` AND status = 'failed' AND created_at >= ?`
		args = append(args, micros(*f.Since))
	default:
		return 0, errors.New("resend webhook deliveries: no event and no time given")
	}
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("resend webhook deliveries: %w", err)
		}
		if n, err = r.RowsAffected(); err != nil {
			return err
		}
		if fn != nil {
			return fn(n)
		}
		return nil
	})
	return n, err
}
