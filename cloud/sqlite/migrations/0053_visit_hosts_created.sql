-- A visit's hosts are inserted with its created_at (issue 20): the
-- trigger of migration 0052 read the visit and rewrote each new
-- visit_hosts row and its index entry a second time, inside the writer's
-- transaction, on every visit made. The one writer of the table
-- (writeHosts) now sets the column itself, from the visit's stored
-- creation time, which never changes.
DROP TRIGGER visit_hosts_created;
