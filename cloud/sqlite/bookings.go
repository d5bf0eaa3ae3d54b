package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
)

// --- booking types ---------------------------------------------------------

const bookingTypeCols = `id, org_id, mode, name, site_id, visit_type, public, requires_confirmation, confirmation_window_hours,
	slot_minutes, capacity, hours, host_id, team_id, archived, created_at, updated_at`

func scanBookingType(r scanner) (cloud.BookingType, error) {
	var bt cloud.BookingType
	var mode, hours string
	var host, team sql.NullString
	var created, updated int64
	err := r.Scan(&bt.ID, &bt.Tenant.OrgID, &mode, &bt.Name, &bt.SiteID, &bt.VisitType, &bt.Public, &bt.RequiresConfirmation,
		&bt.ConfirmationWindowHours, &bt.SlotMinutes, &bt.Capacity, &hours, &host, &team, &bt.Archived, &created, &updated)
	if err != nil {
		return bt, err
	}
	bt.Tenant.Mode, bt.HostID, bt.TeamID = cloud.Mode(mode), str(host), str(team)
	bt.CreatedAt, bt.UpdatedAt = fromMicros(created), fromMicros(updated)
	bt.Hours, err = storedoc.DecodeHours([]byte(hours))
	return bt, err
}

// bookingTypeArgs are the values of name, site_id, visit_type, public,
// requires_confirmation, confirmation_window_hours, slot_minutes,
// capacity, hours, host_id, team_id, archived and updated_at.
func bookingTypeArgs(bt cloud.BookingType) ([]any, error) {
	hours, err := storedoc.EncodeHours(bt.Hours)
	if err != nil {
		return nil, err
	}
	return []any{bt.Name, bt.SiteID, bt.VisitType, boolInt(bt.Public), boolInt(bt.RequiresConfirmation),
		bt.ConfirmationWindowHours, bt.SlotMinutes, bt.Capacity, string(hours), null(bt.HostID), null(bt.TeamID),
		boolInt(bt.Archived), micros(bt.UpdatedAt)}, nil
}

// CreateBookingType implements cloud.Store.
func (s *Store) CreateBookingType(ctx context.Context, bt cloud.BookingType) error {
	args, err := bookingTypeArgs(bt)
	if err != nil {
		return fmt.Errorf("create booking type: %w", err)
	}
	args = append([]any{bt.ID, bt.Tenant.OrgID, string(bt.Tenant.Mode), micros(bt.CreatedAt)}, args...)
	// A transaction, not one statement, for the write's idempotency record.
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO booking_types (id, org_id, mode, created_at, name, site_id, visit_type, public,
				requires_confirmation, confirmation_window_hours, slot_minutes, capacity, hours, host_id, team_id, archived, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
		if err != nil {
			return fmt.Errorf("create booking type: %w", err)
		}
		return nil
	})
}

func getBookingType(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t cloud.Tenant, id string) (cloud.BookingType, error) {
	return get(ctx, db, scanBookingType, `SELECT `+bookingTypeCols+` FROM booking_types WHERE id = ? AND org_id = ? AND mode = ?`,
		id, t.OrgID, string(t.Mode))
}

// BookingType implements cloud.Store.
func (s *Store) BookingType(ctx context.Context, t cloud.Tenant, id string) (cloud.BookingType, error) {
	return getBookingType(ctx, s.r, t, id)
}

// UpdateBookingType implements cloud.Store.
func (s *Store) UpdateBookingType(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.BookingType) error) (cloud.BookingType, error) {
	return update(ctx, s, func(tx *sql.Tx) (cloud.BookingType, error) {
		return getBookingType(ctx, tx, t, id)
	}, fn, func(tx *sql.Tx, bt cloud.BookingType) error {
		args, err := bookingTypeArgs(bt)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE booking_types SET name = ?, site_id = ?, visit_type = ?, public = ?,
				requires_confirmation = ?, confirmation_window_hours = ?, slot_minutes = ?, capacity = ?, hours = ?, host_id = ?,
				team_id = ?, archived = ?, updated_at = ?
			WHERE id = ? AND org_id = ? AND mode = ?`, append(args, id, t.OrgID, string(t.Mode))...)
		return err
	})
}

// ListBookingTypes implements cloud.Store. Public types are never
// archived, whatever IncludeArchived says.
func (s *Store) ListBookingTypes(ctx context.Context, t cloud.Tenant, f cloud.BookingTypeFilter, p cloud.Page) ([]cloud.BookingType, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + bookingTypeCols + ` FROM booking_types WHERE org_id = ? AND mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if f.SiteID != "" {
		q.WriteString(` AND site_id = ?`)
		args = append(args, f.SiteID)
	}
	if f.Public {
		q.WriteString(` AND public = 1`)
	}
	if f.Public || !f.IncludeArchived {
		q.WriteString(` AND archived = 0`)
	}
	args = keyset(&q, args, p, "")
	out, more, err := list(ctx, s.r, scanBookingType, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list booking types: %w", err)
	}
	return out, more, nil
}

// --- bookings --------------------------------------------------------------

// bookingCols and bookingFrom read a booking with its visitor, who may
// have been erased.
const (
	bookingCols = `b.id, b.org_id, b.mode, b.type_id, b.site_id, b.visitor_id, b.status, b.starts_at, b.confirm_by, b.visit_id,
		b.doc, b.created_at, b.updated_at, r.id, r.name, r.email, r.phone, r.company, r.self_registered, r.created_at, r.updated_at`
	bookingFrom = ` FROM bookings b LEFT JOIN visitors r ON r.id = b.visitor_id AND r.org_id = b.org_id AND r.mode = b.mode`
)

// holdsSlot is Booking.HoldsSlot in SQL, its one argument now in
// microseconds. The literal 'pending' lets the partial index serve it.
const holdsSlot = `(status = 'confirmed' OR (status = 'pending' AND confirm_by > ?))`

func scanBooking(r scanner) (cloud.Booking, error) {
	var b cloud.Booking
	var mode, status string
	var visitor, visit sql.NullString
	var starts, created, updated int64
	var confirmBy sql.NullInt64
	var doc []byte
	var rID, rName, rEmail, rPhone, rCompany sql.NullString
	var rSelf sql.NullBool
	var rCreated, rUpdated sql.NullInt64
	err := r.Scan(&b.ID, &b.Tenant.OrgID, &mode, &b.TypeID, &b.SiteID, &visitor, &status, &starts, &confirmBy, &visit,
		&doc, &created, &updated, &rID, &rName, &rEmail, &rPhone, &rCompany, &rSelf, &rCreated, &rUpdated)
	if err != nil {
		return b, err
	}
	b.Tenant.Mode, b.VisitorID, b.Status, b.VisitID = cloud.Mode(mode), str(visitor), cloud.BookingStatus(status), str(visit)
	b.StartsAt, b.ConfirmBy, b.CreatedAt, b.UpdatedAt = fromMicros(starts), fromNullMicros(confirmBy), fromMicros(created), fromMicros(updated)
	if rID.Valid {
		b.Visitor = cloud.Visitor{ID: rID.String, Tenant: b.Tenant, Name: rName.String, Email: rEmail.String,
			Phone: rPhone.String, Company: rCompany.String, SelfRegistered: rSelf.Bool, CreatedAt: fromMicros(rCreated.Int64),
			UpdatedAt: fromMicros(rUpdated.Int64)}
	}
	return b, storedoc.DecodeBooking(doc, &b)
}

// bookingArgs are the values of type_id, site_id, visitor_id, status,
// starts_at, confirm_by, visit_id, doc and updated_at.
func bookingArgs(b cloud.Booking) ([]any, error) {
	doc, err := storedoc.EncodeBooking(b)
	if err != nil {
		return nil, err
	}
	return []any{b.TypeID, b.SiteID, null(b.VisitorID), string(b.Status), micros(b.StartsAt), nullMicros(b.ConfirmBy),
		null(b.VisitID), string(doc), micros(b.UpdatedAt)}, nil
}

func insertBooking(ctx context.Context, tx *sql.Tx, t cloud.Tenant, b cloud.Booking) error {
	args, err := bookingArgs(b)
	if err != nil {
		return err
	}
	args = append([]any{b.ID, t.OrgID, string(t.Mode), micros(b.CreatedAt)}, args...)
	if _, err := tx.ExecContext(ctx, `INSERT INTO bookings (id, org_id, mode, created_at, type_id, site_id, visitor_id, status,
			starts_at, confirm_by, visit_id, doc, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
		return fmt.Errorf("insert booking: %w", err)
	}
	return nil
}

// updateBookingRow stores b over the booking id of the tenant; the ID,
// tenant and creation time stay as they are.
func updateBookingRow(ctx context.Context, tx *sql.Tx, t cloud.Tenant, id string, b cloud.Booking) error {
	args, err := bookingArgs(b)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE bookings SET type_id = ?, site_id = ?, visitor_id = ?, status = ?, starts_at = ?,
			confirm_by = ?, visit_id = ?, doc = ?, updated_at = ?
		WHERE id = ? AND org_id = ? AND mode = ?`, append(args, id, t.OrgID, string(t.Mode))...); err != nil {
		return fmt.Errorf("update booking: %w", err)
	}
	return nil
}

// checkSlot returns a *cloud.ConflictError when capacity bookings of the
// tenant, other than the booking id, hold b's slot at now. It runs inside
// a write transaction: the one writer connection and BEGIN IMMEDIATE keep
// another write from taking a place between the count and the insert.
func checkSlot(ctx context.Context, tx *sql.Tx, t cloud.Tenant, id string, b cloud.Booking, capacity int, now time.Time) error {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM bookings
		WHERE org_id = ? AND mode = ? AND type_id = ? AND starts_at = ? AND id <> ? AND `+holdsSlot,
		t.OrgID, string(t.Mode), b.TypeID, micros(b.StartsAt), id, micros(now)).Scan(&n)
	if err != nil {
		return fmt.Errorf("count slot: %w", err)
	}
	if n >= capacity {
		return &cloud.ConflictError{Field: "starts_at", Message: "the slot is full"}
	}
	return nil
}

// storeVisit stores v again whole over the tenant's visit with its ID,
// keeping its hosts in step; ErrNotFound when the tenant has no such
// visit.
func storeVisit(ctx context.Context, tx *sql.Tx, f *feed, t cloud.Tenant, v cloud.Visit) error {
	current, err := getVisit(ctx, tx, t, v.ID)
	if err != nil {
		return fmt.Errorf("store visit %s: %w", v.ID, err)
	}
	return updateVisitRow(ctx, tx, f, t, keysOf(current), v)
}

// writeBookingAlong stores what w holds beside its visitor and the
// booking, in the tenant t of the booking, whatever the Tenant fields in w
// say.
func writeBookingAlong(ctx context.Context, tx *sql.Tx, f *feed, t cloud.Tenant, w cloud.BookingWrites) error {
	for _, v := range w.Visits {
		if err := storeVisit(ctx, tx, f, t, v); err != nil {
			return err
		}
	}
	return writeAlong(ctx, tx, f, t, cloud.VisitWrites{Visits: w.NewVisits, Messages: w.Messages})
}

func getBooking(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t cloud.Tenant, id string) (cloud.Booking, error) {
	return get(ctx, db, scanBooking, `SELECT `+bookingCols+bookingFrom+` WHERE b.id = ? AND b.org_id = ? AND b.mode = ?`,
		id, t.OrgID, string(t.Mode))
}

// bookingsOf returns every booking of a visitor.
func bookingsOf(ctx context.Context, db querier, t cloud.Tenant, visitorID string) ([]cloud.Booking, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+bookingCols+bookingFrom+` WHERE b.org_id = ? AND b.mode = ? AND b.visitor_id = ?`,
		t.OrgID, string(t.Mode), visitorID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cloud.Booking
	for rows.Next() {
		b, err := scanBooking(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// CreateBooking implements cloud.Store: the new visitor first, then the
// slot check, the booking, the new visits, the visits stored again and the
// messages, all in the booking's tenant. The count and the insert share
// one write transaction, which the single writer connection serialises
// with every other write.
func (s *Store) CreateBooking(ctx context.Context, b cloud.Booking, w cloud.BookingWrites, now time.Time) error {
	t := b.Tenant
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		if w.Visitor != nil {
			if err := insertVisitor(ctx, tx, t, *w.Visitor); err != nil {
				return err
			}
		}
		if w.Capacity > 0 {
			if err := checkSlot(ctx, tx, t, b.ID, b, w.Capacity, now); err != nil {
				return err
			}
		}
		if err := insertBooking(ctx, tx, t, b); err != nil {
			return err
		}
		return writeBookingAlong(ctx, tx, f, t, w)
	})
	if err != nil {
		return fmt.Errorf("create booking: %w", err)
	}
	return nil
}

// Booking implements cloud.Store.
func (s *Store) Booking(ctx context.Context, t cloud.Tenant, id string) (cloud.Booking, error) {
	return getBooking(ctx, s.r, t, id)
}

// UpdateBooking implements cloud.Store. The one writer connection makes
// concurrent updates take turns. The booking returned is read back after
// the writes, so its Visitor is the one it now points at.
func (s *Store) UpdateBooking(ctx context.Context, t cloud.Tenant, id string, now time.Time, fn func(*cloud.Booking, *cloud.BookingWrites) error) (cloud.Booking, error) {
	var out cloud.Booking
	err := s.writeTx(ctx, t, func(tx *sql.Tx, f *feed) error {
		b, err := getBooking(ctx, tx, t, id)
		if err != nil {
			return err
		}
		var w cloud.BookingWrites
		if err := fn(&b, &w); err != nil {
			return err
		}
		if w.Visitor != nil {
			if err := insertVisitor(ctx, tx, t, *w.Visitor); err != nil {
				return err
			}
		}
		if w.Capacity > 0 {
			if err := checkSlot(ctx, tx, t, id, b, w.Capacity, now); err != nil {
				return err
			}
		}
		if err := updateBookingRow(ctx, tx, t, id, b); err != nil {
			return err
		}
		if err := writeBookingAlong(ctx, tx, f, t, w); err != nil {
			return err
		}
		out, err = getBooking(ctx, tx, t, id)
		return err
	})
	return out, err
}

// ListBookings implements cloud.Store. The status filter compares the
// status as of f.Now: a pending booking past confirm_by is expired.
func (s *Store) ListBookings(ctx context.Context, t cloud.Tenant, f cloud.BookingFilter, p cloud.Page) ([]cloud.Booking, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + bookingCols + bookingFrom + ` WHERE b.org_id = ? AND b.mode = ?`)
	args := []any{t.OrgID, string(t.Mode)}
	if len(f.Status) > 0 {
		stored, check := f.StoredStatuses()
		args = whereIn(&q, args, "b.status", stored)
		switch check {
		case cloud.PendingLive:
			q.WriteString(` AND (b.status <> 'pending' OR b.confirm_by IS NULL OR b.confirm_by > ?)`)
			args = append(args, micros(f.Now))
		case cloud.PendingExpired:
			q.WriteString(` AND (b.status <> 'pending' OR b.confirm_by <= ?)`)
			args = append(args, micros(f.Now))
		}
	}
	for _, c := range []struct {
		cond, arg string
	}{{` AND b.type_id = ?`, f.TypeID}, {` AND b.site_id = ?`, f.SiteID}, {` AND b.visitor_id = ?`, f.VisitorID}} {
		if c.arg != "" {
			q.WriteString(c.cond)
			args = append(args, c.arg)
		}
	}
	if f.StartsFrom != nil {
		q.WriteString(` AND b.starts_at >= ?`)
		args = append(args, micros(*f.StartsFrom))
	}
	if f.StartsBefore != nil {
		q.WriteString(` AND b.starts_at < ?`)
		args = append(args, micros(*f.StartsBefore))
	}
	if f.CreatedAfter != nil {
		q.WriteString(` AND b.created_at > ?`)
		args = append(args, micros(*f.CreatedAfter))
	}
	args = keyset(&q, args, p, "b.")
	out, more, err := list(ctx, s.r, scanBooking, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list bookings: %w", err)
	}
	return out, more, nil
}

// SlotUse implements cloud.Store.
func (s *Store) SlotUse(ctx context.Context, t cloud.Tenant, typeID string, from, to, now time.Time) (map[time.Time]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT starts_at, count(*) FROM bookings
		WHERE org_id = ? AND mode = ? AND type_id = ? AND starts_at >= ? AND starts_at < ? AND `+holdsSlot+`
		GROUP BY starts_at`, t.OrgID, string(t.Mode), typeID, micros(from), micros(to), micros(now))
	if err != nil {
		return nil, fmt.Errorf("slot use: %w", err)
	}
	defer rows.Close()
	out := map[time.Time]int{}
	for rows.Next() {
		var starts int64
		var n int
		if err := rows.Scan(&starts, &n); err != nil {
			return nil, fmt.Errorf("slot use: %w", err)
		}
		out[fromMicros(starts)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("slot use: %w", err)
	}
	return out, nil
}

// ExpireBookings implements cloud.Store.
func (s *Store) ExpireBookings(ctx context.Context, now time.Time, fn func(cloud.Booking) error) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		type key struct{ id, org, mode string }
		keys, err := all(ctx, tx, func(r scanner) (key, error) {
			var k key
			return k, r.Scan(&k.id, &k.org, &k.mode)
		}, `UPDATE bookings SET status = 'expired', updated_at = ?
			WHERE status = 'pending' AND confirm_by <= ? RETURNING id, org_id, mode`, micros(now), micros(now))
		if err != nil {
			return err
		}
		n = int64(len(keys))
		if fn == nil {
			return nil
		}
		for _, k := range keys {
			b, err := getBooking(ctx, tx, cloud.Tenant{OrgID: k.org, Mode: cloud.Mode(k.mode)}, k.id)
			if err != nil {
				return err
			}
			if err := fn(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expire bookings: %w", err)
	}
	return n, nil
}
