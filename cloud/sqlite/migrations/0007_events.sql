-- Events (issue 5): every state change integrators see, written in the
-- same transaction as the change. data is the object as the API returned
-- it at that moment, as written; the check keeps it an object.
CREATE TABLE events (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    type        TEXT NOT NULL,
    object_type TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    request_id  TEXT,
    data        TEXT NOT NULL CHECK (json_valid(data) AND json_type(data) = 'object'),
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX events_list ON events (org_id, mode, created_at DESC, id DESC);
CREATE INDEX events_type_list ON events (org_id, mode, type, created_at DESC, id DESC);
CREATE INDEX events_object_list ON events (org_id, mode, object_id, created_at DESC, id DESC);
