-- The serve processes sharing the database, as each last said (issue 19;
-- docs/decisions.md, "Running replicas (issue 19)"): its instance ID, the
-- per-plan rate limits it enforces against the shared counters, and when
-- it last said so. A process refuses to start when a live one enforces
-- other limits.
--
-- (0050: 0045 to 0049 are left to changes made beside this one.)
CREATE TABLE replicas (
    id          text PRIMARY KEY,
    rate_limits text NOT NULL,
    seen_at     timestamptz NOT NULL
);
CREATE INDEX replicas_seen ON replicas (seen_at);
