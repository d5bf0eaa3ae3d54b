-- The host_id filter of the visits list read in order (issue 20;
-- docs/decisions.md, "Indexed lists and name search (issue 20)"): each
-- visit_hosts row carries its visit's created_at, so that the list of a
-- host's visits reads visit_hosts_person_list newest first and stops
-- after a page, instead of reading every visit of the host and sorting
-- them. A trigger copies it from the visit (which the foreign key makes
-- exist first, and whose created_at never changes), so the writes of
-- visits stay as they were.
ALTER TABLE visit_hosts ADD COLUMN created_at INTEGER;
UPDATE visit_hosts SET created_at = (SELECT v.created_at FROM visits v WHERE v.id = visit_hosts.visit_id);
CREATE TRIGGER visit_hosts_created AFTER INSERT ON visit_hosts BEGIN
    UPDATE visit_hosts SET created_at = (SELECT v.created_at FROM visits v WHERE v.id = new.visit_id)
        WHERE visit_id = new.visit_id AND person_id = new.person_id;
END;
CREATE INDEX visit_hosts_person_list ON visit_hosts (person_id, created_at DESC, visit_id DESC);
-- visit_hosts_person (person_id, visit_id) is served by the new index.
DROP INDEX visit_hosts_person;
