-- The first schema. Migrations are append-only: change the schema in a new
-- file with the next number, never by editing this one.
--
-- IDs are compared byte-wise (COLLATE "C") so that keyset pages order the
-- same whatever the database's default collation. Tenant-scoped tables
-- carry org_id and mode in every row and key on (org_id, mode, id), so that
-- references between them cannot cross tenants.

CREATE TABLE organisations (
    id         text COLLATE "C" PRIMARY KEY,
    name       text NOT NULL,
    plan       text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    org_id     text COLLATE "C" NOT NULL REFERENCES organisations (id),
    mode       text NOT NULL,
    kind       text NOT NULL,
    scopes     text[] NOT NULL DEFAULT '{}',
    hash       bytea NOT NULL UNIQUE,
    last4      text NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);

-- A site has an address when addr_line1 is not NULL; the optional parts
-- are NULL when empty.
CREATE TABLE sites (
    org_id           text COLLATE "C" NOT NULL,
    mode             text NOT NULL,
    id               text COLLATE "C" NOT NULL,
    name             text NOT NULL,
    timezone         text NOT NULL,
    addr_line1       text,
    addr_line2       text,
    addr_city        text,
    addr_region      text,
    addr_postal_code text,
    addr_country     text,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX sites_list ON sites (org_id, mode, created_at DESC, id DESC);

CREATE TABLE gates (
    org_id     text COLLATE "C" NOT NULL,
    mode       text NOT NULL,
    id         text COLLATE "C" NOT NULL,
    site_id    text COLLATE "C" NOT NULL,
    name       text NOT NULL,
    direction  text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id),
    FOREIGN KEY (org_id, mode, site_id) REFERENCES sites (org_id, mode, id)
);
CREATE INDEX gates_list ON gates (org_id, mode, created_at DESC, id DESC);
CREATE INDEX gates_site_list ON gates (org_id, mode, site_id, created_at DESC, id DESC);

-- name_search and email_fold hold cloud.Fold of name and email, computed by
-- the store, for the q filter and for the email rule. email_fold is NULL
-- when the person has no email.
CREATE TABLE people (
    org_id         text COLLATE "C" NOT NULL,
    mode           text NOT NULL,
    id             text COLLATE "C" NOT NULL,
    name           text NOT NULL,
    name_search    text NOT NULL,
    email          text,
    email_fold     text,
    phone          text,
    job_title      text,
    site_id        text COLLATE "C",
    active         boolean NOT NULL,
    deactivated_at timestamptz,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id),
    FOREIGN KEY (org_id, mode, site_id) REFERENCES sites (org_id, mode, id)
);
CREATE INDEX people_list ON people (org_id, mode, created_at DESC, id DESC);
CREATE INDEX people_site_list ON people (org_id, mode, site_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX people_email ON people (org_id, mode, email_fold) WHERE email_fold IS NOT NULL;

-- site_id NULL: the team is at every site.
CREATE TABLE teams (
    org_id              text COLLATE "C" NOT NULL,
    mode                text NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    name                text NOT NULL,
    name_search         text NOT NULL,
    site_id             text COLLATE "C",
    lead_id             text COLLATE "C",
    visitors_can_choose boolean NOT NULL,
    archived            boolean NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id),
    FOREIGN KEY (org_id, mode, site_id) REFERENCES sites (org_id, mode, id),
    FOREIGN KEY (org_id, mode, lead_id) REFERENCES people (org_id, mode, id)
);
CREATE INDEX teams_list ON teams (org_id, mode, created_at DESC, id DESC);

CREATE TABLE team_members (
    org_id    text COLLATE "C" NOT NULL,
    mode      text NOT NULL,
    team_id   text COLLATE "C" NOT NULL,
    position  integer NOT NULL,
    person_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (team_id, position),
    FOREIGN KEY (org_id, mode, team_id) REFERENCES teams (org_id, mode, id) ON DELETE CASCADE,
    FOREIGN KEY (org_id, mode, person_id) REFERENCES people (org_id, mode, id)
);
CREATE INDEX team_members_person ON team_members (person_id);

CREATE TABLE idempotency_keys (
    org_id      text COLLATE "C" NOT NULL,
    mode        text NOT NULL,
    key         text NOT NULL,
    owner       text NOT NULL,
    fingerprint bytea NOT NULL,
    method      text NOT NULL,
    path        text NOT NULL,
    created_at  timestamptz NOT NULL,
    done        boolean NOT NULL DEFAULT false,
    status      integer NOT NULL DEFAULT 0,
    header      jsonb NOT NULL DEFAULT '{}',
    body        bytea NOT NULL DEFAULT '',
    PRIMARY KEY (org_id, mode, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Every request updates a row here; the spare room per page lets those
-- updates stay on the page (HOT) since count is not indexed.
CREATE TABLE request_counts (
    org_id       text COLLATE "C" NOT NULL,
    mode         text NOT NULL,
    window_start timestamptz NOT NULL,
    count        bigint NOT NULL,
    PRIMARY KEY (org_id, mode, window_start)
) WITH (fillfactor = 70);
CREATE INDEX request_counts_window ON request_counts (window_start);

CREATE TABLE secrets (
    name  text PRIMARY KEY,
    value bytea NOT NULL
);
