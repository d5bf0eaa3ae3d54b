-- The audit trail: who did what that must be accountable later, written in
-- the same transaction as the change it records.
--
-- actor_id and request_id are NULL when there is none. object_id is not a
-- reference: the trail outlives what it names.
--
-- detail is json, not jsonb, like visits' doc: a record keeps the text as
-- it was written, and nothing queries inside it. The check keeps it an
-- object, as SQLite's does.

CREATE TABLE audit_events (
    org_id      text COLLATE "C" NOT NULL,
    mode        text NOT NULL,
    id          text COLLATE "C" NOT NULL,
    action      text COLLATE "C" NOT NULL,
    actor_kind  text NOT NULL,
    actor_id    text COLLATE "C",
    object_type text NOT NULL,
    object_id   text COLLATE "C" NOT NULL,
    request_id  text,
    detail      json NOT NULL CHECK (json_typeof(detail) = 'object'),
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX audit_events_list ON audit_events (org_id, mode, created_at DESC, id DESC);
CREATE INDEX audit_events_action_list ON audit_events (org_id, mode, action, created_at DESC, id DESC);
CREATE INDEX audit_events_object_list ON audit_events (org_id, mode, object_id, created_at DESC, id DESC);
