-- Signed updates (issue 17; docs/decisions.md, "Signed updates (issue
-- 17)").
--
-- releases are the service's, not an organisation's: one row per version
-- and platform, with the signed manifest the appliance verifies. Their
-- bundles are stored in pieces of 1 MiB (release_chunks) so that every
-- process sharing the database serves them, and a resumed download reads
-- only the pieces it sends.
--
-- rollouts schedule a version for some of a tenant's appliances;
-- edge_updates keep what each appliance last said of its updates.
--
-- An edge's identity key, which signs its HTTPS requests
-- (shared/edgeauth), is edges.identity_key, which enrolment (0030) added.
--
-- (0040: 0025 to 0039 are left to changes made beside this one.)
CREATE TABLE releases (
    version     TEXT NOT NULL,
    platform    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    size        INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    envelope    BLOB NOT NULL,
    created_at  INTEGER NOT NULL,
    added_at    INTEGER NOT NULL,
    PRIMARY KEY (version, platform)
);
CREATE TABLE release_chunks (
    version     TEXT NOT NULL,
    platform    TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    data        BLOB NOT NULL,
    PRIMARY KEY (version, platform, idx),
    FOREIGN KEY (version, platform) REFERENCES releases (version, platform)
);
CREATE TABLE rollouts (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL,
    mode            TEXT NOT NULL,
    version         TEXT NOT NULL,
    site_ids        TEXT NOT NULL,
    edge_ids        TEXT NOT NULL,
    window_start    INTEGER NOT NULL,
    window_minutes  INTEGER NOT NULL,
    deadline        INTEGER,
    first_percent   INTEGER NOT NULL,
    state           TEXT NOT NULL,
    reason          TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    cancelled_at    INTEGER
);
CREATE INDEX rollouts_tenant ON rollouts (org_id, mode, created_at);
CREATE TABLE edge_updates (
    edge_id       TEXT PRIMARY KEY REFERENCES edges (id),
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    version       TEXT NOT NULL,
    slot          TEXT NOT NULL,
    state         TEXT NOT NULL,
    target        TEXT NOT NULL,
    bytes         INTEGER NOT NULL,
    size          INTEGER NOT NULL,
    error         TEXT NOT NULL,
    last_version  TEXT NOT NULL,
    last_outcome  TEXT NOT NULL,
    last_reason   TEXT NOT NULL,
    last_at       INTEGER,
    polled_at     INTEGER NOT NULL
);
CREATE INDEX edge_updates_tenant ON edge_updates (org_id, mode);
