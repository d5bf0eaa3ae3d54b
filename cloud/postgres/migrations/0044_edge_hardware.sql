-- Hardware configured from the cloud (issue 17; docs/decisions.md,
-- "Hardware from the cloud (issue 17)").
--
-- An edge's hardware document (shared/hardware: its gates' readers,
-- relays, door sensors and when_stale, its kiosk's label and printer) as
-- JSON, NULL until PATCH /v1/edges/{edge_id} sets one; and what the
-- appliance's last online status said of applying it (NULL: nothing
-- wrong, or an appliance that does not say).
--
-- (0044: 0041 to 0043 are left to changes made beside this one.)
ALTER TABLE edges ADD COLUMN hardware text;
ALTER TABLE edges ADD COLUMN hardware_error text;
