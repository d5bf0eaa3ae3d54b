-- Webhooks (issue 5): endpoints, the deliveries queued for them in the
-- transaction that writes each event, and every attempt. The queue is
-- these rows: a restart loses nothing (docs/decisions.md, "Webhooks").
CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL,
    mode            TEXT NOT NULL,
    url             TEXT NOT NULL,
    description     TEXT NOT NULL,
    event_types     TEXT NOT NULL CHECK (json_valid(event_types) AND json_type(event_types) = 'array'),
    disabled_reason TEXT,            -- NULL while enabled
    secret          TEXT NOT NULL,
    prev_secret     TEXT,
    prev_until      INTEGER,
    failing_since   INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_endpoints_list ON webhook_endpoints (org_id, mode, created_at DESC, id DESC);

CREATE TABLE webhook_deliveries (
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id         TEXT NOT NULL REFERENCES events (id),
    org_id           TEXT NOT NULL,
    mode             TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    step             INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER,        -- set while pending
    claim            TEXT,           -- the claimant's token while it sends
    last_attempt_at  INTEGER,
    last_status_code INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    PRIMARY KEY (endpoint_id, event_id)
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_claim ON webhook_deliveries (claim) WHERE claim IS NOT NULL;
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (endpoint_id, created_at DESC, event_id DESC);
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (endpoint_id, created_at) WHERE status = 'failed';

CREATE TABLE webhook_attempts (
    id              TEXT PRIMARY KEY,
    endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL,
    org_id          TEXT NOT NULL,
    mode            TEXT NOT NULL,
    created_at      INTEGER NOT NULL, -- when the attempt was made
    duration_us     INTEGER NOT NULL,
    status_code     INTEGER,          -- NULL when no response came
    error           TEXT,
    succeeded       INTEGER NOT NULL,
    next_attempt_at INTEGER
) STRICT;
CREATE INDEX webhook_attempts_list ON webhook_attempts (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_attempts_event ON webhook_attempts (endpoint_id, event_id, created_at DESC, id DESC);
