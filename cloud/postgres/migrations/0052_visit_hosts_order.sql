-- The host_id filter of the visits list read in order (issue 20;
-- docs/decisions.md, "Indexed lists and name search (issue 20)"): each
-- visit_hosts row carries its visit's created_at, so that the list of a
-- host's visits reads visit_hosts_person_list newest first and stops
-- after a page, instead of reading every visit of the host and sorting
-- them. A trigger copies it from the visit (which the foreign key makes
-- exist first, and whose created_at never changes), so the writes of
-- visits stay as they were.
ALTER TABLE visit_hosts ADD COLUMN created_at timestamptz;
UPDATE visit_hosts h SET created_at = v.created_at FROM visits v
    WHERE v.org_id = h.org_id AND v.mode = h.mode AND v.id = h.visit_id;
CREATE FUNCTION visit_hosts_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.created_at := (SELECT v.created_at FROM visits v WHERE v.org_id = NEW.org_id AND v.mode = NEW.mode AND v.id = NEW.visit_id);
    RETURN NEW;
END
$$;
CREATE TRIGGER visit_hosts_created BEFORE INSERT ON visit_hosts FOR EACH ROW EXECUTE FUNCTION visit_hosts_created();
CREATE INDEX visit_hosts_person_list ON visit_hosts (org_id, mode, person_id, created_at DESC, visit_id DESC);
-- visit_hosts_person (org_id, mode, person_id, visit_id) is served by the
-- new index.
DROP INDEX visit_hosts_person;
