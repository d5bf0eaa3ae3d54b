-- Waiting reminders (issue 16; docs/decisions.md, "Waiting reminders
-- (issue 16)").
--
-- wait_limit_minutes is a site's wait limit: how long a visitor may wait
-- for someone before the kiosk highlights them and whoever they wait with
-- is reminded. Sites made before it get the default.
--
-- remind_from is cloud.RemindFrom of a visit, in microseconds: the start
-- of a wait that still owes a reminder (checked in, needs someone, not
-- reminded for this wait), NULL otherwise. The partial index holds only
-- the visits waiting now, so Store.OverdueWaits reads a handful of rows
-- whatever the number of visits. Rows written before it are filled from
-- their documents (waiting_since, else the check-in; julianday keeps
-- milliseconds, enough to find them: the reminder itself reads the
-- document).
--
-- (0024: 0020 to 0023 are left to changes made beside this one.)
ALTER TABLE sites ADD COLUMN wait_limit_minutes INTEGER NOT NULL DEFAULT 10;
ALTER TABLE visits ADD COLUMN remind_from INTEGER;
UPDATE visits SET remind_from = CAST(round((coalesce(julianday(json_extract(doc, '$.waiting_since')),
        julianday(json_extract(doc, '$.checked_in_at'))) - 2440587.5) * 86400000000.0) AS INTEGER)
    WHERE status = 'checked_in' AND json_extract(doc, '$.needs_someone') = 1
        AND coalesce(json_extract(doc, '$.waiting_since'), json_extract(doc, '$.checked_in_at')) IS NOT NULL;
CREATE INDEX visits_remind ON visits (remind_from, id) WHERE remind_from IS NOT NULL;
