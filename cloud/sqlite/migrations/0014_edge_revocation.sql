-- Edge revocation (issue 15): a revoked edge's credentials no longer
-- connect, its facts, statuses and resync requests are refused, and the
-- embedded broker disconnects it. A site has at most one edge that is not
-- revoked (docs/decisions.md, "One appliance per site"); that rule is kept
-- by CreateEdge rather than a unique index, so that a database from before
-- it, whose site may have two edges, still upgrades: such a site is listed
-- by svc-cloud edges list until one of them is revoked.
--
-- (0014: 0011 to 0013 are left to changes made beside this one.)
ALTER TABLE edges ADD COLUMN revoked_at INTEGER;
CREATE INDEX edges_site_active ON edges (org_id, mode, site_id) WHERE revoked_at IS NULL;
