-- Enrolment by a one-time code and the fleet in the API (issue 17;
-- docs/decisions.md, "Enrolment (issue 17)").
--
-- (0030: 0025 to 0029 are left to changes made beside this one.)

-- The appliance's identity key, bound when its code was claimed; NULL for
-- an edge made by svc-cloud edges create. What its statuses say of it for
-- the fleet: the clock skew measured (milliseconds, its clock minus the
-- cloud's), the oldest fact waiting, its cache's counts and disk free.
ALTER TABLE edges ADD COLUMN identity_key BLOB;
ALTER TABLE edges ADD COLUMN skew_ms INTEGER;
ALTER TABLE edges ADD COLUMN outbox_oldest INTEGER;
ALTER TABLE edges ADD COLUMN cache_counts TEXT;
ALTER TABLE edges ADD COLUMN disk_free INTEGER;
CREATE INDEX edges_identity ON edges (identity_key) WHERE identity_key IS NOT NULL;

-- One enrolment per appliance identity key: the code is kept only as its
-- SHA-256, unique while it may be claimed.
CREATE TABLE enrolments (
    public_key BLOB PRIMARY KEY,
    code_hash  BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    address    TEXT NOT NULL,
    skew_ms    INTEGER NOT NULL,
    claimed_at INTEGER,
    org_id     TEXT,
    mode       TEXT,
    edge_id    TEXT
) STRICT;

-- Wrong codes tried, per tenant: a few in a window lock its claims out.
CREATE TABLE enrolment_failures (
    org_id TEXT NOT NULL,
    mode   TEXT NOT NULL,
    at     INTEGER NOT NULL
) STRICT;
CREATE INDEX enrolment_failures_tenant ON enrolment_failures (org_id, mode, at);
