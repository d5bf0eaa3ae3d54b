-- Visit types, visitors, visits with their hosts, the message outbox and
-- pass-signing keys.
--
-- A visit keeps in columns what ListVisits filters and orders on, and the
-- rest in doc, a JSON document written by cloud/storedoc. visit_hosts
-- holds every host of a visit (the lead and the others), kept in step with
-- the document, for the host filter. visitor_id is not a reference: an
-- erased visitor's visits keep pointing at the deleted row.

CREATE TABLE visit_types (
    org_id           TEXT NOT NULL,
    mode             TEXT NOT NULL,
    key              TEXT NOT NULL,
    name             TEXT NOT NULL,
    enabled          INTEGER NOT NULL,
    pre_registration INTEGER NOT NULL,
    needs_approval   INTEGER NOT NULL,
    form             TEXT,
    form_version     INTEGER NOT NULL,
    pass_rules       TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    PRIMARY KEY (org_id, mode, key)
) STRICT;
CREATE INDEX visit_types_list ON visit_types (org_id, mode, created_at DESC, key DESC);

-- email_fold holds cloud.Fold of email, NULL when there is none.
CREATE TABLE visitors (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    name       TEXT NOT NULL,
    email      TEXT,
    email_fold TEXT,
    phone      TEXT,
    company    TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX visitors_email ON visitors (org_id, mode, email_fold, created_at DESC, id DESC) WHERE email_fold IS NOT NULL;
CREATE INDEX visitors_phone ON visitors (org_id, mode, phone, created_at DESC, id DESC) WHERE phone IS NOT NULL;

CREATE TABLE visits (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    status      TEXT NOT NULL,
    type        TEXT NOT NULL,
    site_id     TEXT NOT NULL,
    host_id     TEXT,
    visitor_id  TEXT,
    booking_id  TEXT,
    expected_at INTEGER,
    doc         TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX visits_list ON visits (org_id, mode, created_at DESC, id DESC);
CREATE INDEX visits_site_list ON visits (org_id, mode, site_id, created_at DESC, id DESC);
CREATE INDEX visits_visitor_list ON visits (org_id, mode, visitor_id, created_at DESC, id DESC);
CREATE INDEX visits_expected ON visits (org_id, mode, expected_at) WHERE expected_at IS NOT NULL;

CREATE TABLE visit_hosts (
    visit_id  TEXT NOT NULL REFERENCES visits(id) ON DELETE CASCADE,
    person_id TEXT NOT NULL,
    PRIMARY KEY (visit_id, person_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX visit_hosts_person ON visit_hosts (person_id, visit_id);

-- The outbox. visit_id is NULL for a message about no visit.
CREATE TABLE messages (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    visit_id   TEXT,
    channel    TEXT NOT NULL,
    to_addr    TEXT NOT NULL,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX messages_list ON messages (org_id, mode, created_at DESC, id DESC);
CREATE INDEX messages_visit_list ON messages (org_id, mode, visit_id, created_at DESC, id DESC) WHERE visit_id IS NOT NULL;

CREATE TABLE pass_keys (
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    id         TEXT NOT NULL,
    private    BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    retired_at INTEGER,
    PRIMARY KEY (org_id, mode, id)
) STRICT;
