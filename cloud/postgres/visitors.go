package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/svc-vms/svc/cloud"
)

const visitorCols = `id, name, email, phone, company, self_registered, created_at, updated_at`

func scanVisitor(row scanner, t cloud.Tenant) (cloud.Visitor, error) {
	v := cloud.Visitor{Tenant: t}
	var email, phone, company pgtype.Text
	if err := row.Scan(&v.ID, &v.Name, &email, &phone, &company, &v.SelfRegistered, &v.CreatedAt, &v.UpdatedAt); err != nil {
		return cloud.Visitor{}, err
	}
	v.Email, v.Phone, v.Company = email.String, phone.String, company.String
	v.CreatedAt, v.UpdatedAt = v.CreatedAt.UTC(), v.UpdatedAt.UTC()
	return v, nil
}

// visitorArgs are $1..$10: org_id, mode, id, name, email, email_fold,
// phone, company, created_at, updated_at.
func visitorArgs(t cloud.Tenant, id string, v cloud.Visitor) []any {
	var emailFold any
	if v.Email != "" {
		emailFold = cloud.Fold(v.Email)
	}
	return []any{t.OrgID, string(t.Mode), id, v.Name, null(v.Email), emailFold, null(v.Phone), null(v.Company),
		v.CreatedAt, v.UpdatedAt}
}

// qInsertVisitor stores a new visitor: visitorArgs, then self_registered.
const qInsertVisitor = `INSERT INTO visitors (org_id, mode, id, name, email, email_fold, phone, company, created_at, updated_at,
		self_registered)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// insertVisitor stores a new visitor in the tenant t.
func insertVisitor(ctx context.Context, q querier, t cloud.Tenant, v cloud.Visitor) error {
	_, err := q.Exec(ctx, qInsertVisitor, append(visitorArgs(t, v.ID, v), v.SelfRegistered)...)
	if err != nil {
		return translate("create visitor", err)
	}
	return nil
}

// Visitor implements cloud.Store.
func (s *Store) Visitor(ctx context.Context, t cloud.Tenant, id string) (cloud.Visitor, error) {
	v, err := scanVisitor(s.pool.QueryRow(ctx, `SELECT `+visitorCols+` FROM visitors WHERE org_id = $1 AND mode = $2 AND id = $3`,
		t.OrgID, string(t.Mode), id), t)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Visitor{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Visitor{}, fmt.Errorf("get visitor: %w", err)
	}
	return v, nil
}

// FindVisitor implements cloud.Store. A non-empty email is the only thing
// compared, even when it matches no one and the phone would.
func (s *Store) FindVisitor(ctx context.Context, t cloud.Tenant, email, phone string) (cloud.Visitor, error) {
	q, arg, ok := findVisitor(email, phone)
	if !ok {
		return cloud.Visitor{}, cloud.ErrNotFound
	}
	if v, err, ok := takeAhead[cloud.Visitor](s.bound(ctx), aheadVisitor, t, email, phone); ok {
		return v, err
	}
	return findVisitorRead(t)(s.pool.QueryRow(ctx, q, t.OrgID, string(t.Mode), arg))
}

// findVisitor is FindVisitor's statement and its third argument: by
// email when there is one, else by phone; ok false when neither is given.
func findVisitor(email, phone string) (q, arg string, ok bool) {
	var cond string
	switch {
	case email != "":
		cond, arg = "email_fold", cloud.Fold(email)
	case phone != "":
		cond, arg = "phone", phone
	default:
		return "", "", false
	}
	return `SELECT ` + visitorCols + ` FROM visitors WHERE org_id = $1 AND mode = $2 AND ` + cond + ` = $3
		AND NOT self_registered ORDER BY created_at DESC, id DESC LIMIT 1`, arg, true
}

// findVisitorRead reads findVisitor's row as FindVisitor returns it.
func findVisitorRead(t cloud.Tenant) func(pgx.Row) (cloud.Visitor, error) {
	return oneRow(scanVisitor, t, "find visitor")
}

// UpdateVisitor implements cloud.Store.
func (s *Store) UpdateVisitor(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Visitor) error) (cloud.Visitor, error) {
	var out cloud.Visitor
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		v, err := scanVisitor(tx.QueryRow(ctx, `SELECT `+visitorCols+` FROM visitors WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
			t.OrgID, string(t.Mode), id), t)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("update visitor: %w", err)
		}
		if err := fn(&v); err != nil {
			return err
		}
		args := slices.Delete(visitorArgs(t, id, v), 8, 9) // created_at is not updated
		out, err = scanVisitor(tx.QueryRow(ctx, `UPDATE visitors SET name = $4, email = $5, email_fold = $6, phone = $7,
				company = $8, updated_at = $9
			WHERE org_id = $1 AND mode = $2 AND id = $3 RETURNING `+visitorCols, args...), t)
		if err != nil {
			return translate("update visitor", err)
		}
		return nil
	})
	if err != nil {
		return cloud.Visitor{}, err
	}
	return out, nil
}

// EraseVisitor implements cloud.Store. The visitor's row is locked first,
// then its visits, each rewritten after fn, then its bookings, each
// rewritten after bfn; the visits and bookings keep their visitor_id and,
// read afterwards, have an empty Visitor.
func (s *Store) EraseVisitor(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.Visit), bfn func(*cloud.Booking)) error {
	return s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		var email, phone *string
		err := tx.QueryRow(ctx, `SELECT email, phone FROM visitors WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`,
			t.OrgID, string(t.Mode), id).Scan(&email, &phone)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		rows, _ := tx.Query(ctx, `SELECT `+visitCols+` FROM `+visitFrom+`
			WHERE v.org_id = $1 AND v.mode = $2 AND v.visitor_id = $3 FOR UPDATE OF v`, t.OrgID, string(t.Mode), id)
		visits, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Visit, error) { return scanVisit(row, t) })
		if err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		vids := make([]string, 0, len(visits))
		for _, v := range visits {
			vid, before := v.ID, hostIDs(v)
			fn(&v)
			if err := updateVisitRow(ctx, tx, f, t, vid, before, v); err != nil {
				return fmt.Errorf("erase visitor: %w", err)
			}
			vids = append(vids, vid)
		}
		// The feed keeps no name of the visitor either: the changes this
		// erasure appends have none, and the earlier ones lose theirs.
		if err := scrubVisitorName(ctx, tx, t, vids); err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		rows, _ = tx.Query(ctx, `SELECT `+bookingCols+` FROM `+bookingFrom+`
			WHERE b.org_id = $1 AND b.mode = $2 AND b.visitor_id = $3 FOR UPDATE OF b`, t.OrgID, string(t.Mode), id)
		bookings, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cloud.Booking, error) { return scanBooking(row, t) })
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
		if _, err := tx.Exec(ctx, `DELETE FROM messages WHERE org_id = $1 AND mode = $2 AND
			(visit_id IN (SELECT id FROM visits WHERE org_id = $1 AND mode = $2 AND visitor_id = $3) OR to_addr = $4 OR to_addr = $5)`,
			t.OrgID, string(t.Mode), id, email, phone); err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM visitors WHERE org_id = $1 AND mode = $2 AND id = $3`, t.OrgID, string(t.Mode), id); err != nil {
			return fmt.Errorf("erase visitor: %w", err)
		}
		return nil
	})
}
