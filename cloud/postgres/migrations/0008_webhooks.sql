-- Webhooks (issue 5): endpoints, the deliveries queued for them in the
-- transaction that writes each event, and every attempt. The queue is
-- these rows: a restart loses nothing, and processes claim due deliveries
-- with FOR UPDATE SKIP LOCKED (docs/decisions.md, "Webhooks").
CREATE TABLE webhook_endpoints (
    org_id          text COLLATE "C" NOT NULL,
    mode            text NOT NULL,
    id              text COLLATE "C" NOT NULL UNIQUE,
    url             text NOT NULL,
    description     text NOT NULL,
    event_types     text[] NOT NULL,
    disabled_reason text,            -- NULL while enabled
    secret          text NOT NULL,
    prev_secret     text,
    prev_until      timestamptz,
    failing_since   timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX webhook_endpoints_list ON webhook_endpoints (org_id, mode, created_at DESC, id DESC);

CREATE TABLE webhook_deliveries (
    endpoint_id      text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id         text COLLATE "C" NOT NULL,
    org_id           text COLLATE "C" NOT NULL,
    mode             text NOT NULL,
    event_type       text NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    step             integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz,    -- set while pending
    claim            text,           -- the claimant's token while it sends
    last_attempt_at  timestamptz,
    last_status_code integer,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (endpoint_id, event_id),
    FOREIGN KEY (org_id, mode, event_id) REFERENCES events (org_id, mode, id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_claim ON webhook_deliveries (claim) WHERE claim IS NOT NULL;
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (endpoint_id, created_at DESC, event_id DESC);
CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (endpoint_id, created_at) WHERE status = 'failed';

CREATE TABLE webhook_attempts (
    id              text COLLATE "C" PRIMARY KEY,
    endpoint_id     text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        text COLLATE "C" NOT NULL,
    org_id          text COLLATE "C" NOT NULL,
    mode            text NOT NULL,
    created_at      timestamptz NOT NULL, -- when the attempt was made
    duration_us     bigint NOT NULL,
    status_code     integer,              -- NULL when no response came
    error           text,
    succeeded       boolean NOT NULL,
    next_attempt_at timestamptz
);
CREATE INDEX webhook_attempts_list ON webhook_attempts (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_attempts_event ON webhook_attempts (endpoint_id, event_id, created_at DESC, id DESC);
