-- Attendance (issue 6): punches, the organisation's settings, timesheet
-- periods and timesheets, consent and evidence, and where a phone may
-- punch for a site (docs/decisions.md, "Attendance"). Days are
-- YYYY-MM-DD text, which sorts as the days do.
ALTER TABLE sites ADD COLUMN attendance_zone TEXT CHECK (attendance_zone IS NULL OR json_valid(attendance_zone));

CREATE TABLE attendance_settings (
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    timezone   TEXT NOT NULL,
    rules      TEXT NOT NULL CHECK (json_valid(rules)),
    evidence   TEXT NOT NULL CHECK (json_valid(evidence)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, mode)
) STRICT;

CREATE TABLE attendance_events (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    mode         TEXT NOT NULL,
    person_id    TEXT NOT NULL,
    site_id      TEXT NOT NULL,
    gate_id      TEXT,
    kind         TEXT NOT NULL CHECK (kind IN ('in', 'out')),
    source       TEXT NOT NULL,
    occurred_at  INTEGER NOT NULL,
    received_at  INTEGER NOT NULL,
    sent_at      INTEGER,
    day          TEXT NOT NULL,
    skew_seconds INTEGER,
    location     TEXT,
    wifi         TEXT,
    device_id    TEXT,
    edge_id      TEXT,
    fact_id      TEXT UNIQUE,
    created_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX attendance_events_person ON attendance_events (org_id, mode, person_id, day);
CREATE INDEX attendance_events_list ON attendance_events (org_id, mode, occurred_at DESC, id DESC);
CREATE INDEX attendance_events_day ON attendance_events (org_id, mode, day, person_id);

CREATE TABLE timesheet_periods (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    starts_on   TEXT NOT NULL,
    ends_on     TEXT NOT NULL,
    payroll_on  TEXT NOT NULL,
    label       TEXT NOT NULL,
    closes_at   INTEGER NOT NULL,
    closed_at   INTEGER,
    approved_at INTEGER,
    created_at  INTEGER NOT NULL,
    UNIQUE (org_id, mode, starts_on)
) STRICT;
CREATE INDEX timesheet_periods_due ON timesheet_periods (closes_at) WHERE closed_at IS NULL;

CREATE TABLE timesheets (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    mode         TEXT NOT NULL,
    period_id    TEXT NOT NULL REFERENCES timesheet_periods (id) ON DELETE CASCADE,
    person_id    TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('open', 'to_confirm', 'to_approve', 'approved')),
    minutes      INTEGER NOT NULL,
    days         INTEGER NOT NULL,
    punches      INTEGER NOT NULL,
    unpaired     INTEGER NOT NULL,
    confirmed_at INTEGER,
    approved_at  INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (period_id, person_id)
) STRICT;
CREATE INDEX timesheets_status ON timesheets (period_id, status);
CREATE INDEX timesheets_list ON timesheets (org_id, mode, created_at DESC, id DESC);
CREATE INDEX timesheets_person ON timesheets (org_id, mode, person_id);

CREATE TABLE attendance_consents (
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    person_id  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    given      INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (org_id, mode, person_id, kind)
) STRICT;

CREATE TABLE attendance_evidence (
    id                  TEXT PRIMARY KEY,
    org_id              TEXT NOT NULL,
    mode                TEXT NOT NULL,
    person_id           TEXT NOT NULL,
    kind                TEXT NOT NULL,
    basis               TEXT NOT NULL,
    attendance_event_id TEXT,
    captured_at         INTEGER NOT NULL,
    content_type        TEXT,
    image               BLOB,
    location            TEXT,
    created_at          INTEGER NOT NULL
) STRICT;
CREATE INDEX attendance_evidence_person ON attendance_evidence (org_id, mode, person_id, kind);
