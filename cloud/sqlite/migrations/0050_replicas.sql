-- The serve processes sharing the database, as each last said (issue 19;
-- docs/decisions.md, "Running replicas (issue 19)"): its instance ID, the
-- per-plan rate limits it enforces against the shared counters, and when
-- it last said so. A process refuses to start when a live one enforces
-- other limits. (One process owns a SQLite file, so it has one row, but
-- the store keeps the contract.)
--
-- (0050: 0045 to 0049 are left to changes made beside this one.)
CREATE TABLE replicas (
    id          TEXT PRIMARY KEY,
    rate_limits TEXT NOT NULL,
    seen_at     INTEGER NOT NULL
) STRICT;
CREATE INDEX replicas_seen ON replicas (seen_at);
