-- Waiting reminders (issue 16; docs/decisions.md, "Waiting reminders
-- (issue 16)").
--
-- wait_limit_minutes is a site's wait limit: how long a visitor may wait
-- for someone before the kiosk highlights them and whoever they wait with
-- is reminded. Sites made before it get the default.
--
-- remind_from is cloud.RemindFrom of a visit: the start of a wait that
-- still owes a reminder (checked in, needs someone, not reminded for this
-- wait), NULL otherwise. The partial index holds only the visits waiting
-- now, so Store.OverdueWaits reads a handful of rows whatever the number
-- of visits. Rows written before it are filled from their documents
-- (waiting_since, else the check-in).
--
-- (0024: 0020 to 0023 are left to changes made beside this one.)
ALTER TABLE sites ADD COLUMN wait_limit_minutes integer NOT NULL DEFAULT 10;
ALTER TABLE visits ADD COLUMN remind_from timestamptz;
UPDATE visits SET remind_from = coalesce(doc->>'waiting_since', doc->>'checked_in_at')::timestamptz
    WHERE status = 'checked_in' AND (doc->>'needs_someone')::boolean
        AND coalesce(doc->>'waiting_since', doc->>'checked_in_at') IS NOT NULL;
CREATE INDEX visits_remind ON visits (remind_from, id) WHERE remind_from IS NOT NULL;
