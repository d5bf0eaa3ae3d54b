-- The edge–cloud sync (issue 4): each site's change feed, its publishing
-- cursor, the edges and the facts they sent.
--
-- edge_until is cloud.EdgeUntil of a visit (its expected end, or a day
-- after a walk-in's check-in), in microseconds, NULL when it has neither:
-- a snapshot sends the visits whose edge_until is NULL or within
-- cloud.EdgeHorizon. Rows written before it are filled from their
-- documents (julianday keeps milliseconds, plenty for an eight-day
-- horizon).
ALTER TABLE visits ADD COLUMN edge_until INTEGER;
UPDATE visits SET edge_until = CAST(round((coalesce(julianday(json_extract(doc, '$.expected_until')),
        julianday(json_extract(doc, '$.checked_in_at')) + 1.0) - 2440587.5) * 86400000000.0) AS INTEGER)
    WHERE json_extract(doc, '$.expected_until') IS NOT NULL OR json_extract(doc, '$.checked_in_at') IS NOT NULL;
CREATE INDEX visits_edge ON visits (org_id, mode, site_id, edge_until);

-- site_feed_heads holds each feed's last sequence. A write allocates its
-- sequences with one upsert of the row, so sequences have no gaps.
CREATE TABLE site_feed_heads (
    org_id  TEXT NOT NULL,
    mode    TEXT NOT NULL,
    site_id TEXT NOT NULL,
    seq     INTEGER NOT NULL CHECK (seq > 0),
    PRIMARY KEY (org_id, mode, site_id)
) STRICT, WITHOUT ROWID;

-- One row per change: body is the change's object in its wire form
-- (cloud/storedoc EncodeChange); visit_id names the visit it holds, NULL
-- for other objects, so erasing a visitor finds its visits' changes.
CREATE TABLE site_feed (
    org_id   TEXT NOT NULL,
    mode     TEXT NOT NULL,
    site_id  TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    visit_id TEXT,
    body     TEXT NOT NULL,
    PRIMARY KEY (org_id, mode, site_id, seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX site_feed_visit ON site_feed (org_id, mode, visit_id) WHERE visit_id IS NOT NULL;

-- How far each feed has been published to the broker; a row of its own so
-- publishing never holds what writers need.
CREATE TABLE site_feed_cursors (
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    site_id       TEXT NOT NULL,
    published_seq INTEGER NOT NULL,
    PRIMARY KEY (org_id, mode, site_id)
) STRICT, WITHOUT ROWID;

-- A site's appliances. secret_hash is the SHA-256 of the broker password.
CREATE TABLE edges (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    mode         TEXT NOT NULL,
    site_id      TEXT NOT NULL,
    name         TEXT NOT NULL,
    username     TEXT NOT NULL UNIQUE,
    secret_hash  BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    state        TEXT NOT NULL,
    state_at     INTEGER,
    last_seen_at INTEGER,
    seq          INTEGER NOT NULL,
    outbox       INTEGER NOT NULL,
    software     TEXT NOT NULL
) STRICT;
CREATE INDEX edges_site ON edges (org_id, mode, site_id, created_at, id);

-- Every fact an edge sent, once per ID, with why it disagreed with the
-- cloud (conflict, NULL when it did not).
CREATE TABLE edge_facts (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    site_id       TEXT NOT NULL,
    edge_id       TEXT NOT NULL,
    counter       INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    at            INTEGER NOT NULL,
    gate_id       TEXT NOT NULL,
    visit_id      TEXT,
    pass_visit_id TEXT,
    reason        TEXT,
    received_at   INTEGER NOT NULL,
    conflict      TEXT
) STRICT;
CREATE INDEX edge_facts_edge ON edge_facts (edge_id, counter);
CREATE INDEX edge_facts_visit ON edge_facts (org_id, mode, visit_id) WHERE visit_id IS NOT NULL;
