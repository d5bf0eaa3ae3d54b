-- Attendance (issue 6): punches, the organisation's settings, timesheet
-- periods and timesheets, consent and evidence, and where a phone may
-- punch for a site (docs/decisions.md, "Attendance"). Days are
-- YYYY-MM-DD text, as in the SQLite store, which sorts as the days do.
ALTER TABLE sites ADD COLUMN attendance_zone jsonb;

CREATE TABLE attendance_settings (
    org_id     text NOT NULL,
    mode       text NOT NULL,
    timezone   text NOT NULL,
    rules      jsonb NOT NULL,
    evidence   jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode)
);

CREATE TABLE attendance_events (
    id           text PRIMARY KEY,
    org_id       text NOT NULL,
    mode         text NOT NULL,
    person_id    text NOT NULL,
    site_id      text NOT NULL,
    gate_id      text,
    kind         text NOT NULL CHECK (kind IN ('in', 'out')),
    source       text NOT NULL,
    occurred_at  timestamptz NOT NULL,
    received_at  timestamptz NOT NULL,
    sent_at      timestamptz,
    day          text NOT NULL CHECK (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    skew_seconds integer,
    location     jsonb,
    wifi         jsonb,
    device_id    text,
    edge_id      text,
    fact_id      text UNIQUE,
    created_at   timestamptz NOT NULL
);
CREATE INDEX attendance_events_person ON attendance_events (org_id, mode, person_id, day);
CREATE INDEX attendance_events_list ON attendance_events (org_id, mode, occurred_at DESC, id DESC);
CREATE INDEX attendance_events_day ON attendance_events (org_id, mode, day, person_id);

CREATE TABLE timesheet_periods (
    id          text PRIMARY KEY,
    org_id      text NOT NULL,
    mode        text NOT NULL,
    kind        text NOT NULL,
    starts_on   text NOT NULL,
    ends_on     text NOT NULL,
    payroll_on  text NOT NULL,
    label       text NOT NULL,
    closes_at   timestamptz NOT NULL,
    closed_at   timestamptz,
    approved_at timestamptz,
    created_at  timestamptz NOT NULL,
    UNIQUE (org_id, mode, starts_on)
);
CREATE INDEX timesheet_periods_due ON timesheet_periods (closes_at) WHERE closed_at IS NULL;

CREATE TABLE timesheets (
    id           text PRIMARY KEY,
    org_id       text NOT NULL,
    mode         text NOT NULL,
    period_id    text NOT NULL REFERENCES timesheet_periods (id) ON DELETE CASCADE,
    person_id    text NOT NULL,
    status       text NOT NULL CHECK (status IN ('open', 'to_confirm', 'to_approve', 'approved')),
    minutes      integer NOT NULL,
    days         integer NOT NULL,
    punches      integer NOT NULL,
    unpaired     integer NOT NULL,
    confirmed_at timestamptz,
    approved_at  timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (period_id, person_id)
);
CREATE INDEX timesheets_status ON timesheets (period_id, status);
CREATE INDEX timesheets_list ON timesheets (org_id, mode, created_at DESC, id DESC);
CREATE INDEX timesheets_person ON timesheets (org_id, mode, person_id);

CREATE TABLE attendance_consents (
    org_id     text NOT NULL,
    mode       text NOT NULL,
    person_id  text NOT NULL,
    kind       text NOT NULL,
    given      boolean NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, person_id, kind)
);

CREATE TABLE attendance_evidence (
    id                  text PRIMARY KEY,
    org_id              text NOT NULL,
    mode                text NOT NULL,
    person_id           text NOT NULL,
    kind                text NOT NULL,
    basis               text NOT NULL,
    attendance_event_id text,
    captured_at         timestamptz NOT NULL,
    content_type        text,
    image               bytea,
    location            jsonb,
    created_at          timestamptz NOT NULL
);
CREATE INDEX attendance_evidence_person ON attendance_evidence (org_id, mode, person_id, kind);
