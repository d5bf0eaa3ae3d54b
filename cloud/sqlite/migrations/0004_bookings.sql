-- Booking types and bookings.
--
-- A booking type's opening hours are a JSON array written by
-- cloud/storedoc. A booking keeps in columns what ListBookings, SlotUse and
-- ExpireBookings filter and order on, and the rest in doc, a JSON document
-- written by cloud/storedoc. Like a visit's, visitor_id is not a
-- reference: an erased visitor's bookings keep pointing at the deleted row.

CREATE TABLE booking_types (
    id                        TEXT PRIMARY KEY,
    org_id                    TEXT NOT NULL,
    mode                      TEXT NOT NULL,
    name                      TEXT NOT NULL,
    site_id                   TEXT NOT NULL,
    visit_type                TEXT NOT NULL,
    public                    INTEGER NOT NULL,
    requires_confirmation     INTEGER NOT NULL,
    confirmation_window_hours INTEGER NOT NULL,
    slot_minutes              INTEGER NOT NULL,
    capacity                  INTEGER NOT NULL,
    hours                     TEXT NOT NULL,
    host_id                   TEXT,
    team_id                   TEXT,
    archived                  INTEGER NOT NULL,
    created_at                INTEGER NOT NULL,
    updated_at                INTEGER NOT NULL
) STRICT;
CREATE INDEX booking_types_list ON booking_types (org_id, mode, created_at DESC, id DESC);
CREATE INDEX booking_types_site_list ON booking_types (org_id, mode, site_id, created_at DESC, id DESC);

-- A booking holds its slot while it is confirmed, or pending with
-- confirm_by still ahead; the status filter counts a pending booking past
-- confirm_by as expired.
CREATE TABLE bookings (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    type_id    TEXT NOT NULL,
    site_id    TEXT NOT NULL,
    visitor_id TEXT,
    status     TEXT NOT NULL,
    starts_at  INTEGER NOT NULL,
    confirm_by INTEGER,
    visit_id   TEXT,
    doc        TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX bookings_list ON bookings (org_id, mode, created_at DESC, id DESC);
CREATE INDEX bookings_type_list ON bookings (org_id, mode, type_id, created_at DESC, id DESC);
CREATE INDEX bookings_site_list ON bookings (org_id, mode, site_id, created_at DESC, id DESC);
CREATE INDEX bookings_visitor_list ON bookings (org_id, mode, visitor_id, created_at DESC, id DESC);
CREATE INDEX bookings_slot ON bookings (org_id, mode, type_id, starts_at);
CREATE INDEX bookings_starts ON bookings (org_id, mode, starts_at);
CREATE INDEX bookings_pending ON bookings (confirm_by) WHERE status = 'pending';
