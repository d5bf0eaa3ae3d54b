-- The audit trail: who did what that must be accountable later, written in
-- the same transaction as the change it records.
--
-- actor_id and request_id are NULL when there is none. detail is the
-- event's JSON object as written, byte for byte; the check keeps it one,
-- as PostgreSQL's json column and check do. object_id is not a reference:
-- the trail outlives what it names.

CREATE TABLE audit_events (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    action      TEXT NOT NULL,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT,
    object_type TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    request_id  TEXT,
    detail      TEXT NOT NULL CHECK (json_valid(detail) AND json_type(detail) = 'object'),
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_events_list ON audit_events (org_id, mode, created_at DESC, id DESC);
CREATE INDEX audit_events_action_list ON audit_events (org_id, mode, action, created_at DESC, id DESC);
CREATE INDEX audit_events_object_list ON audit_events (org_id, mode, object_id, created_at DESC, id DESC);
