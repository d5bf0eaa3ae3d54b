-- Booking types and bookings.
--
-- A booking type's opening hours are a JSON array written by
-- cloud/storedoc. A booking keeps in columns what ListBookings, SlotUse and
-- ExpireBookings filter and order on, and the rest in doc, a JSON document
-- written by cloud/storedoc. Like a visit's, visitor_id is not a
-- reference: an erased visitor's bookings keep pointing at the deleted row.
--
-- hours and doc are json, not jsonb, for the reason visits' doc is: the
-- text stays as written (custom field answers come back byte for byte),
-- and nothing queries inside either.

CREATE TABLE booking_types (
    org_id                    text COLLATE "C" NOT NULL,
    mode                      text NOT NULL,
    id                        text COLLATE "C" NOT NULL,
    name                      text NOT NULL,
    site_id                   text COLLATE "C" NOT NULL,
    visit_type                text NOT NULL,
    public                    boolean NOT NULL,
    requires_confirmation     boolean NOT NULL,
    confirmation_window_hours integer NOT NULL,
    slot_minutes              integer NOT NULL,
    capacity                  integer NOT NULL,
    hours                     json NOT NULL,
    host_id                   text COLLATE "C",
    team_id                   text COLLATE "C",
    archived                  boolean NOT NULL,
    created_at                timestamptz NOT NULL,
    updated_at                timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX booking_types_list ON booking_types (org_id, mode, created_at DESC, id DESC);
CREATE INDEX booking_types_site_list ON booking_types (org_id, mode, site_id, created_at DESC, id DESC);

-- A booking holds its slot while it is confirmed, or pending with
-- confirm_by still ahead; the status filter counts a pending booking past
-- confirm_by as expired.
CREATE TABLE bookings (
    org_id     text COLLATE "C" NOT NULL,
    mode       text NOT NULL,
    id         text COLLATE "C" NOT NULL,
    type_id    text COLLATE "C" NOT NULL,
    site_id    text COLLATE "C" NOT NULL,
    visitor_id text COLLATE "C",
    status     text NOT NULL,
    starts_at  timestamptz NOT NULL,
    confirm_by timestamptz,
    visit_id   text COLLATE "C",
    doc        json NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX bookings_list ON bookings (org_id, mode, created_at DESC, id DESC);
CREATE INDEX bookings_type_list ON bookings (org_id, mode, type_id, created_at DESC, id DESC);
CREATE INDEX bookings_site_list ON bookings (org_id, mode, site_id, created_at DESC, id DESC);
CREATE INDEX bookings_visitor_list ON bookings (org_id, mode, visitor_id, created_at DESC, id DESC);
CREATE INDEX bookings_slot ON bookings (org_id, mode, type_id, starts_at);
CREATE INDEX bookings_starts ON bookings (org_id, mode, starts_at);
CREATE INDEX bookings_pending ON bookings (confirm_by) WHERE status = 'pending';
