-- The edge–cloud sync (issue 4): each site's change feed, its publishing
-- cursor, the edges and the facts they sent.
--
-- edge_until is cloud.EdgeUntil of a visit (its expected end, or a day
-- after a walk-in's check-in), NULL when it has neither: a snapshot sends
-- the visits whose edge_until is NULL or within cloud.EdgeHorizon. Rows
-- written before it are filled from their documents.
ALTER TABLE visits ADD COLUMN edge_until timestamptz;
UPDATE visits SET edge_until = coalesce((doc->>'expected_until')::timestamptz,
        (doc->>'checked_in_at')::timestamptz + interval '1 day');
CREATE INDEX visits_edge ON visits (org_id, mode, site_id, edge_until);

-- site_feed_heads holds each feed's last sequence. A write allocates its
-- sequences with one upsert of the row, whose lock it holds until it
-- commits: writers to one site take turns, so sequences have no gaps and
-- commit in order.
CREATE TABLE site_feed_heads (
    org_id  text COLLATE "C" NOT NULL,
    mode    text NOT NULL,
    site_id text COLLATE "C" NOT NULL,
    seq     bigint NOT NULL CHECK (seq > 0),
    PRIMARY KEY (org_id, mode, site_id)
);

-- One row per change: body is the change's object in its wire form
-- (cloud/storedoc EncodeChange), json to keep the text as written;
-- visit_id names the visit it holds, NULL for other objects, so erasing a
-- visitor finds its visits' changes.
CREATE TABLE site_feed (
    org_id   text COLLATE "C" NOT NULL,
    mode     text NOT NULL,
    site_id  text COLLATE "C" NOT NULL,
    seq      bigint NOT NULL,
    at       timestamptz NOT NULL,
    visit_id text COLLATE "C",
    body     json NOT NULL,
    PRIMARY KEY (org_id, mode, site_id, seq)
);
CREATE INDEX site_feed_visit ON site_feed (org_id, mode, visit_id) WHERE visit_id IS NOT NULL;

-- How far each feed has been published to the broker. A table of its own:
-- publishers lock these rows (FOR UPDATE SKIP LOCKED, so several
-- processes never publish one site at once) and never a row writers need.
CREATE TABLE site_feed_cursors (
    org_id        text COLLATE "C" NOT NULL,
    mode          text NOT NULL,
    site_id       text COLLATE "C" NOT NULL,
    published_seq bigint NOT NULL,
    PRIMARY KEY (org_id, mode, site_id)
);

-- A site's appliances. secret_hash is the SHA-256 of the broker password.
CREATE TABLE edges (
    id           text COLLATE "C" PRIMARY KEY,
    org_id       text COLLATE "C" NOT NULL,
    mode         text NOT NULL,
    site_id      text COLLATE "C" NOT NULL,
    name         text NOT NULL,
    username     text COLLATE "C" NOT NULL UNIQUE,
    secret_hash  bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    state        text NOT NULL,
    state_at     timestamptz,
    last_seen_at timestamptz,
    seq          bigint NOT NULL,
    outbox       integer NOT NULL,
    software     text NOT NULL,
    FOREIGN KEY (org_id, mode, site_id) REFERENCES sites (org_id, mode, id)
);
CREATE INDEX edges_site ON edges (org_id, mode, site_id, created_at, id);

-- Every fact an edge sent, once per ID, with why it disagreed with the
-- cloud (conflict, NULL when it did not).
CREATE TABLE edge_facts (
    id            text COLLATE "C" PRIMARY KEY,
    org_id        text COLLATE "C" NOT NULL,
    mode          text NOT NULL,
    site_id       text COLLATE "C" NOT NULL,
    edge_id       text COLLATE "C" NOT NULL,
    counter       bigint NOT NULL,
    kind          text NOT NULL,
    at            timestamptz NOT NULL,
    gate_id       text COLLATE "C" NOT NULL,
    visit_id      text COLLATE "C",
    pass_visit_id text COLLATE "C",
    reason        text,
    received_at   timestamptz NOT NULL,
    conflict      text
);
CREATE INDEX edge_facts_edge ON edge_facts (edge_id, counter);
CREATE INDEX edge_facts_visit ON edge_facts (org_id, mode, visit_id) WHERE visit_id IS NOT NULL;
