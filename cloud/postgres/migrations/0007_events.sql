-- Events (issue 5): every state change integrators see, written in the
-- same transaction as the change. data is the object as the API returned
-- it at that moment: json, not jsonb, so it keeps the text byte for byte
-- (key order included) and a delivery sends exactly what GET /events
-- shows. The check keeps it an object, as SQLite's does.
CREATE TABLE events (
    org_id      text COLLATE "C" NOT NULL,
    mode        text NOT NULL,
    id          text COLLATE "C" NOT NULL,
    type        text COLLATE "C" NOT NULL,
    object_type text NOT NULL,
    object_id   text COLLATE "C" NOT NULL,
    request_id  text,
    data        json NOT NULL CHECK (json_typeof(data) = 'object'),
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (org_id, mode, id)
);
CREATE INDEX events_list ON events (org_id, mode, created_at DESC, id DESC);
CREATE INDEX events_type_list ON events (org_id, mode, type, created_at DESC, id DESC);
CREATE INDEX events_object_list ON events (org_id, mode, object_id, created_at DESC, id DESC);
