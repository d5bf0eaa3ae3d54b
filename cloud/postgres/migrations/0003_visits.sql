-- Visit types, visitors, visits with their hosts, the message outbox and
-- pass-signing keys.
--
-- A visit keeps in columns what ListVisits filters and orders on, and the
-- rest in doc, a JSON document written by cloud/storedoc. visit_hosts
-- holds every host of a visit (the lead and the others), kept in step with
-- the document, for the host filter. visitor_id is not a reference: an
-- erased visitor's visits keep pointing at the deleted row.
--
-- form and doc are json, not jsonb: json keeps the text as written, so a
-- form comes back byte for byte, and nothing queries inside either.

CREATE TABLE visit_types (
    org_id           text COLLATE "C" NOT NULL,
    mode             text NOT NULL,
    key              text COLLATE "C" NOT NULL,
    name             text NOT NULL,
    enabled          boolean NOT NULL,
    pre_registration boolean NOT NULL,
    needs_approval   boolean NOT NULL,
    form             json,
    form_version     integer NOT NULL,
    pass_rules       json NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, key)
);
CREATE INDEX visit_types_list ON visit_types (org_id, mode, created_at DESC, key DESC);

-- email_fold holds cloud.Fold of email, NULL when there is none.
CREATE TABLE visitors (
    org_id     text COLLATE "C" NOT NULL,
    mode       text NOT NULL,
    id         text COLLATE "C" NOT NULL,
    name       text NOT NULL,
    email      text,
    email_fold text,
    phone      text,
    company    text,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX visitors_email ON visitors (org_id, mode, email_fold, created_at DESC, id DESC) WHERE email_fold IS NOT NULL;
CREATE INDEX visitors_phone ON visitors (org_id, mode, phone, created_at DESC, id DESC) WHERE phone IS NOT NULL;

CREATE TABLE visits (
    org_id      text COLLATE "C" NOT NULL,
    mode        text NOT NULL,
    id          text COLLATE "C" NOT NULL,
    status      text NOT NULL,
    type        text NOT NULL,
    site_id     text COLLATE "C" NOT NULL,
    host_id     text COLLATE "C",
    visitor_id  text COLLATE "C",
    booking_id  text COLLATE "C",
    expected_at timestamptz,
    doc         json NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX visits_list ON visits (org_id, mode, created_at DESC, id DESC);
CREATE INDEX visits_site_list ON visits (org_id, mode, site_id, created_at DESC, id DESC);
CREATE INDEX visits_visitor_list ON visits (org_id, mode, visitor_id, created_at DESC, id DESC);
CREATE INDEX visits_expected ON visits (org_id, mode, expected_at) WHERE expected_at IS NOT NULL;

CREATE TABLE visit_hosts (
    org_id    text COLLATE "C" NOT NULL,
    mode      text NOT NULL,
    visit_id  text COLLATE "C" NOT NULL,
    person_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (org_id, mode, visit_id, person_id),
    FOREIGN KEY (org_id, mode, visit_id) REFERENCES visits (org_id, mode, id) ON DELETE CASCADE
);
CREATE INDEX visit_hosts_person ON visit_hosts (org_id, mode, person_id, visit_id);

-- The outbox. visit_id is NULL for a message about no visit.
CREATE TABLE messages (
    org_id     text COLLATE "C" NOT NULL,
    mode       text NOT NULL,
    id         text COLLATE "C" NOT NULL,
    visit_id   text COLLATE "C",
    channel    text NOT NULL,
    to_addr    text NOT NULL,
    subject    text NOT NULL,
    body       text NOT NULL,
    status     text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX messages_list ON messages (org_id, mode, created_at DESC, id DESC);
CREATE INDEX messages_visit_list ON messages (org_id, mode, visit_id, created_at DESC, id DESC) WHERE visit_id IS NOT NULL;

CREATE TABLE pass_keys (
    org_id     text COLLATE "C" NOT NULL,
    mode       text NOT NULL,
    id         text COLLATE "C" NOT NULL,
    private    bytea NOT NULL,
    created_at timestamptz NOT NULL,
    retired_at timestamptz,
    PRIMARY KEY (org_id, mode, id)
);
