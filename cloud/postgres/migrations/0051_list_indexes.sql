-- Every list's filters served by an index (issue 20; docs/decisions.md,
-- "Indexed lists and name search (issue 20)"). Each index leads with the
-- tenant (org_id, mode), then the filter's column, then the list's order
-- (newest first), so that ORDER BY ... LIMIT reads one page's rows and
-- stops. The test TestListPlans (storetest.ListCalls) holds each list and
-- filter to the index named here.
CREATE INDEX visits_status_list ON visits (org_id, mode, status, created_at DESC, id DESC);
CREATE INDEX visits_type_list ON visits (org_id, mode, type, created_at DESC, id DESC);
-- waiting_with: the receiver of a visit nobody has taken. The expression
-- is the store's visitWaitingWith, character for character.
CREATE INDEX visits_waiting_list ON visits (org_id, mode,
    (CASE doc->'receiver'->>'kind' WHEN 'person' THEN doc->'receiver'->>'person_id'
        WHEN 'team' THEN doc->'receiver'->>'team_id' ELSE 'reception' END),
    created_at DESC, id DESC) WHERE host_id IS NULL;

CREATE INDEX bookings_status_list ON bookings (org_id, mode, status, created_at DESC, id DESC);

CREATE INDEX people_active_list ON people (org_id, mode, active, created_at DESC, id DESC);
CREATE INDEX teams_site_list ON teams (org_id, mode, site_id, created_at DESC, id DESC);

CREATE INDEX attendance_events_person_list ON attendance_events (org_id, mode, person_id, occurred_at DESC, id DESC);
CREATE INDEX attendance_events_site_list ON attendance_events (org_id, mode, site_id, occurred_at DESC, id DESC);

CREATE INDEX timesheets_period_list ON timesheets (org_id, mode, period_id, created_at DESC, id DESC);
CREATE INDEX timesheets_person_list ON timesheets (org_id, mode, person_id, created_at DESC, id DESC);
CREATE INDEX timesheets_status_list ON timesheets (org_id, mode, status, created_at DESC, id DESC);
-- timesheets_person (org_id, mode, person_id) is a prefix of
-- timesheets_person_list.
DROP INDEX timesheets_person;

CREATE INDEX webhook_deliveries_status_list ON webhook_deliveries (endpoint_id, status, created_at DESC, event_id DESC);
-- webhook_deliveries_failed (endpoint_id, created_at) WHERE status =
-- 'failed', which a resend of the failed since a time read, is a part of
-- webhook_deliveries_status_list, which serves the resend as well.
DROP INDEX webhook_deliveries_failed;

-- Name search (q): a substring of name_search (and of email_fold for
-- people), asked as LIKE '%q%' with q's wildcards escaped, which a
-- pg_trgm GIN index serves. pg_trgm is installed once per database, in
-- public (its objects are named schema-qualified here), so every schema
-- of the database (each test's, each store's) shares it; it is a trusted
-- extension, which a database owner may create.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
-- fastupdate off: a row is indexed as it is written, not queued in the
-- index's pending list, which every search reads whole until a vacuum
-- empties it (8.7 ms instead of 0.05 ms for a search of 20,000 people
-- inserted after the index was made). People and teams are written
-- seldom and searched often.
CREATE INDEX people_name_trgm ON people USING gin (name_search public.gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX people_email_trgm ON people USING gin (email_fold public.gin_trgm_ops) WITH (fastupdate = off);
CREATE INDEX teams_name_trgm ON teams USING gin (name_search public.gin_trgm_ops) WITH (fastupdate = off);
