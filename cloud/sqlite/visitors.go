package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svc-vms/svc/cloud"
)

const visitorCols = `id, org_id, mode, name, email, phone, company, self_registered, created_at, updated_at`

func scanVisitor(r scanner) (cloud.Visitor, error) {
	var v cloud.Visitor
	var mode string
	var email, phone, company sql.NullString
	var created, updated int64
	err := r.Scan(&v.ID, &v.Tenant.OrgID, &mode, &v.Name, &email, &phone, &company, &v.SelfRegistered, &created, &updated)
	v.Tenant.Mode, v.Email, v.Phone, v.Company = cloud.Mode(mode), str(email), str(phone), str(company)
	v.CreatedAt, v.UpdatedAt = fromMicros(created), fromMicros(updated)
	return v, err
}

// visitorArgs are the values of name, email, email_fold, phone, company
// and updated_at.
func visitorArgs(v cloud.Visitor) []any {
	var emailFold any
	if v.Email != "" {
		emailFold = cloud.Fold(v.Email)
	}
	return []any{v.Name, null(v.Email), emailFold, null(v.Phone), null(v.Company), micros(v.UpdatedAt)}
}

// insertVisitor stores a new visitor in the tenant t.
func insertVisitor(ctx context.Context, tx *sql.Tx, t cloud.Tenant, v cloud.Visitor) error {
	args := append([]any{v.ID, t.OrgID, string(t.Mode), micros(v.CreatedAt), v.SelfRegistered}, visitorArgs(v)...)
	_, err := tx.ExecContext(ctx, `INSERT INTO visitors (id, org_id, mode, created_at, self_registered, name, email, email_fold, phone, company, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	if err != nil {
		return fmt.Errorf("insert visitor: %w", err)
	}
	return nil
}

// Visitor implements cloud.Store.
func (s *Store) Visitor(ctx context.Context, t cloud.Tenant, id string) (cloud.Visitor, error) {
	return get(ctx, s.r, scanVisitor, `SELECT `+visitorCols+` FROM visitors WHERE id = ? AND org_id = ? AND mode = ?`,
		id, t.OrgID, string(t.Mode))
}

// FindVisitor implements cloud.Store. A non-empty email is the only thing
// compared, even when it matches no one and the phone would.
func (s *Store) FindVisitor(ctx context.Context, t cloud.Tenant, email, phone string) (cloud.Visitor, error) {
	const order = ` AND self_registered = 0 ORDER BY created_at DESC, id DESC LIMIT 1`
	switch {
	case email != "":
		return get(ctx, s.r, scanVisitor, `SELECT `+visitorCols+` FROM visitors WHERE org_id = ? AND mode = ? AND email_fold = ?`+order,
			t.OrgID, string(t.Mode), cloud.Fold(email))
	case phone != "":
		return get(ctx, s.r, scanVisitor, `SELECT `+visitorCols+` FROM visitors WHERE org_id = ? AND mode = ? AND phone = ?`+order,
			t.OrgID, string(t.Mode), phone)
	}
	return cloud.Visitor{}, cloud.ErrNotFound
}

// UpdateVisitor implements cloud.Store.
func (s *Store) UpdateVisitor(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Visitor) error) (cloud.Visitor, error) {
	return update(ctx, s, func(tx *sql.Tx) (cloud.Visitor, error) {
		return get(ctx, tx, scanVisitor, `SELECT `+visitorCols+` FROM visitors WHERE id = ? AND org_id = ? AND mode = ?`,
			id, t.OrgID, string(t.Mode))
	}, fn, func(tx *sql.Tx, v cloud.Visitor) error {
		_, err := tx.ExecContext(ctx, `UPDATE visitors SET name = ?, email = ?, email_fold = ?, phone = ?, company = ?, updated_at = ?
			WHERE id = ?`, append(visitorArgs(v), id)...)
		return err
	})
}

// EraseVisitor implements cloud.Store. The visits and bookings keep their
// visitor_id; read afterwards, their Visitor is empty.
func (s *Store) EraseVisitor(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Visit), bfn func(*cloud.Booking)) error {
	return s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		var email, phone sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT email, phone FROM visitors WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode)).Scan(&email, &phone)
		if errors.Is(err, sql.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		visits, err := visitsOf(ctx, tx, t, id)
		if err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		vids := make([]string, 0, len(visits))
		for _, v := range visits {
			vid, before := v.ID, keysOf(v)
			fn(&v)
			if err := updateVisitRow(ctx, tx, f, t, before, v); err != nil {
				return fmt.Errorf("erase visitor: %w", err)
			}
			vids = append(vids, vid)
		}
		// The feed keeps no name of the visitor either: the changes this
		// erasure appends have none, and the earlier ones lose theirs.
		if err := scrubVisitorName(ctx, tx, t, vids); err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		bookings, err := bookingsOf(ctx, tx, t, id)
		if err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		for _, b := range bookings {
			bid := b.ID
			bfn(&b)
			if err := updateBookingRow(ctx, tx, t, bid, b); err != nil {
				return fmt.Errorf("erase visitor: %w", err)
			}
		}
		// The outbox goes too: messages about the visitor's visits, and
		// those sent to the visitor's address or number.
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE org_id = ? AND mode = ? AND
			(visit_id IN (SELECT id FROM visits WHERE org_id = ? AND mode = ? AND visitor_id = ?) OR to_addr = ? OR to_addr = ?)`,
			t.OrgID, string(t.Mode), t.OrgID, string(t.Mode), id, email, phone); err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM visitors WHERE id = ?`, id); err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		return nil
	})
}
