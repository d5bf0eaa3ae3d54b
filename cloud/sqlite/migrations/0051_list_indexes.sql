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
    (CASE json_extract(doc, '$.receiver.kind') WHEN 'person' THEN json_extract(doc, '$.receiver.person_id')
        WHEN 'team' THEN json_extract(doc, '$.receiver.team_id') ELSE 'reception' END),
    created_at DESC, id DESC) WHERE host_id IS NULL;

CREATE INDEX bookings_status_list ON bookings (org_id, mode, status, created_at DESC, id DESC);

CREATE INDEX people_site_list ON people (org_id, mode, site_id, created_at DESC, id DESC);
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
-- people). An FTS5 trigram index finds the rows holding every trigram of
-- q; the query then keeps only those where instr finds q, so the answer
-- is exactly what instr alone gave. The FTS rows have their own integer
-- rowids (a people rowid is not stable: VACUUM may renumber a table
-- without an INTEGER PRIMARY KEY), mapped to the person by *_search_rows,
-- kept by triggers.
CREATE VIRTUAL TABLE people_search USING fts5(search_name, search_email, tokenize = 'trigram case_sensitive 1');
CREATE TABLE people_search_rows (
    person_id TEXT PRIMARY KEY,
    row       INTEGER NOT NULL UNIQUE
) STRICT, WITHOUT ROWID;
INSERT INTO people_search (rowid, search_name, search_email) SELECT rowid, name_search, coalesce(email_fold, '') FROM people;
INSERT INTO people_search_rows (person_id, row) SELECT id, rowid FROM people;
CREATE TRIGGER people_search_insert AFTER INSERT ON people BEGIN
    INSERT INTO people_search (search_name, search_email) VALUES (new.name_search, coalesce(new.email_fold, ''));
    INSERT INTO people_search_rows (person_id, row) VALUES (new.id, last_insert_rowid());
END;
CREATE TRIGGER people_search_update AFTER UPDATE OF name_search, email_fold ON people
    WHEN old.name_search IS NOT new.name_search OR old.email_fold IS NOT new.email_fold BEGIN
    UPDATE people_search SET search_name = new.name_search, search_email = coalesce(new.email_fold, '')
        WHERE rowid = (SELECT row FROM people_search_rows WHERE person_id = new.id);
END;
CREATE TRIGGER people_search_delete AFTER DELETE ON people BEGIN
    DELETE FROM people_search WHERE rowid = (SELECT row FROM people_search_rows WHERE person_id = old.id);
    DELETE FROM people_search_rows WHERE person_id = old.id;
END;

CREATE VIRTUAL TABLE teams_search USING fts5(search_name, tokenize = 'trigram case_sensitive 1');
CREATE TABLE teams_search_rows (
    team_id TEXT PRIMARY KEY,
    row     INTEGER NOT NULL UNIQUE
) STRICT, WITHOUT ROWID;
INSERT INTO teams_search (rowid, search_name) SELECT rowid, name_search FROM teams;
INSERT INTO teams_search_rows (team_id, row) SELECT id, rowid FROM teams;
CREATE TRIGGER teams_search_insert AFTER INSERT ON teams BEGIN
    INSERT INTO teams_search (search_name) VALUES (new.name_search);
    INSERT INTO teams_search_rows (team_id, row) VALUES (new.id, last_insert_rowid());
END;
CREATE TRIGGER teams_search_update AFTER UPDATE OF name_search ON teams
    WHEN old.name_search IS NOT new.name_search BEGIN
    UPDATE teams_search SET search_name = new.name_search
        WHERE rowid = (SELECT row FROM teams_search_rows WHERE team_id = new.id);
END;
CREATE TRIGGER teams_search_delete AFTER DELETE ON teams BEGIN
    DELETE FROM teams_search WHERE rowid = (SELECT row FROM teams_search_rows WHERE team_id = old.id);
    DELETE FROM teams_search_rows WHERE team_id = old.id;
END;

-- gates (site_id) did not lead with the tenant nor hold the order.
CREATE INDEX gates_site_list ON gates (org_id, mode, site_id, created_at DESC, id DESC);
DROP INDEX gates_site;
