package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
)

// --- booking types ---------------------------------------------------------

const bookingTypeCols = `id, name, site_id, visit_type, public, requires_confirmation, confirmation_window_hours, slot_minutes,
	capacity, hours, host_id, team_id, archived, created_at, updated_at`

func scanBookingType(row scanner, t cloud.Tenant) (cloud.BookingType, error) {
	bt := cloud.BookingType{Tenant: t}
	var hours []byte
	var host, team pgtype.Text
	err := row.Scan(&bt.ID, &bt.Name, &bt.SiteID, &bt.VisitType, &bt.Public, &bt.RequiresConfirmation,
		&bt.ConfirmationWindowHours, &bt.SlotMinutes, &bt.Capacity, &hours, &host, &team, &bt.Archived,
		&bt.CreatedAt, &bt.UpdatedAt)
	if err != nil {
		return cloud.BookingType{}, err
	}
	if bt.Hours, err = storedoc.DecodeHours(hours); err != nil {
		return cloud.BookingType{}, err
	}
	bt.HostID, bt.TeamID = host.String, team.String
	bt.CreatedAt, bt.UpdatedAt = bt.CreatedAt.UTC(), bt.UpdatedAt.UTC()
	return bt, nil
}

// bookingTypeArgs are $1..$17: org_id, mode, id, name, site_id,
// visit_type, public, requires_confirmation, confirmation_window_hours,
// slot_minutes, capacity, hours, host_id, team_id, archived, created_at,
// updated_at.
func bookingTypeArgs(t cloud.Tenant, id string, bt cloud.BookingType) ([]any, error) {
	hours, err := storedoc.EncodeHours(bt.Hours)
	if err != nil {
		return nil, err
	}
	return []any{t.OrgID, string(t.Mode), id, bt.Name, bt.SiteID, bt.VisitType, bt.Public, bt.RequiresConfirmation,
		bt.ConfirmationWindowHours, bt.SlotMinutes, bt.Capacity, hours, null(bt.HostID), null(bt.TeamID), bt.Archived,
		bt.CreatedAt, bt.UpdatedAt}, nil
}

// CreateBookingType implements cloud.Store. It is a transaction of its
// own, not one statement, for the write's idempotency record.
func (s *Store) CreateBookingType(ctx context.Context, bt cloud.BookingType) error {
	args, err := bookingTypeArgs(bt.Tenant, bt.ID, bt)
	if err != nil {
		return fmt.Errorf("create booking type: %w", err)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO booking_types (org_id, mode, `+bookingTypeCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`, args...)
		if err != nil {
			return translate("create booking type", err)
		}
		return nil
	})
}

// BookingType implements cloud.Store.
func (s *Store) BookingType(ctx context.Context, t cloud.Tenant, id string) (cloud.BookingType, error) {
	bt, err := scanBookingType(s.pool.QueryRow(ctx, `SELECT `+bookingTypeCols+` FROM booking_types
		WHERE org_id = $1 AND mode = $2 AND id = $3`, t.OrgID, string(t.Mode), id), t)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.BookingType{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.BookingType{}, fmt.Errorf("get booking type: %w", err)
	}
	return bt, nil
}

// UpdateBookingType implements cloud.Store.
func (s *Store) UpdateBookingType(ctx context.Context, t cloud.Tenant, id string, fn func(*cloud.BookingType) error) (cloud.BookingType, error) {
	var out cloud.BookingType
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		bt, err := scanBookingType(tx.QueryRow(ctx, `SELECT `+bookingTypeCols+` FROM booking_types
			WHERE org_id = $1 AND mode = $2 AND id = $3 FOR UPDATE`, t.OrgID, string(t.Mode), id), t)
		if errors.Is(err, pgx.ErrNoRows) {
			return cloud.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("update booking type: %w", err)
		}
		if err := fn(&bt); err != nil {
			return err
		}
		args, err := bookingTypeArgs(t, id, bt)
		if err != nil {
			return fmt.Errorf("update booking type: %w", err)
		}
		args = slices.Delete(args, 15, 16) // created_at is not updated
		out, err = scanBookingType(tx.QueryRow(ctx, `UPDATE booking_types SET name = $4, site_id = $5, visit_type = $6,
				public = $7, requires_confirmation = $8, confirmation_window_hours = $9, slot_minutes = $10, capacity = $11,
				hours = $12, host_id = $13, team_id = $14, archived = $15, updated_at = $16
			WHERE org_id = $1 AND mode = $2 AND id = $3 RETURNING `+bookingTypeCols, args...), t)
		if err != nil {
			return translate("update booking type", err)
		}
		return nil
	})
	if err != nil {
		return cloud.BookingType{}, err
	}
	return out, nil
}

// ListBookingTypes implements cloud.Store. Public types are never
// archived, whatever IncludeArchived says.
func (s *Store) ListBookingTypes(ctx context.Context, t cloud.Tenant, f cloud.BookingTypeFilter, p cloud.Page) ([]cloud.BookingType, bool, error) {
	l := newList(bookingTypeCols, "booking_types", t)
	if f.SiteID != "" {
		l.where("site_id = $%d", f.SiteID)
	}
	if f.Public {
		l.sql.WriteString(" AND public")
	}
	if f.Public || !f.IncludeArchived {
		l.sql.WriteString(" AND NOT archived")
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.BookingType, error) {
		return scanBookingType(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list booking types: %w", err)
	}
	return out, more, nil
}

// --- bookings --------------------------------------------------------------

// bookingCols and bookingFrom read a booking with its visitor, who may
// have been erased.
const (
	bookingCols = `b.id, b.type_id, b.site_id, b.visitor_id, b.status, b.starts_at, b.confirm_by, b.visit_id, b.doc,
		b.created_at, b.updated_at, r.id, r.name, r.email, r.phone, r.company, r.self_registered, r.created_at, r.updated_at`
	bookingFrom = `bookings b LEFT JOIN visitors r ON r.org_id = b.org_id AND r.mode = b.mode AND r.id = b.visitor_id`
)

// holdsSlot is Booking.HoldsSlot in SQL on the bookings table aliased b,
// now being the argument it names with %[1]d. The literal 'pending' lets
// the partial index serve it.
const holdsSlot = `(b.status = 'confirmed' OR (b.status = 'pending' AND b.confirm_by > $%[1]d))`

func scanBooking(row scanner, t cloud.Tenant) (cloud.Booking, error) {
	b := cloud.Booking{Tenant: t}
	var status string
	var visitor, visit pgtype.Text
	var confirmBy pgtype.Timestamptz
	var doc []byte
	var rID, rName, rEmail, rPhone, rCompany pgtype.Text
	var rSelf pgtype.Bool
	var rCreated, rUpdated pgtype.Timestamptz
	err := row.Scan(&b.ID, &b.TypeID, &b.SiteID, &visitor, &status, &b.StartsAt, &confirmBy, &visit, &doc,
		&b.CreatedAt, &b.UpdatedAt, &rID, &rName, &rEmail, &rPhone, &rCompany, &rSelf, &rCreated, &rUpdated)
	if err != nil {
		return cloud.Booking{}, err
	}
	b.VisitorID, b.Status, b.VisitID, b.ConfirmBy = visitor.String, cloud.BookingStatus(status), visit.String, timePtr(confirmBy)
	b.StartsAt, b.CreatedAt, b.UpdatedAt = b.StartsAt.UTC(), b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	if rID.Valid {
		b.Visitor = cloud.Visitor{ID: rID.String, Tenant: t, Name: rName.String, Email: rEmail.String, Phone: rPhone.String,
			Company: rCompany.String, SelfRegistered: rSelf.Bool, CreatedAt: rCreated.Time.UTC(), UpdatedAt: rUpdated.Time.UTC()}
	}
	if err := storedoc.DecodeBooking(doc, &b); err != nil {
		return cloud.Booking{}, err
	}
	return b, nil
}

// bookingArgs are $1..$13: org_id, mode, id, type_id, site_id,
// visitor_id, status, starts_at, confirm_by, visit_id, doc, created_at,
// updated_at.
func bookingArgs(t cloud.Tenant, id string, b cloud.Booking) ([]any, error) {
	doc, err := storedoc.EncodeBooking(b)
	if err != nil {
		return nil, err
	}
	return []any{t.OrgID, string(t.Mode), id, b.TypeID, b.SiteID, null(b.VisitorID), string(b.Status), b.StartsAt,
		nullTime(b.ConfirmBy), null(b.VisitID), doc, b.CreatedAt, b.UpdatedAt}, nil
}

func insertBooking(ctx context.Context, q querier, t cloud.Tenant, b cloud.Booking) error {
	args, err := bookingArgs(t, b.ID, b)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, `INSERT INTO bookings (org_id, mode, id, type_id, site_id, visitor_id, status, starts_at,
			confirm_by, visit_id, doc, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, args...); err != nil {
		return translate("create booking", err)
	}
	return nil
}

// updateBookingRow stores b over the booking id of the tenant; the ID,
// tenant and creation time stay as they are.
func updateBookingRow(ctx context.Context, q querier, t cloud.Tenant, id string, b cloud.Booking) error {
	args, err := bookingArgs(t, id, b)
	if err != nil {
		return err
	}
	args = slices.Delete(args, 11, 12) // created_at is not updated
	if _, err := q.Exec(ctx, `UPDATE bookings SET type_id = $4, site_id = $5, visitor_id = $6, status = $7, starts_at = $8,
			confirm_by = $9, visit_id = $10, doc = $11, updated_at = $12
		WHERE org_id = $1 AND mode = $2 AND id = $3`, args...); err != nil {
		return translate("update booking", err)
	}
	return nil
}

// slotLock is the pg_advisory_xact_lock key of one slot of a booking type
// in a tenant: a 64-bit FNV-1a hash of the four. Two keys that collide
// only make their claims take turns.
func slotLock(t cloud.Tenant, typeID string, startsAt time.Time) int64 {
	h := fnv.New64a()
	for _, part := range []string{"booking slot", t.OrgID, string(t.Mode), typeID, strconv.FormatInt(startsAt.UnixMicro(), 10)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return int64(h.Sum64()) // a lock key: wrapping to negative is fine
}

// checkSlot takes the slot's advisory lock, held until the transaction
// ends, and returns a *cloud.ConflictError when capacity bookings of the
// tenant, other than the booking id, hold b's slot at now. Under READ
// COMMITTED the count, run after the lock is granted, sees every booking
// committed by the claim that held it before.
func checkSlot(ctx context.Context, tx pgx.Tx, t cloud.Tenant, id string, b cloud.Booking, capacity int, now time.Time) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, slotLock(t, b.TypeID, b.StartsAt)); err != nil {
		return fmt.Errorf("lock slot: %w", err)
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM bookings b
		WHERE b.org_id = $1 AND b.mode = $2 AND b.type_id = $3 AND b.starts_at = $4 AND b.id <> $5 AND `+fmt.Sprintf(holdsSlot, 6),
		t.OrgID, string(t.Mode), b.TypeID, b.StartsAt, id, now).Scan(&n)
	if err != nil {
		return fmt.Errorf("count slot: %w", err)
	}
	if n >= capacity {
		return &cloud.ConflictError{Field: "starts_at", Message: "the slot is full"}
	}
	return nil
}

// storeVisit stores v again whole over the tenant's visit with its ID,
// locked first, keeping its hosts in step; ErrNotFound when the tenant has
// no such visit.
func storeVisit(ctx context.Context, q querier, f *feed, t cloud.Tenant, v cloud.Visit) error {
	current, err := getVisit(ctx, q, t, v.ID, true)
	if err != nil {
		return fmt.Errorf("store visit %s: %w", v.ID, err)
	}
	return updateVisitRow(ctx, q, f, t, v.ID, hostIDs(current), v)
}

// writeBookingAlong stores what w holds beside its visitor and the
// booking, in the tenant t of the booking, whatever the Tenant fields in w
// say.
func writeBookingAlong(ctx context.Context, q querier, f *feed, t cloud.Tenant, w cloud.BookingWrites) error {
	for _, v := range w.Visits {
		if err := storeVisit(ctx, q, f, t, v); err != nil {
			return err
		}
	}
	return writeAlong(ctx, q, f, t, cloud.VisitWrites{Visits: w.NewVisits, Messages: w.Messages})
}

// getBooking reads a booking, locking it when lock is set.
func getBooking(ctx context.Context, q querier, t cloud.Tenant, id string, lock bool) (cloud.Booking, error) {
	query := `SELECT ` + bookingCols + ` FROM ` + bookingFrom + ` WHERE b.org_id = $1 AND b.mode = $2 AND b.id = $3`
	if lock {
		query += ` FOR UPDATE OF b`
	}
	b, err := scanBooking(q.QueryRow(ctx, query, t.OrgID, string(t.Mode), id), t)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Booking{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Booking{}, fmt.Errorf("get booking: %w", err)
	}
	return b, nil
}

// CreateBooking implements cloud.Store: the new visitor first, then the
// slot check under the slot's advisory lock, the booking, the new visits,
// the visits stored again and the messages, all in the booking's tenant.
func (s *Store) CreateBooking(ctx context.Context, b cloud.Booking, w cloud.BookingWrites, now time.Time) error {
	t := b.Tenant
	return s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
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
}

// Booking implements cloud.Store.
func (s *Store) Booking(ctx context.Context, t cloud.Tenant, id string) (cloud.Booking, error) {
	return getBooking(ctx, s.pool, t, id, false)
}

// UpdateBooking implements cloud.Store. The booking's row is locked
// (SELECT ... FOR UPDATE) before fn sees it, so concurrent updates take
// turns; a slot check then takes the advisory lock of the slot the
// booking ends up in. The booking returned is read back after the writes,
// so its Visitor is the one it now points at.
func (s *Store) UpdateBooking(ctx context.Context, t cloud.Tenant, id string, now time.Time, fn func(*cloud.Booking, *cloud.BookingWrites) error) (cloud.Booking, error) {
	var out cloud.Booking
	err := s.writeTx(ctx, t, func(tx pgx.Tx, f *feed) error {
		b, err := getBooking(ctx, tx, t, id, true)
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
		out, err = getBooking(ctx, tx, t, id, false)
		return err
	})
	if err != nil {
		return cloud.Booking{}, err
	}
	return out, nil
}

// ListBookings implements cloud.Store. The status filter compares the
// status as of f.Now: a pending booking past confirm_by is expired.
func (s *Store) ListBookings(ctx context.Context, t cloud.Tenant, f cloud.BookingFilter, p cloud.Page) ([]cloud.Booking, bool, error) {
	l := newListOn(bookingCols, bookingFrom, "b.", "id", t)
	if len(f.Status) > 0 {
		stored, check := f.StoredStatuses()
		l.whereIn("b.status", stored)
		switch check {
		case cloud.PendingLive:
			l.where("(b.status <> 'pending' OR b.confirm_by IS NULL OR b.confirm_by > $%d)", f.Now)
		case cloud.PendingExpired:
			l.where("(b.status <> 'pending' OR b.confirm_by <= $%d)", f.Now)
		}
	}
	if f.TypeID != "" {
		l.where("b.type_id = $%d", f.TypeID)
	}
	if f.SiteID != "" {
		l.where("b.site_id = $%d", f.SiteID)
	}
	if f.VisitorID != "" {
		l.where("b.visitor_id = $%d", f.VisitorID)
	}
	if f.StartsFrom != nil {
		l.where("b.starts_at >= $%d", *f.StartsFrom)
	}
	if f.StartsBefore != nil {
		l.where("b.starts_at < $%d", *f.StartsBefore)
	}
	l.sortRows = sortWindow(f.StartsFrom, f.StartsBefore)
	if f.CreatedAfter != nil {
		l.where("b.created_at > $%d", *f.CreatedAfter)
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.Booking, error) {
		return scanBooking(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list bookings: %w", err)
	}
	return out, more, nil
}

// SlotUse implements cloud.Store.
func (s *Store) SlotUse(ctx context.Context, t cloud.Tenant, typeID string, from, to, now time.Time) (map[time.Time]int, error) {
	rows, _ := s.pool.Query(ctx, `SELECT b.starts_at, count(*) FROM bookings b
		WHERE b.org_id = $1 AND b.mode = $2 AND b.type_id = $3 AND b.starts_at >= $4 AND b.starts_at < $5 AND `+fmt.Sprintf(holdsSlot, 6)+`
		GROUP BY b.starts_at`, t.OrgID, string(t.Mode), typeID, from, to, now)
	out := map[time.Time]int{}
	var starts time.Time
	var n int
	_, err := pgx.ForEachRow(rows, []any{&starts, &n}, func() error {
		out[starts.UTC()] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("slot use: %w", err)
	}
	return out, nil
}

// ExpireBookings implements cloud.Store.
func (s *Store) ExpireBookings(ctx context.Context, now time.Time, fn func(cloud.Booking) error) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `UPDATE bookings SET status = 'expired', updated_at = $1
			WHERE status = 'pending' AND confirm_by <= $1 RETURNING org_id, mode, id`, now)
		keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([3]string, error) {
			var k [3]string
			return k, row.Scan(&k[0], &k[1], &k[2])
		})
		if err != nil {
			return err
		}
		n = int64(len(keys))
		if fn == nil {
			return nil
		}
		for _, k := range keys {
			b, err := getBooking(ctx, tx, cloud.Tenant{OrgID: k[0], Mode: cloud.Mode(k[1])}, k[2], false)
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
