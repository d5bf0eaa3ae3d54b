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
    version     text COLLATE "C" NOT NULL,
    platform    text COLLATE "C" NOT NULL,
    kind        text NOT NULL,
    size        bigint NOT NULL,
    sha256      text NOT NULL,
    envelope    bytea NOT NULL,
    created_at  timestamptz NOT NULL,
    added_at    timestamptz NOT NULL,
    PRIMARY KEY (version, platform)
);
CREATE TABLE release_chunks (
    version     text COLLATE "C" NOT NULL,
    platform    text COLLATE "C" NOT NULL,
    idx         integer NOT NULL,
    data        bytea NOT NULL,
    PRIMARY KEY (version, platform, idx),
    FOREIGN KEY (version, platform) REFERENCES releases (version, platform)
);
CREATE TABLE rollouts (
    id              text COLLATE "C" PRIMARY KEY,
    org_id          text COLLATE "C" NOT NULL,
    mode            text NOT NULL,
    version         text COLLATE "C" NOT NULL,
    site_ids        jsonb NOT NULL,
    edge_ids        jsonb NOT NULL,
    window_start    integer NOT NULL,
    window_minutes  integer NOT NULL,
    deadline        timestamptz,
    first_percent   integer NOT NULL,
    state           text NOT NULL,
    reason          text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    cancelled_at    timestamptz
);
CREATE INDEX rollouts_tenant ON rollouts (org_id, mode, created_at);
CREATE TABLE edge_updates (
    edge_id       text COLLATE "C" PRIMARY KEY REFERENCES edges (id),
    org_id        text COLLATE "C" NOT NULL,
    mode          text NOT NULL,
    version       text NOT NULL,
    slot          text NOT NULL,
    state         text NOT NULL,
    target        text NOT NULL,
    bytes         bigint NOT NULL,
    size          bigint NOT NULL,
    error         text NOT NULL,
    last_version  text NOT NULL,
    last_outcome  text NOT NULL,
    last_reason   text NOT NULL,
    last_at       timestamptz,
    polled_at     timestamptz NOT NULL
);
CREATE INDEX edge_updates_tenant ON edge_updates (org_id, mode);
