CREATE TABLE organisations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    plan       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organisations(id),
    mode       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    hash       BLOB NOT NULL UNIQUE,
    last4      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;

CREATE TABLE sites (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL,
    mode             TEXT NOT NULL,
    name             TEXT NOT NULL,
    timezone         TEXT NOT NULL,
    addr_line1       TEXT,
    addr_line2       TEXT,
    addr_city        TEXT,
    addr_region      TEXT,
    addr_postal_code TEXT,
    addr_country     TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX sites_list ON sites (org_id, mode, created_at DESC, id DESC);

CREATE TABLE gates (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    site_id    TEXT NOT NULL REFERENCES sites(id),
    name       TEXT NOT NULL,
    direction  TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX gates_list ON gates (org_id, mode, created_at DESC, id DESC);
CREATE INDEX gates_site ON gates (site_id);

CREATE TABLE people (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL,
    mode           TEXT NOT NULL,
    name           TEXT NOT NULL,
    name_search    TEXT NOT NULL,
    email          TEXT,
    email_fold     TEXT,
    phone          TEXT,
    job_title      TEXT,
    site_id        TEXT REFERENCES sites(id),
    active         INTEGER NOT NULL,
    deactivated_at INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX people_list ON people (org_id, mode, created_at DESC, id DESC);
CREATE UNIQUE INDEX people_email ON people (org_id, mode, email_fold) WHERE email_fold IS NOT NULL;

CREATE TABLE teams (
    id                  TEXT PRIMARY KEY,
    org_id              TEXT NOT NULL,
    mode                TEXT NOT NULL,
    name                TEXT NOT NULL,
    name_search         TEXT NOT NULL,
    site_id             TEXT REFERENCES sites(id),
    lead_id             TEXT REFERENCES people(id),
    visitors_can_choose INTEGER NOT NULL,
    archived            INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
) STRICT;
CREATE INDEX teams_list ON teams (org_id, mode, created_at DESC, id DESC);

CREATE TABLE team_members (
    team_id   TEXT NOT NULL REFERENCES teams(id),
    position  INTEGER NOT NULL,
    person_id TEXT NOT NULL REFERENCES people(id),
    PRIMARY KEY (team_id, position)
) STRICT, WITHOUT ROWID;
CREATE INDEX team_members_person ON team_members (person_id);

CREATE TABLE idempotency_keys (
    org_id      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    key         TEXT NOT NULL,
    owner       TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    method      TEXT NOT NULL,
    path        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    done        INTEGER NOT NULL DEFAULT 0,
    status      INTEGER NOT NULL DEFAULT 0,
    header      TEXT NOT NULL DEFAULT '{}',
    body        BLOB NOT NULL DEFAULT x'',
    PRIMARY KEY (org_id, mode, key)
) STRICT;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

CREATE TABLE secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
) STRICT;
